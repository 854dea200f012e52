// The built-in `passthru` plugin. Multus's `auxiliaryCNIChainName` appends a conflist whose first
// plugin is `{"type": "passthru", "name": "passthru-cni"}`, so that the chained plugins loaded
// after it get a prevResult; Multus ships a `passthru` binary for it. When no binary of that name
// is installed, manifold answers for it itself, the same way: ADD prints the prevResult it was
// given (or an empty result of the config's cniVersion), every other verb succeeds doing nothing.
#pragma once

#include <string>
#include <string_view>

namespace manifold::exec {

/// The type answered from inside manifold when its binary is missing.
inline constexpr std::string_view kPassthruType = "passthru";

/// True for a type with a built-in fallback.
bool is_builtin_plugin(std::string_view type);

/// Runs the built-in passthru for one call: `command` is CNI_COMMAND, `config` the plugin's stdin.
/// Returns what the plugin prints. Throws CniError(Decoding) when an ADD's config is not a JSON
/// object or its prevResult is not an object.
std::string run_builtin_passthru(const std::string& command, const std::string& config);

}  // namespace manifold::exec
