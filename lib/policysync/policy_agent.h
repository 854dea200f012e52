// The node agent's MultiNetworkPolicy part, running beside its pod loop: up to five kept-current
// views (collection_watch.h) — the MultiNetworkPolicies of the cluster and this node's pods (full
// objects: labels and container ports), always; every pod (metadata only: labels and the
// network-status annotation) only while a policy of a namespace with a covered attachment here has
// a podSelector or namespaceSelector peer, and the Namespaces (metadata only) only while one has a
// namespaceSelector, and the NADs (metadata only: which exist) while a namespace with a covered
// attachment here has a policy (a view no longer needed is stopped and what it held dropped) — feed one
// PolicySync, and a worker applies what changed
// to the covered attachments of this node's pods (local_attachments.h) whenever a view reports a
// change, and every `resync` anyway (which repairs rules changed behind the agent's back). Nothing is applied before every view has
// listed once: until then the rules ADD installed (closed where peers are needed) stay.
// Each view and the worker run on threads of their own; one mutex guards the PolicySync.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/services.h"
#include "http/kubeconfig.h"
#include "policysync/collection_watch.h"
#include "policysync/policy_sync.h"
#include "policysync/policy_warnings.h"
#include "store/cache.h"

namespace manifold::policysync {

/// Settings of the policy part of the agent.
struct PolicyAgentOptions {
  std::string node_name;                          ///< this node
  std::string cni_dir = "/var/lib/cni/manifold";  ///< the cache the CNI binary writes
  std::string tls_session_dir;                    ///< where TLS sessions are resumed from ("" = none)
  std::chrono::milliseconds resync{60000};        ///< full pass (NADs asked again, rules re-read)
  CollectionOptions views;                        ///< every view's settings
};

/// What the policy part reports (for logs and tests).
struct PolicyAgentStatus {
  bool synced = false;   ///< every view listed once
  int streams = 0;       ///< watch streams open
  std::size_t pods = 0;  ///< peer pods kept
  std::size_t policies = 0;
  int syncs = 0;  ///< passes made
};

/// The views, the worker and their threads.
class PolicyAgent {
 public:
  /// Reads with `auth` through services.open_transport; applies through `services`.
  PolicyAgent(const engine::Services& services, http::ClusterAuth auth, PolicyAgentOptions options);
  /// Stops and joins every thread.
  ~PolicyAgent();
  PolicyAgent(const PolicyAgent&) = delete;
  PolicyAgent& operator=(const PolicyAgent&) = delete;
  /// Starts the threads.
  void start();
  /// What it is doing.
  PolicyAgentStatus status() const;

 private:
  /// One view and its thread.
  struct View {
    std::unique_ptr<CollectionWatch> watch;
    std::thread thread;
    std::atomic<bool> stop{false};
    bool running = false;
  };
  enum ViewIndex { kPolicies, kLocalPods, kPods, kNamespaces, kNads, kViews };
  void add_views();
  void add_view(ViewIndex index, CollectionSpec spec, CollectionSink sink);
  void run_view(ViewIndex index, bool wanted);
  bool views_synced() const;
  void changed();
  void work();
  /// One pass; false when a view it started must list first (nothing was applied).
  bool pass(bool force);
  void send_warnings(const std::vector<Json>& events);

  const engine::Services& services_;
  http::ClusterAuth auth_;
  PolicyAgentOptions options_;
  std::unique_ptr<store::Cache> cache_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool dirty_ = true;
  int syncs_ = 0;
  PolicySync sync_;
  View views_[kViews];
  std::thread worker_;
  std::atomic<bool> stop_{false};
  PolicyWarnings warnings_;  ///< the invalid policies told
};

/// Starts the policy part when the node's generated config in `conf_dir` enables
/// multiNetworkPolicy (local_attachments.h); nullptr (nothing watched) otherwise.
std::unique_ptr<PolicyAgent> start_policy_agent(const engine::Services& services, const http::ClusterAuth& auth,
                                                const std::string& conf_dir, PolicyAgentOptions options);

}  // namespace manifold::policysync
