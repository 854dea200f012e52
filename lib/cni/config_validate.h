// Offline validation of configs for `manifold validate`: unlike parse_meta_config, which stops at
// the first error (right for a CNI call), this walks the whole config and reports every problem with
// its JSON path (`$.delegates[1].type: must be a non-empty string`), so an operator can fix a config
// in one pass. It covers the meta-plugin config (every Multus key plus manifold's), inline delegate
// confs and conflists, a conflist that wraps the manifold plugin, and plain network configs. The
// scoping keys (`mesh`, `sourceRouting`) are checked through a callback so this module does not
// depend on the firewall/netlink modules that own their semantics.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "util/json.h"

namespace manifold::cni {

/// One finding of a validation.
struct Problem {
  std::string path;     ///< JSON path, "$" for the document, e.g. "$.delegates[1].type"
  std::string message;  ///< what is wrong, e.g. "must be a non-empty string"
  bool warning = false; ///< true for advice that does not make the config invalid
};

/// Everything found in one document.
using Problems = std::vector<Problem>;

/// Checks one scoping object: `key` is "mesh" or "sourceRouting", `value` its JSON, `path` its
/// JSON path. Appends problems to `out`.
using ScopingChecker = std::function<void(std::string_view key, const Json& value, const std::string& path,
                                          Problems& out)>;

/// `base` + ".key", or `base` + "[\"key\"]" when the key is not a plain identifier.
std::string json_path_key(const std::string& base, std::string_view key);

/// `base` + "[index]".
std::string json_path_index(const std::string& base, std::size_t index);

/// "path: message" (and a "warning: " prefix for warnings).
std::string format_problem(const Problem& problem);

/// True when `problems` holds at least one non-warning entry.
bool has_errors(const Problems& problems);

/// True when `type` is a usable plugin type: a non-empty bare file name (no '/', NUL, "." or "..")
/// of at most 255 bytes.
bool is_plain_plugin_type(std::string_view type);

/// Validates a network config as given to a delegate (conf or conflist) at `path`: object shape,
/// cniVersion (supported), name, type (plain file name), plugins, ipam.type, capabilities, and the
/// scoping keys through `scoping` (when set).
void validate_network_config(const Json& config, const std::string& path, Problems& out,
                             const ScopingChecker& scoping = nullptr);

/// Validates a manifold/Multus meta-plugin config object at `path`: every known key's type and
/// range, logLevel's value, logOptions, delegates (each a network config), that delegates or
/// clusterNetwork is set, and the top-level scoping defaults. `in_list` is true when the object is
/// a plugin of a conflist (cniVersion and name then come from the list). Unknown keys are allowed
/// (Multus ignores them) but get a warning when they differ from a known key only in case.
void validate_meta_config(const Json& config, const std::string& path, Problems& out,
                          const ScopingChecker& scoping = nullptr, bool in_list = false);

/// Validates a whole config file's JSON: a meta-plugin conf, a conflist whose plugins include the
/// manifold (or multus) plugin, or a plain network conf/conflist. Problems use "$" as the root.
Problems validate_config_document(const Json& document, const ScopingChecker& scoping = nullptr);

/// Parses `text` (a config file's contents) and validates it; a syntax error becomes one problem at
/// "$" naming the byte offset.
Problems validate_config_text(std::string_view text, const ScopingChecker& scoping = nullptr);

}  // namespace manifold::cni
