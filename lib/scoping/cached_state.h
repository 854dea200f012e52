// The one error of decoding the scoping state cached with an attachment (source routing, mesh
// rules, the scoping record that holds them): a cache entry is untrusted input, so every malformed
// field is a CNI decoding error that names the state, the field and what is wrong with it.
#pragma once

#include <string>
#include <string_view>

namespace manifold::scoping {

/// Throws CniError(Decoding) "invalid cached <kind> state: <field> <why>".
[[noreturn]] void throw_bad_cached_state(std::string_view kind, const std::string& field, const std::string& why);

}  // namespace manifold::scoping
