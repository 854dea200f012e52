// Implementation of `manifold agent`: the installer thread, the status server and the watch loop,
// wired to the real services.
#include "plugin/cli/agent.h"

#include <malloc.h>

#include <cstdlib>
#include <iostream>
#include <thread>
#include <utility>

#include "agent/agent.h"
#include "agent/metrics.h"
#include "agent/status_server.h"
#include "cni/error.h"
#include "exec/process.h"
#include "k8s/api_client.h"
#include "plugin/cli/agent_lookups.h"
#include "plugin/cli/stop_signal.h"
#include "plugin/cni/real_services.h"
#include "relay/relay_server.h"
#include "util/log.h"

namespace manifold::plugin {
namespace {

/// The API relay for CNI calls on this node, with the agent's credentials; none when it is turned
/// off, when there are no credentials (the loop reports that) or when it cannot be served (logged:
/// CNI calls then go to the API server directly, as without an agent).
void start_relay(const AgentCommandOptions& o, const std::string& node, const engine::Services& services,
                 agent::RelayMetrics& metrics, std::optional<AgentLookups>& lookups,
                 std::optional<relay::RelayServer>& server) {
  if (o.relay_socket.empty()) return;
  try {
    std::optional<http::ClusterAuth> auth = services.find_auth(o.kubeconfig);
    if (!auth) return;
    relay::RelayServerOptions options;
    options.socket_path = o.relay_socket;
    options.server = auth->server;
    options.node_name = node;
    if (lookups) options.answers = lookups->answers();
    auto upstream = [&services, auth = *auth] { return services.open_transport(auth, ""); };
    auto authorization = [files = services.files, auth = *auth] {
      std::string token = k8s::read_bearer_token(auth, *files);
      return token.empty() ? token : "Bearer " + token;
    };
    server.emplace(options, upstream, authorization, metrics);
    util::log_verbose("agent: relaying CNI calls' API requests on ", o.relay_socket);
  } catch (const cni::CniError& e) {
    util::log_error("agent: no API relay for CNI calls: ", e.msg());
  }
}

/// The caches the relay answers CNI calls' lookups from: only with a relay, credentials and a valid
/// node name (the loop reports what is missing).
void start_lookups(const AgentCommandOptions& o, const agent::AgentOptions& options, const engine::Services& services,
                   agent::MetricsRegistry& registry, std::optional<AgentLookups>& lookups) {
  if (o.relay_socket.empty() || !o.lookups || !k8s::is_dns1123_subdomain(options.node_name)) return;
  try {
    if (std::optional<http::ClusterAuth> auth = services.find_auth(o.kubeconfig))
      lookups.emplace(services, *auth, options.node_name, o.api_qps, o.api_burst, registry);
  } catch (const cni::CniError& e) {
    util::log_error("agent: no lookups from memory: ", e.msg());
  }
}

/// Buffers of 128 KiB and more (API answers, relay frames) mapped apart and unmapped when freed, so
/// the agent's resident memory follows what it holds: glibc would otherwise raise the threshold after
/// the first such free and keep freed buffers in its per-thread arenas.
void map_large_buffers_apart() { ::mallopt(M_MMAP_THRESHOLD, 128 << 10); }

/// Serves /metrics, /healthz (the loop's liveness) and /readyz (its sync with the API server) on
/// o.metrics_address; false (logged) when it cannot.
bool start_status_server(const AgentCommandOptions& o, const agent::MetricsRegistry& registry, const agent::Agent& loop,
                         std::optional<agent::StatusServer>& server) {
  agent::StatusServer::Probes probes;
  probes.live = [&loop] {
    agent::AgentHealth h = loop.liveness();
    return agent::StatusServer::Health{h.ok, h.reason};
  };
  probes.ready = [&loop] {
    agent::AgentHealth h = loop.health();
    return agent::StatusServer::Health{h.ok, h.reason};
  };
  try {
    server.emplace(o.metrics_address, registry, std::move(probes));
  } catch (const cni::CniError& e) {
    util::log_error("agent: cannot serve /metrics, /healthz and /readyz: ", e.msg());
    return false;
  }
  util::log_verbose("agent: /metrics, /healthz and /readyz on ", o.metrics_address, " (port ", server->port(), ")");
  return true;
}

}  // namespace

int run_agent(const AgentCommandOptions& o) {
  util::LogLevel level;
  if (!util::parse_log_level(o.log_level, level)) {
    std::cerr << "manifold agent: --log-level must be error, verbose or debug\n";
    return 2;
  }
  util::Logger::instance().set_level(level);
  util::Logger::instance().set_to_stderr(true);
  map_large_buffers_apart();
  agent::AgentOptions options;
  options.node_name = o.node_name;
  if (options.node_name.empty())
    if (const char* env = std::getenv("NODE_NAME")) options.node_name = env;
  options.kubeconfig = o.kubeconfig;
  options.cni_dir = o.cni_dir;
  options.conf_dir = o.install.conf_dir;
  options.watch_timeout_seconds = o.watch_timeout_s;
  options.idle_timeout = std::chrono::seconds(o.idle_timeout_s);
  options.max_backoff = std::chrono::milliseconds(o.max_backoff_ms);
  options.api_requests_per_second = o.api_qps;
  options.api_burst = o.api_burst;
  if (o.watch_timeout_s < 1 || o.idle_timeout_s < 1 || o.max_backoff_ms < 100) {
    std::cerr << "manifold agent: --watch-timeout and --idle-timeout must be at least 1 s, --max-backoff 100 ms\n";
    return 2;
  }
  if (!(o.api_qps >= 0.1 && o.api_qps <= 10000) || o.api_burst < 1 || o.api_burst > 100000) {
    std::cerr << "manifold agent: --api-qps must be between 0.1 and 10000, --api-burst between 1 and 100000\n";
    return 2;
  }
  install_stop_handlers();

  exec::RealProcessRunner runner;
  engine::Services services = real_services(runner);
  agent::MetricsRegistry registry;
  agent::AgentMetrics metrics(registry);
  std::optional<AgentLookups> lookups;  // outlives the loop and the relay, which use it
  start_lookups(o, options, services, registry, lookups);
  agent::Agent loop(services, options, metrics);
  if (lookups) loop.feed_lookups(&lookups->pods());
  std::optional<agent::StatusServer> server;
  if (!start_status_server(o, registry, loop, server)) return 1;
  agent::RelayMetrics relay_metrics(registry);
  std::optional<relay::RelayServer> relay_server;
  start_relay(o, options.node_name, services, relay_metrics, lookups, relay_server);

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
  if (relay_server) relay_server->stop();
  server->stop();
  return code;
}

}  // namespace manifold::plugin
