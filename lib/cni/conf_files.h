// Network configs on disk. `clusterNetwork`, `defaultNetworks` and NADs with an empty spec name a
// network that lives in a file: by its "name" inside the .conf/.conflist/.json files of confDir, by
// a file path, or by a directory (its first config file). This module finds and loads them.
#pragma once

#include <optional>
#include <string>

#include "util/json.h"

namespace manifold::cni {

/// A network config read from a file.
struct NetworkFile {
  std::string path;  ///< the file it came from
  Json config;       ///< the conf or conflist, shape-validated
};

/// Largest config file manifold reads.
inline constexpr size_t kMaxConfFileBytes = 1024 * 1024;

/// The first .conf/.conflist/.json file in `dir` (lexical order) whose "name" equals `name`.
/// Unreadable or invalid files are skipped with a log line. nullopt when none matches or the
/// directory does not exist.
std::optional<NetworkFile> find_network_by_name(const std::string& dir, const std::string& name);

/// Loads a network from a file path, or from the first config file of a directory. Throws
/// CniError(NetworkNotFound) when it does not exist and CniError(InvalidConfig) when it is invalid.
NetworkFile load_network_path(const std::string& path);

/// The plugin configs of a network's plugin directory (the CNI spec's "path segment with the same
/// name as the network"): every .conf/.json file of `dir` in lexical order, each a plugin object
/// with a "type". Empty when the directory does not exist. Throws CniError(InvalidConfig) naming a
/// file that is not such an object.
std::vector<Json> load_plugin_dir(const std::string& dir);

/// Resolves a clusterNetwork/defaultNetworks value without Kubernetes: a value containing '/' is a
/// path (file or directory); otherwise a network name looked up in `conf_dir`. Throws
/// CniError(NetworkNotFound) naming the value and the directory when nothing matches.
NetworkFile resolve_file_network(const std::string& value, const std::string& conf_dir);

}  // namespace manifold::cni
