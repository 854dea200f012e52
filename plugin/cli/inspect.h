// `manifold inspect [containerID]`: shows what the per-container cache under cniDir holds — every
// container as a table, or one container's attachments, interface names, results and scoping state
// — as text or JSON. Read-only: it takes no lock and creates nothing.
#pragma once

#include <string>

namespace manifold::plugin {

/// What to show.
struct InspectOptions {
  std::string container_id;                       ///< "" lists every container; a unique prefix is accepted
  std::string cni_dir = "/var/lib/cni/manifold";  ///< the cache directory (cniDir)
  bool json = false;                              ///< print JSON instead of a table
};

/// Prints the view on stdout. Returns 0, 1 when the container is unknown or ambiguous or its entry
/// unreadable, 2 for a bad argument.
int run_inspect(const InspectOptions& options);

}  // namespace manifold::plugin
