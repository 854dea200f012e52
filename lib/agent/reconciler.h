// Reconciling one pod on this node: for every sandbox of the pod whose cache entry is complete,
// bring its attachments in line with the pod's networks annotation (network_diff.h) through the
// attachment engine — removed networks detached first (scoping removed, delegate DEL, IPs released),
// added ones attached in one transaction that rolls back on any failure — under the same
// per-container lock the CNI verbs take; then write the network-status when it differs from what
// the cache records, and send an AddedInterface / RemovedInterface event per change. Entries still
// being added, being deleted or written by an older manifold are left alone. One reconcile makes at
// most `max_changes` attachments or detachments per sandbox and reports when more remain, so the
// caller can serve other pods first. What can never succeed until the annotation changes (a parse
// error, a default-route request, a namespace isolation violation, an interface name taken in the
// pod, no free name) is Invalid, as is a sandbox whose recorded namespace path names another
// namespace now (hotplug_guard.h): nothing is done and one Warning event says why.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cni/cni_args.h"
#include "engine/services.h"
#include "k8s/pod.h"
#include "store/record.h"
#include "util/json.h"

namespace manifold::agent {

/// What reconciling a pod came to, from the least to the most severe (a pod with several
/// sandboxes reports the most severe result of them).
enum class ReconcileResult {
  NotHere,    ///< no complete cache entry of the pod on this node: nothing to do
  Unchanged,  ///< attachments and network-status already matched
  Changed,    ///< networks were attached or detached, or the network-status was corrected
  Invalid,    ///< cannot succeed (annotation, isolation, name in use, namespace changed): waits for a change
  Failed,     ///< a step failed (the pod is left as the cache records it); worth retrying
};

/// The outcome of one reconcile.
struct ReconcileOutcome {
  ReconcileResult result = ReconcileResult::NotHere;
  int attached = 0;         ///< networks attached
  int detached = 0;         ///< networks detached
  int sandboxes = 0;        ///< complete entries of the pod found
  int api_requests = 0;     ///< HTTP requests made to the API server (retries included)
  bool more = false;        ///< changes remain that this reconcile's bound left for the next one
  std::string failed_step;  ///< "attach", "detach" or "status" when the result is Failed
  std::string message;      ///< why it failed or is invalid
};

/// Settings every reconcile uses.
struct ReconcilerOptions {
  std::string cni_dir = "/var/lib/cni/manifold";  ///< the cache the CNI binary writes
  std::string kubeconfig;                         ///< the agent's credentials ("" = in-cluster)
  /// The runtime's CNI config dir holding the generated config, whose namespace policy hot-plugs
  /// follow (read at every reconcile); "" = the policy each ADD recorded.
  std::string conf_dir;
  /// Most attachments plus detachments one reconcile makes in one sandbox (at least 1).
  std::size_t max_changes = 4;
};

/// The pod a cache entry belongs to, with the entry's key.
struct CachedSandbox {
  store::EntryKey key;  ///< the entry
  cni::PodRef pod;      ///< the pod its ADD was called for
};

/// Reconciles pods against the node's cache.
class Reconciler {
 public:
  /// Works through `services` on the cache in `options.cni_dir`. Every reconcile's API calls share
  /// one kept-alive connection (opened through services.open_transport on first use).
  Reconciler(const engine::Services& services, ReconcilerOptions options);
  Reconciler(const Reconciler&) = delete;  ///< its transport factory refers to this object
  Reconciler& operator=(const Reconciler&) = delete;
  /// Brings every complete sandbox of `pod` (as decoded from the watch or the list) in line with its
  /// networks annotation, then its network-status. Never throws for the pod's or the node's
  /// state: failures are in the outcome (and sent as Warning events where the pod can be told,
  /// except a failure whose message is `told_failure`: the retry of a failure the pod was told of
  /// already, e.g. a NAD that does not exist yet, is logged only).
  ReconcileOutcome reconcile(const k8s::Pod& pod, const std::string& told_failure = "");
  /// Every complete entry of the cache with the pod it belongs to (unreadable entries are skipped,
  /// logged). Lists the cache's keys on every call but reads only entries it has not seen complete
  /// before, so a watch event costs one directory listing, not one read per sandbox of the node.
  std::vector<CachedSandbox> cached_sandboxes();

 private:
  ReconcileOutcome reconcile_entry(const store::EntryKey& key, const k8s::Pod& pod, const std::string& told_failure);
  store::Cache& cache();

  engine::Services services_;  ///< the caller's, with one kept-alive API connection for every reconcile
  ReconcilerOptions options_;
  std::unique_ptr<store::Cache> cache_;                ///< opened on first use (cache())
  std::map<store::EntryKey, CachedSandbox> complete_;  ///< complete entries seen, by key
  std::shared_ptr<http::HttpTransport> transport_;     ///< the API connection every reconcile shares
};

}  // namespace manifold::agent
