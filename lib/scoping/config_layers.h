// The three configuration layers of a per-attachment setting (network scoping's `sourceRouting`
// and `mesh`): the meta-plugin config as defaults, the attachment's network config, then the pod's
// selection element `cni-args`. Each layer is an object or absent (null); per key the later layer
// wins. One merge serves every such setting so they layer exactly alike.
#pragma once

#include <string_view>

#include "util/json.h"

namespace manifold::scoping {

/// Merges the layers of setting `key` (named in errors) key by key, later layers winning; a null
/// layer is empty. A layer that is not an object is CniError InvalidConfig naming `key` and the layer
/// ("meta-plugin config", "network config" or "pod cni-args").
Json merge_config_layers(std::string_view key, const Json& top, const Json& delegate, const Json& cni_args);

}  // namespace manifold::scoping
