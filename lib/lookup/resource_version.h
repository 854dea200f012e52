// The resourceVersion of an API object as a number the node agent's caches can compare. Kubernetes
// documents resourceVersions as opaque strings; in practice they are the revision of the etcd the
// object is stored in, a decimal integer that only grows, so two of them taken from the same etcd
// order the writes they stand for. The caches rely on that only where it proves something (a cached
// copy is at least as new as a write): a resourceVersion that is not a plain decimal integer proves
// nothing, and the lookup it was for goes to the API server.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace manifold::lookup {

/// `rv` as a number: 1 to 19 ASCII digits (no sign, no space); nothing otherwise.
std::optional<std::uint64_t> parse_resource_version(std::string_view rv);

}  // namespace manifold::lookup
