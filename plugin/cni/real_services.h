// The real side effects of the attachment engine, in one place: delegate processes, the file cache,
// netlink and iptables inside pod namespaces, the file system, the Kubernetes API over HTTPS, time,
// and the process environment. The CNI entry point (plugin/main.cpp) and `manifold agent` both
// build their engine::Services here, so the agent attaches exactly as the CNI binary does.
#pragma once

#include "engine/services.h"
#include "exec/process.h"

namespace manifold::plugin {

/// The real services, running delegates through `runner` (which must outlive them).
engine::Services real_services(exec::ProcessRunner& runner);

}  // namespace manifold::plugin
