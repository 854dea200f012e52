// UTF-8 validity for untrusted text: the length of one well-formed sequence (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF) and a sanitiser that makes any byte string valid
// UTF-8, so a hostile value repeated in a message can still be rendered as JSON.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace manifold::util {

/// Length (1-4) of the well-formed UTF-8 sequence starting at s[i], or 0 when none starts there.
/// Requires i < s.size().
std::size_t utf8_length(std::string_view s, std::size_t i);

/// `text` with every byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD.
std::string sanitize_utf8(std::string_view text);

}  // namespace manifold::util
