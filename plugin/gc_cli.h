// `manifold gc`: removes cache entries of containers whose recorded network namespace no longer
// exists (left behind when a runtime never sent DEL, for example after a node crash). Each entry is
// removed under the container's cache lock, so a concurrent CNI call for it is never disturbed.
// `--dry-run` only prints what would be removed.
#pragma once

#include <string>

namespace manifold::plugin {

/// What to collect.
struct GcOptions {
  std::string cni_dir = "/var/lib/cni/manifold";  ///< the cache directory (cniDir)
  bool dry_run = false;                          ///< report only
};

/// Prints one line per removed (or removable) entry and a summary on stdout. Returns 0, or 1 when
/// an entry could not be examined or removed.
int run_gc(const GcOptions& options);

}  // namespace manifold::plugin
