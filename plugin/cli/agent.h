// `manifold agent`: the DaemonSet's one long-running process. It does what `install --watch` does
// (installs the binary, keeps the generated config and kubeconfig current) on a thread of its own,
// serves /metrics and /healthz on a loopback port, and runs the node agent's loop (lib/agent):
// watch this node's pods and hot-plug or unplug networks when their annotation changes. It also
// relays the API calls of CNI invocations on this node (relay/relay_server.h), on its warm
// connections. It stops on SIGTERM/SIGINT. The CNI binary never depends on it.
#pragma once

#include <string>

#include "plugin/cli/install.h"

namespace manifold::plugin {

/// Settings of `manifold agent`.
struct AgentCommandOptions {
  InstallOptions install;                                 ///< what the installer thread does
  bool no_install = false;                                ///< run only the agent loop (no installer thread)
  std::string node_name;                                  ///< "" = $NODE_NAME
  std::string kubeconfig;                                 ///< the agent's credentials; "" = in-cluster
  std::string cni_dir = "/var/lib/cni/manifold";          ///< the CNI binary's cache (cniDir)
  std::string metrics_address = "127.0.0.1:9155";         ///< where /metrics and /healthz are served
  std::string relay_socket = "/run/manifold/agent.sock";  ///< the API relay for CNI calls; "" = none
  bool lookups = true;                                    ///< the relay answers lookups from its caches
  int watch_timeout_s = 300;                              ///< server-side end of each WATCH
  int idle_timeout_s = 90;                                ///< a silent stream is dropped after this long
  int max_backoff_ms = 30000;                             ///< longest wait between retries
  double api_qps = 20;                                    ///< ceiling on the agent's own API requests per second
  int api_burst = 100;                                    ///< requests allowed at once above that rate
  std::string log_level = "verbose";                      ///< error, verbose, debug
};

/// Runs the agent until SIGTERM/SIGINT; returns the exit code (0 stopped, 1 cannot start, 2 usage).
int run_agent(const AgentCommandOptions& options);

}  // namespace manifold::plugin
