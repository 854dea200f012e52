// Delegate config building, the way libcni does it. Each plugin gets the runtimeConfig keys for
// the capabilities it declares (and nothing else), a conflist's plugins get the list's "name" and
// "cniVersion" injected, and prevResult is threaded through a chain. The prepared delegate config
// is what manifold caches; DEL and CHECK replay those cached bytes, adding only prevResult.
#pragma once

#include <string>

#include "util/json.h"

namespace manifold::cni {

/// A copy of `plugin` with "runtimeConfig" set to the entries of `runtime_config` whose key the
/// plugin declares as a true capability. When no key matches, the plugin is returned unchanged.
Json inject_runtime_config(const Json& plugin, const Json& runtime_config);

/// Prepares a delegate (conf or conflist) for execution and caching: runtimeConfig injected per
/// plugin, and a missing "cniVersion" filled with `default_version`.
Json prepare_delegate(const Json& delegate, const Json& runtime_config, const std::string& default_version);

/// The stdin of one plugin of a conflist: the plugin object with the list's name and cniVersion
/// injected, and prevResult when given (`prev_result` may be null Json for none).
std::string chain_plugin_stdin(const Json& plugin, const std::string& list_name, const std::string& list_version,
                               const Json& prev_result);

/// Inserts `"prevResult": <prev_result_text>` as the last key of the JSON object text `conf_text`,
/// leaving every other byte as it was (DEL/CHECK replay of a cached single-plugin config). An
/// existing prevResult key is replaced by re-serialisation instead. Throws CniError(Decoding) when
/// `conf_text` is not an object.
std::string with_prev_result(const std::string& conf_text, const std::string& prev_result_text);

/// The cniVersion of a delegate config ("" if absent).
std::string delegate_version(const Json& delegate);

/// True when `version` (a cniVersion string) is at least `major.minor`.
bool version_at_least(const std::string& version, int major, int minor);

}  // namespace manifold::cni
