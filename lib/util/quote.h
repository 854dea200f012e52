// Printable, bounded renderings of untrusted text for error and log messages: a hostile value (a
// pod annotation, a NAD, a cache file) can be long and hold control characters or invalid UTF-8,
// and a message repeating it must stay one readable line of bounded length.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "util/json.h"

namespace manifold::util {

/// The first `max` bytes of `text` with every byte outside printable ASCII replaced by '?', and
/// "..." appended when it was cut.
std::string printable(std::string_view text, std::size_t max = 64);

/// `text` in double quotes for a message: printable ASCII other than '"' and '\\' kept, every other
/// byte written as \xNN, and only the first `max` bytes shown ("..." inside the quotes when cut).
std::string quote_bytes(std::string_view text, std::size_t max = 64);

/// The two-character escape that JSON and Go's %q share for `c` (\", \\, \b, \f, \n, \r, \t), or
/// nullptr when `c` has none.
const char* short_escape(unsigned char c);

/// `bytes` as lower-case hex, two digits per byte (digests, serialised TLS sessions).
std::string hex_lower(std::string_view bytes);

/// `text` percent-encoded: ASCII letters and digits and the characters of `keep` stay as they are,
/// every other byte becomes %XX (upper-case hex). Used for cache file names and URL query values.
std::string percent_encode(std::string_view text, std::string_view keep);

/// A JSON value rendered for a message: a string as "\"" + printable(text, max) + "\"", anything
/// else as printable(its compact JSON text, max) (invalid UTF-8 replaced).
std::string printable_json(const Json& value, std::size_t max = 64);

}  // namespace manifold::util
