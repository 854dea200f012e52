// `manifold gc`: collects the cache entries of containers whose recorded network namespace no
// longer exists (left behind when a runtime never sent DEL, for example after a node crash). Such
// an entry still holds exactly what DEL needs to release the container's IP reservations, so each
// one is first DELeted without a namespace (every delegate of every attachment, in reverse, with
// its cached config: IPAM lets go) and removed only when every DEL succeeded; an entry whose DEL
// failed is kept with the attachments still to release. Each entry is handled under the
// container's cache lock, so a concurrent CNI call for it is never disturbed. `--dry-run` prints
// the plan (what would be DELeted and removed) and changes nothing.
#pragma once

#include <string>

namespace manifold::plugin {

/// What to collect.
struct GcOptions {
  std::string cni_dir = "/var/lib/cni/manifold";  ///< the cache directory (cniDir)
  std::string bin_dir = "/opt/cni/bin";           ///< searched for delegates before each entry's CNI_PATH
  int delegate_timeout_s = 60;                    ///< bound of each delegate DEL
  bool dry_run = false;                           ///< report the plan only
};

/// Prints one line per collected (or collectable) entry and a summary on stdout. Returns 0, or 1
/// when an entry could not be examined, DELeted or removed.
int run_gc(const GcOptions& options);

}  // namespace manifold::plugin
