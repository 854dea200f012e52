// Implementation of the real services: each factory opens the production implementation of its
// interface.
#include "plugin/cni/real_services.h"

#include <unistd.h>

#include "firewall/runner.h"
#include "http/beast_transport.h"
#include "http/tls_session_store.h"
#include "kubelet/pod_resources.h"
#include "netlink/netns.h"
#include "netlink/real_net_ops.h"
#include "relay/relay_transport.h"
#include "store/cache.h"
#include "util/clock.h"
#include "util/env.h"

extern char** environ;

namespace manifold::plugin {

engine::Services real_services(exec::ProcessRunner& runner) {
  engine::Services s;
  s.runner = &runner;
  s.open_cache = [](const std::string& dir) -> std::unique_ptr<store::Cache> {
    return std::make_unique<store::FileCache>(dir);
  };
  s.open_netns = [](const std::string& path) -> std::unique_ptr<netlink::NetOps> {
    return std::make_unique<netlink::RealNetOps>(path);
  };
  s.netns_identity = netlink::netns_identity;
  s.open_iptables = [](const std::string& netns, int wait) -> std::unique_ptr<firewall::IptablesRunner> {
    firewall::RealIptablesRunner::Options options;
    options.netns_path = netns;
    options.lock_wait_seconds = wait;
    return std::make_unique<firewall::RealIptablesRunner>(options);
  };
  s.file_exists = [](const std::string& path) { return ::access(path.c_str(), F_OK) == 0; };
  s.files = std::make_shared<util::RealFileReader>();
  s.file_writer = std::make_shared<util::RealFileWriter>();
  s.list_pod_resources = kubelet::list_pod_resources;
  s.find_auth = [files = s.files](const std::string& kubeconfig) {
    util::ProcessEnv env;
    return http::find_cluster_auth(kubeconfig, env, *files);
  };
  s.open_transport = [files = s.files, writer = s.file_writer](
                         const http::ClusterAuth& auth,
                         const std::string& session_dir) -> std::unique_ptr<http::HttpTransport> {
    auto sessions = session_dir.empty() ? nullptr : std::make_shared<http::TlsSessionStore>(session_dir, files, writer);
    return std::make_unique<http::BeastTransport>(auth, std::move(sessions));
  };
  s.open_relay = [](const std::string& socket, const http::ClusterAuth& auth, const std::string& pod_uid,
                    relay::RelayTransport::DirectFactory direct) -> std::unique_ptr<http::HttpTransport> {
    return std::make_unique<relay::RelayTransport>(socket, http::parse_server_url(auth.server).to_string(),
                                                   std::move(direct), nullptr, pod_uid);
  };
  s.sleeper = std::make_shared<util::RealSleeper>();
  s.clock = std::make_shared<util::SteadyClock>();
  for (char** e = environ; e && *e; ++e) s.environment.emplace_back(*e);
  return s;
}

}  // namespace manifold::plugin
