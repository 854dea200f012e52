// ASCII case folding for the protocol text that is case-insensitive by definition (HTTP header
// names and values such as "chunked", Go's encoding/json field matching). Locale-independent and
// byte-exact: only A-Z and a-z are folded, every other byte must match exactly.
#pragma once

#include <string_view>

namespace manifold::util {

/// `c` with A-Z mapped to a-z.
constexpr char ascii_lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

/// True when `a` and `b` are equal ignoring the case of ASCII letters.
constexpr bool iequals_ascii(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  return true;
}

}  // namespace manifold::util
