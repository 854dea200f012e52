// The node agent's copy of its node's pods, fed by the agent's own pod watch (each pod decoded once
// there, into k8s::Pod) and read by the relay's threads to answer a CNI call's pod GET from memory.
// A copy is handed out only when it provably is the pod the call was started for: the watch is live
// (listed, and not failed since), the cached pod's UID is the K8S_POD_UID of the call and it is
// bound to this node. A pod recreated under the same name has another UID, so until the watch
// delivers the new one the call waits (bounded) and then goes to the API server; so does a call
// re-reading its pod after its status write conflicted, until the watch shows the newer version
// the API server refused that write for. The cache also
// remembers the resourceVersion at which it first saw each pod on this node, which the NAD cache
// compares with its own progress (nad_cache.h), and tells a listener about each new pod so that
// the NADs it will read are refreshed before its ADD arrives. Bounded in pods and bytes: past
// either bound a new pod is not cached (its lookups go upstream). Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "k8s/pod.h"

namespace manifold::lookup {

using Clock = std::chrono::steady_clock;

/// Why a lookup was not answered from memory (or Hit when it was).
enum class Verdict {
  Hit,           ///< answered from memory
  NoUid,         ///< the call did not say which pod UID it was started for
  WatchDown,     ///< the pod watch is not live
  NotCached,     ///< no pod of that name (or UID) is cached, even after the bounded wait
  UidMismatch,   ///< the cached pod of that name has another UID (recreated, or a static pod)
  OtherNode,     ///< the cached pod is not bound to this node
  StaticPod,     ///< a static pod: its mirror pod has another UID than the call's
  Superseded,    ///< the API server refused a write of the cached copy (409): newer than the watch's
  NotInteger,    ///< a resourceVersion that is not an integer: freshness cannot be proven
  Stale,         ///< the NAD cache did not reach the pod's resourceVersion in time
  ServedBefore,  ///< the pod's NADs were already served once from memory
  Absent,        ///< the NAD is not in the cache (the API server gives the real answer)
  OutOfScope,    ///< a namespace without a pod of this node
  ListFailed,    ///< the NAD list of the namespace failed
  OverCapacity,  ///< the object is beyond the cache's bounds
};

/// The metric label of a verdict ("hit", "uid-mismatch", …).
const char* verdict_name(Verdict v);

/// A pod lookup's answer: the pod's JSON when Hit.
struct PodAnswer {
  Verdict verdict = Verdict::NotCached;
  bool waited = false;  ///< the answer came after waiting for the watch
  std::string body;     ///< the pod as the API server's GET returns it (Hit only)
};

/// What a NAD lookup for a pod needs: whether the pod may be answered for, and since when it is bound.
struct BoundPod {
  Verdict verdict = Verdict::NotCached;  ///< Hit: bound_rv holds
  std::string ns;                        ///< the pod's namespace
  std::uint64_t bound_rv = 0;            ///< resourceVersion at which the cache first saw it on this node
};

/// The node's pods, as the agent's watch sees them.
class PodCache {
 public:
  /// Bounds of the cache.
  struct Limits {
    std::size_t max_pods = 1024;        ///< far above a node's pod capacity (110 by default)
    std::size_t max_bytes = 16u << 20;  ///< the pods' JSON together
  };
  /// Told about each pod first seen on this node (outside the cache's lock): the namespaces its
  /// networks annotations name (its own first) and the resourceVersion it was seen at.
  using NewPodListener = std::function<void(const std::vector<std::string>& namespaces, std::uint64_t bound_rv)>;

  /// The cache of node `node`'s pods.
  explicit PodCache(std::string node, Limits limits);
  /// The cache of node `node`'s pods, default limits.
  explicit PodCache(std::string node) : PodCache(std::move(node), Limits{}) {}
  /// Sets the listener (before the cache is fed).
  void set_new_pod_listener(NewPodListener listener) { listener_ = std::move(listener); }

  /// A pod added or modified, as the watch delivered it.
  void observe(const k8s::Pod& pod);
  /// A pod deleted.
  void forget(const std::string& uid);
  /// The whole set after a (re)list: pods not in it are dropped; those kept keep their bound_rv.
  void relisted(const std::vector<const k8s::Pod*>& pods);
  /// Whether the watch is live (listed and not failed since); a change wakes the waiters.
  void set_live(bool live);
  /// Whether the watch is live.
  bool live() const;

  /// The pod `ns`/`name` for a call started for pod UID `uid`: waits until `deadline` for a copy
  /// with that UID when it is not cached (yet).
  PodAnswer get(const std::string& ns, const std::string& name, const std::string& uid, Clock::time_point deadline);
  /// The pod of UID `uid` for a NAD lookup (waits as get()). With `claim_nads`, a Hit also marks
  /// the pod's NADs as served: a later call gets ServedBefore.
  BoundPod bound(const std::string& uid, Clock::time_point deadline, bool claim_nads);
  /// The API server answered a write of pod `ns`/`name` at resourceVersion `rv` with a conflict:
  /// a cached copy of that version is no longer handed out; a lookup waits for the watch to deliver
  /// the newer one (the call's re-read after its conflict).
  void superseded(const std::string& ns, const std::string& name, const std::string& rv);
  /// True when a cached pod of this node is in namespace `ns`.
  bool has_namespace(const std::string& ns) const;
  /// Pods cached.
  std::size_t size() const;
  /// Bytes of the pods' JSON cached.
  std::size_t bytes() const;

 private:
  struct Entry {
    std::string ns, name, node, body, rv;
    std::optional<std::uint64_t> bound_rv;
    bool nads_served = false;
    bool is_static = false;
    bool superseded = false;  ///< a write of this version conflicted: the watch has not caught up
  };
  void store(const k8s::Pod& pod, std::vector<std::function<void()>>& tell);
  void drop(const std::string& uid);
  Verdict wait_for(std::unique_lock<std::mutex>& lock, const std::function<Verdict()>& check,
                   Clock::time_point deadline, bool& waited);

  std::string node_;
  Limits limits_;
  NewPodListener listener_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  bool live_ = false;
  std::map<std::string, Entry> by_uid_;
  std::map<std::string, std::string> uid_by_name_;  ///< "ns/name" → uid
  std::map<std::string, int> namespaces_;           ///< ns → pods cached in it
  std::size_t bytes_ = 0;
};

}  // namespace manifold::lookup
