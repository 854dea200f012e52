// The side effects of the attachment engine, as one struct of interfaces and factories: delegate
// processes, the cache, network namespaces, iptables, the file system, time, and the Kubernetes API.
// The CNI binary's composition root (plugin/main.cpp) fills it with the real implementations, the
// node agent with the same ones, and the tests with fakes; the engine never reaches the system any
// other way.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exec/process.h"
#include "firewall/runner.h"
#include "http/http.h"
#include "http/kubeconfig.h"
#include "http/retry.h"
#include "netlink/net_ops.h"
#include "netlink/netns.h"
#include "store/cache.h"
#include "util/clock.h"
#include "util/file_reader.h"
#include "util/file_writer.h"

namespace manifold::engine {

/// The side effects the engine needs.
struct Services {
  /// Runs delegate processes.
  exec::ProcessRunner* runner = nullptr;
  /// Opens the cache in a cniDir.
  std::function<std::unique_ptr<store::Cache>(const std::string& dir)> open_cache;
  /// Opens netlink operations inside a network namespace path.
  std::function<std::unique_ptr<netlink::NetOps>(const std::string& netns)> open_netns;
  /// The identity of the network namespace a path names now (netlink::netns_identity); nullopt when
  /// the path does not exist. Unset: identities are unknown (none recorded, none compared).
  std::function<std::optional<netlink::NetnsIdentity>(const std::string& netns)> netns_identity;
  /// Opens an iptables runner inside a network namespace path, with the legacy lock wait in seconds
  /// (network scoping; only called for attachments with a mesh). Unset: the node's iptables.
  std::function<std::unique_ptr<firewall::IptablesRunner>(const std::string& netns, int lock_wait_seconds)>
      open_iptables;
  /// True if a file exists (readiness indicator).
  std::function<bool(const std::string& path)> file_exists;
  /// Finds Kubernetes credentials: the kubeconfig path (may be ""), else in-cluster; nullopt = none.
  std::function<std::optional<http::ClusterAuth>(const std::string& kubeconfig)> find_auth;
  /// Opens the HTTPS transport to the API server (no I/O until the first request), resuming TLS
  /// sessions stored in the given directory (http::tls_session_dir of the cniDir; "" = none).
  std::function<std::unique_ptr<http::HttpTransport>(const http::ClusterAuth&, const std::string& tls_session_dir)>
      open_transport;
  /// Opens the transport through the node agent's API relay on the given socket, for the API server
  /// of the credentials, for a call started for the pod of the given UID ("" when unknown), with the
  /// direct transport (made by the given factory) as its fallback. Unset: every request goes directly.
  std::function<std::unique_ptr<http::HttpTransport>(const std::string& socket, const http::ClusterAuth&,
                                                     const std::string& pod_uid,
                                                     std::function<std::unique_ptr<http::HttpTransport>()> direct)>
      open_relay;
  /// Sleeps between API retries and while polling for the readiness indicator file.
  std::shared_ptr<util::Sleeper> sleeper;
  /// Measures API deadlines.
  std::shared_ptr<util::Clock> clock;
  /// Reads small files (kubelet checkpoint, device info).
  std::shared_ptr<util::FileReader> files;
  /// Writes and removes the attachments' device-info files. Unset: none are written.
  std::shared_ptr<util::FileWriter> file_writer;
  /// Asks the kubelet's PodResources API on a unix socket for every pod's devices, within a
  /// timeout: the serialised ListPodResourcesResponse. Throws kubelet::GrpcError.
  std::function<std::string(const std::string& socket, std::chrono::milliseconds timeout)> list_pod_resources;
  /// The process's own environment ("K=V"), the base of every delegate's environment.
  std::vector<std::string> environment;
};

}  // namespace manifold::engine
