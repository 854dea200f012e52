// Implementation of the resourceVersion parse: digits only, bounded length (no overflow).
#include "lookup/resource_version.h"

namespace manifold::lookup {

std::optional<std::uint64_t> parse_resource_version(std::string_view rv) {
  if (rv.empty() || rv.size() > 19) return std::nullopt;
  std::uint64_t out = 0;
  for (char c : rv) {
    if (c < '0' || c > '9') return std::nullopt;
    out = out * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return out;
}

}  // namespace manifold::lookup
