// Applies the config's logging keys (logFile, logLevel, logToStderr) to the process logger and
// tags every line with the container ID and, when known, the pod namespace/name.
#pragma once

#include "cni/netconf.h"
#include "cni/skel.h"

namespace manifold::plugin {

/// Configures the process-wide logger for this invocation.
void configure_logging(const cni::MetaConfig& config, const cni::Invocation& inv);

}  // namespace manifold::plugin
