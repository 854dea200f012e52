// The CNI verbs of manifold, as short checklists over the library modules: resolve attachments, run
// their delegates through the cache, roll back on failure, and print the cluster network's result
// in the config's cniVersion. Side effects arrive through Services so the verbs run against fakes
// in unit tests and against the real system in the plugin.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cni/error.h"
#include "cni/skel.h"
#include "exec/delegate_runner.h"
#include "exec/process.h"
#include "firewall/runner.h"
#include "k8s/http.h"
#include "k8s/kubeconfig.h"
#include "k8s/retry.h"
#include "netlink/net_ops.h"
#include "store/cache.h"
#include "util/file_reader.h"

namespace manifold::plugin {

struct ScopingEnv;

/// The side effects the verbs need.
struct Services {
  /// Runs delegate processes.
  exec::ProcessRunner* runner = nullptr;
  /// Opens the cache in a cniDir.
  std::function<std::unique_ptr<store::Cache>(const std::string& dir)> open_cache;
  /// Opens netlink operations inside a network namespace path.
  std::function<std::unique_ptr<netlink::NetOps>(const std::string& netns)> open_netns;
  /// Opens an iptables runner inside a network namespace path, with the legacy lock wait in seconds
  /// (network scoping; only called for attachments with a mesh). Unset: the node's iptables.
  std::function<std::unique_ptr<firewall::IptablesRunner>(const std::string& netns, int lock_wait_seconds)>
      open_iptables;
  /// True if a file exists (readiness indicator).
  std::function<bool(const std::string& path)> file_exists;
  /// Sleeps (readiness polling).
  std::function<void(std::chrono::milliseconds)> sleep;
  /// Finds Kubernetes credentials: the kubeconfig path (may be ""), else in-cluster; nullopt = none.
  std::function<std::optional<k8s::ClusterAuth>(const std::string& kubeconfig)> find_auth;
  /// Opens the HTTPS transport to the API server (no I/O until the first request).
  std::function<std::unique_ptr<k8s::HttpTransport>(const k8s::ClusterAuth&)> open_transport;
  /// Sleeps between API retries.
  std::shared_ptr<k8s::Sleeper> k8s_sleeper;
  /// Measures API deadlines.
  std::shared_ptr<k8s::Clock> k8s_clock;
  /// Reads small files (kubelet checkpoint, device info).
  std::shared_ptr<util::FileReader> files;
  /// manifold's own environment ("K=V"), the base of every delegate's environment.
  std::vector<std::string> environment;
};

/// Services backed by the real system.
Services real_services(exec::ProcessRunner& runner);

/// DELs every attachment of `record` in reverse with CNI_NETNS `netns` ("" = none: the delegates
/// only release what they hold, e.g. IPAM), removing its network scoping first when `scoping` is
/// given. Returns the attachments whose DEL failed; the first error goes to `first_error`. `inv`
/// supplies the container, CNI_PATH and the runtime's CNI_ARGS (for attachments without cached
/// ones).
std::vector<store::AttachmentRecord> delete_attachments(exec::DelegateRunner& runner, const cni::Invocation& inv,
                                                        const store::ContainerRecord& record, const std::string& netns,
                                                        std::optional<cni::CniError>& first_error,
                                                        ScopingEnv* scoping = nullptr);

/// Removes a cache entry whose attachments were all deleted; a failure is logged, not thrown.
void forget_entry(store::Cache& cache, const store::EntryKey& key);

/// Stores `record` with only its `failed` attachments, for the next DEL to retry; a failure is
/// logged, not thrown.
void keep_failed(store::Cache& cache, store::ContainerRecord record, std::vector<store::AttachmentRecord> failed);

/// The DEL invocation of a cached entry outside a CNI call (manifold gc, the agent): its container,
/// CNI_IFNAME, CNI_PATH and cniVersion; no namespace and no runtime CNI_ARGS.
cni::Invocation invocation_for(const store::ContainerRecord& record);

/// The CNI verb handlers.
class Commands final : public cni::Handlers {
 public:
  /// Uses `services` for every side effect.
  explicit Commands(Services services) : services_(std::move(services)) {}

  std::string add(const cni::Invocation& inv) override;
  std::string del(const cni::Invocation& inv) override;
  std::string check(const cni::Invocation& inv) override;
  std::string gc(const cni::Invocation& inv) override;
  std::string status(const cni::Invocation& inv) override;

 private:
  Services services_;
};

}  // namespace manifold::plugin
