// Reading the `mesh` configuration of one attachment from JSON. Three layers feed it — the
// meta-plugin's top-level `mesh` object (defaults), the delegate's own `mesh` object (the NAD), and
// the pod's selection-element `cni-args` (`args.cni.mesh`) — and per key the later layer wins. The
// merged object is then validated field by field; every bad field is CniError(InvalidConfig) naming
// it (`mesh.inboundPort`, …), so a typo never silently turns into a redirect loop. The keys and
// their defaults are listed in firewall/mesh_config.h.
#pragma once

#include <optional>
#include <string_view>

#include "firewall/mesh_config.h"
#include "util/json.h"

namespace manifold::scoping {

/// Merges the three `mesh` layers (each an object or null/absent) key by key — later wins — and
/// validates the result. Throws CniError(InvalidConfig) naming the first bad field.
firewall::MeshConfig merge_mesh_layers(const Json& top, const Json& delegate, const Json& cni_args);

/// Validates one already-merged `mesh` object (null = all defaults). Throws like merge_mesh_layers.
firewall::MeshConfig parse_mesh_config(const Json& mesh);

/// Parses one port-list entry text, "N" or "N-M" (1-65535, N ≤ M); nullopt when malformed.
std::optional<firewall::PortRange> parse_port_range(std::string_view text);

}  // namespace manifold::scoping
