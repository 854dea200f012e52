// The one rule for Linux interface names that manifold accepts anywhere — CNI_IFNAME, an
// annotation's `interface`, a cache entry's key, a chain name built from an interface: 1-15
// characters of [A-Za-z0-9_.-] and neither "." nor "..". Stricter than the kernel (which takes any
// byte but '/', ':' and white space) because the names end up in file names, iptables arguments and
// messages.
#pragma once

#include <cstddef>
#include <string_view>

namespace manifold::util {

/// Longest interface name the kernel accepts (IFNAMSIZ - 1).
inline constexpr std::size_t kMaxIfnameLength = 15;

/// True if `name` is 1-15 characters of [A-Za-z0-9_.-] and not "." or "..".
bool is_valid_ifname(std::string_view name) noexcept;

}  // namespace manifold::util
