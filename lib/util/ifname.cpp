// Implementation of the interface-name rule.
#include "util/ifname.h"

#include <algorithm>

namespace manifold::util {

bool is_valid_ifname(std::string_view name) noexcept {
  if (name.empty() || name.size() > kMaxIfnameLength || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
  });
}

}  // namespace manifold::util
