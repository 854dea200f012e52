// What Multus thin cached for a container, read so that a node moved from Multus to manifold DELs
// the pods Multus attached as Multus would have: each delegate gets the DEL of the exact config it
// got its ADD with, under the interface name Multus gave it, with the result and CNI_ARGS libcni
// cached for it. Multus keeps, in its cniDir (default /var/lib/cni/multus), one scratch file per
// container — `<cniDir>/<containerID>`, a JSON list of its delegates, the cluster network first,
// each with its raw config as base64 `Bytes`, its status `Name` and optional `ifnameRequest` and
// `deviceID` — and libcni's result cache of each delegate,
// `<cniDir>/results/<network name>-<containerID>-<ifname>` (`cniCacheV1`: `result`, `cniArgs`).
// Both are untrusted input: a wrongly shaped file is an error naming it, never a crash.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cni/skel.h"
#include "engine/services.h"
#include "store/record.h"

namespace manifold::engine {

/// What Multus cached for one container, as the record manifold's DEL replays.
struct MultusEntry {
  /// The container, the runtime's netns and CNI_IFNAME, and one attachment per Multus delegate in
  /// Multus's order (the cluster network first), with its config, result, CNI_ARGS and device-info
  /// file.
  store::ContainerRecord record;
  std::string scratch_file;               ///< `<cniDir>/<containerID>`
  std::vector<std::string> result_files;  ///< libcni's result files of the delegates that have one
};

/// Reads Multus's cache in `multus_dir` for the DEL `inv`. nullopt when `multus_dir` is "" or holds
/// no scratch file for the container. Throws CniError(Decoding) naming the file when the scratch
/// file cannot be read or is not a list of delegates with a usable config each. A result file that
/// is missing or unreadable leaves that delegate without a cached result (logged), as libcni's DEL
/// does. `device_info_dir` is manifold's deviceInfoDir: delegates Multus gave a device get the
/// device-info file Multus named for them, so the DEL removes it.
std::optional<MultusEntry> read_multus_entry(const Services& services, const std::string& multus_dir,
                                             const cni::Invocation& inv, const std::string& device_info_dir);

/// Removes the files of `entry` (result files first, the scratch file last, as Multus's own DEL
/// leaves the scratch file for a retry until its delegates are done); failures are logged.
void remove_multus_entry(const Services& services, const MultusEntry& entry) noexcept;

}  // namespace manifold::engine
