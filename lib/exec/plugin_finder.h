// Locating a delegate plugin binary. A delegate's "type" comes from operator- or pod-controlled
// config, so it is validated as a bare file name before it is joined to a search directory: no path
// separators, no "..", no NUL. Only binDir and CNI_PATH directories are searched, in order. One
// type has a built-in fallback: `passthru`, the first plugin of Multus's auxiliary chain (see
// exec/builtin_passthru.h), answers from inside manifold when no binary of that name is installed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace manifold::exec {

/// Longest accepted plugin type (NAME_MAX).
inline constexpr size_t kMaxPluginTypeLength = 255;

/// Throws CniError(InvalidConfig) unless `type` is a bare file name: non-empty, at most 255 bytes,
/// no '/', no NUL, and no ".." anywhere (which also excludes "." and "..").
void validate_plugin_type(std::string_view type);

/// Returns `dir/type` for the first directory in `dirs` holding a regular file of that name that we
/// may execute. Throws CniError(InvalidConfig) for an invalid type and CniError(DelegateFailed,
/// "failed to find plugin \"x\" in path [d1 d2]") when no directory has it. Empty dirs are skipped.
std::string find_plugin(std::string_view type, const std::vector<std::string>& dirs);

/// `dir/type` as find_plugin() finds it, or "" when no directory has it and `type` has a built-in
/// fallback (is_builtin_plugin). Throws like find_plugin() otherwise.
std::string find_plugin_or_builtin(std::string_view type, const std::vector<std::string>& dirs);

/// Splits a CNI_PATH value on ':' and drops empty elements.
std::vector<std::string> split_cni_path(std::string_view value);

}  // namespace manifold::exec
