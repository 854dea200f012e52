// Implementation of `manifold agent`: the installer thread, the status server and the watch loop,
// wired to the real services.
#include "plugin/cli/agent.h"

#include <cstdlib>
#include <iostream>
#include <thread>

#include "agent/agent.h"
#include "agent/metrics.h"
#include "agent/status_server.h"
#include "cni/error.h"
#include "exec/process.h"
#include "plugin/cli/stop_signal.h"
#include "plugin/cni/real_services.h"
#include "util/log.h"

namespace manifold::plugin {

int run_agent(const AgentCommandOptions& o) {
  util::LogLevel level;
  if (!util::parse_log_level(o.log_level, level)) {
    std::cerr << "manifold agent: --log-level must be error, verbose or debug\n";
    return 2;
  }
  util::Logger::instance().set_level(level);
  util::Logger::instance().set_to_stderr(true);
  agent::AgentOptions options;
  options.node_name = o.node_name;
  if (options.node_name.empty())
    if (const char* env = std::getenv("NODE_NAME")) options.node_name = env;
  options.kubeconfig = o.kubeconfig;
  options.cni_dir = o.cni_dir;
  options.watch_timeout_seconds = o.watch_timeout_s;
  options.idle_timeout = std::chrono::seconds(o.idle_timeout_s);
  options.max_backoff = std::chrono::milliseconds(o.max_backoff_ms);
  if (o.watch_timeout_s < 1 || o.idle_timeout_s < 1 || o.max_backoff_ms < 100) {
    std::cerr << "manifold agent: --watch-timeout and --idle-timeout must be at least 1 s, --max-backoff 100 ms\n";
    return 2;
  }
  install_stop_handlers();

  exec::RealProcessRunner runner;
  engine::Services services = real_services(runner);
  agent::MetricsRegistry registry;
  agent::AgentMetrics metrics(registry);
  agent::Agent loop(services, options, metrics);
  std::optional<agent::StatusServer> server;
  try {
    server.emplace(o.metrics_address, registry, [&loop] {
      agent::AgentHealth h = loop.health();
      return agent::StatusServer::Health{h.ok, h.reason};
    });
  } catch (const cni::CniError& e) {
    util::log_error("agent: cannot serve /metrics and /healthz: ", e.msg());
    return 1;
  }
  util::log_verbose("agent: /metrics and /healthz on ", o.metrics_address, " (port ", server->port(), ")");

  std::thread installer;
  if (!o.no_install) {
    InstallOptions install = o.install;
    install.watch = true;
    installer = std::thread([install] {
      if (run_installation(install) != 0) util::log_error("agent: the installer stopped with an error");
    });
  }
  int code = loop.run([] { return stop_requested(); });
  request_stop();  // the loop can also end on its own (no credentials): stop the installer too
  if (installer.joinable()) installer.join();
  server->stop();
  return code;
}

}  // namespace manifold::plugin
