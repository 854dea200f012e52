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

#include "cni/config_reader.h"
#include "util/json.h"

namespace manifold::cni {

/// Checks one object the modules above cni read: `key` is "mesh", "sourceRouting" or
/// "multiNetworkPolicy", `value` its JSON, `path` its JSON path. Appends problems to `out`.
using ScopingChecker =
    std::function<void(std::string_view key, const Json& value, const std::string& path, Problems& out)>;

/// "path: message" (and a "warning: " prefix for warnings).
std::string format_problem(const Problem& problem);

/// True when `problems` holds at least one non-warning entry.
bool has_errors(const Problems& problems);

/// True when `type` is a usable plugin type: a non-empty bare file name (no '/', NUL, "." or "..")
/// of at most 255 bytes.
bool is_plain_plugin_type(std::string_view type);

/// Checks a `cniVersion` value at `path`: a string naming a supported version.
void validate_cni_version(const Json& value, const std::string& path, Problems& out);

/// Checks a `capabilities` object at `path`: an object whose values are booleans.
void validate_capabilities(const Json& value, const std::string& path, Problems& out);

/// Validates a network config as given to a delegate (conf or conflist) at `path`: object shape,
/// cniVersion (supported), name, type (plain file name), plugins, ipam.type, capabilities, and the
/// scoping keys through `scoping` (when set).
void validate_network_config(const Json& config, const std::string& path, Problems& out,
                             const ScopingChecker& scoping = nullptr);

/// Validates a manifold/Multus meta-plugin config object at `path` against the meta-config schema
/// (cni/meta_schema.h, the one parse_meta_config walks): every known key's type and range,
/// logLevel's value, logOptions and apiTimeouts, delegates (each a network config), that delegates
/// or clusterNetwork is set, and the top-level scoping defaults. `in_list` is true when the object is
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
