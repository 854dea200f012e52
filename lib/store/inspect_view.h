// Rendering of cache records for `manifold inspect`: a table of every cached container, and for one
// container its attachments (network name, interface, IPs, MAC, gateways from the cached result)
// and scoping state, as aligned text for people or as JSON for scripts. Delegate configs are shown
// with secrets redacted. Pure: the caller loads the records and says whether each netns exists.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "store/cache.h"
#include "util/json.h"

namespace manifold::store {

/// One row of the entry list: a loaded record, or the error that prevented loading it.
struct ContainerEntry {
  EntryKey key;                           ///< the cache entry's key
  std::optional<ContainerRecord> record;  ///< nullopt when the entry could not be loaded
  std::string error;                      ///< why it could not be loaded
  bool netns_exists = false;              ///< whether the recorded netns path exists now
};

/// JSON for one entry: containerId, network, netns, netnsExists, ifname, cniVersion, attachments (name,
/// ifname, clusterNetwork, ips, mac, gateways, config (parsed, redacted), result (parsed), scoping
/// = the attachment's extra state), and the container-level extra state.
Json container_json(const ContainerRecord& record, bool netns_exists);

/// JSON for the list: an array of {containerId, network, ifname, netns, netnsExists, cniVersion,
/// attachments: [{name, ifname, ips}]} or {containerId, network, ifname, error}.
Json list_json(const std::vector<ContainerEntry>& entries);

/// Aligned text table of every entry (container ID shortened to 12 characters, network, CNI_IFNAME);
/// "no containers in <dir>" when empty.
std::string list_table(const std::vector<ContainerEntry>& entries, const std::string& cache_dir);

/// Human-readable view of one container: header lines, an attachment table, then each
/// attachment's scoping state and the container-level state as indented JSON.
std::string container_text(const ContainerRecord& record, bool netns_exists);

/// Renders rows as columns separated by two spaces, each as wide as its widest cell.
std::string render_table(const std::vector<std::vector<std::string>>& rows);

}  // namespace manifold::store
