// The node agent's copy of the NetworkAttachmentDefinitions its pods read, one namespace at a time,
// answered to a CNI call's NAD GETs when it provably is not older than the pod. The rule: each
// namespace's copy carries the resourceVersion of the LIST it came from (its progress); a NAD is
// served for pod P only when that progress is at least the resourceVersion at which the agent first
// saw P bound to its node (pod_cache.h). Every write before P was bound (a NAD changed, then the pod
// created) has a smaller resourceVersion of the same etcd, so the copy holds it. A copy that is not
// provably fresh is refreshed: one LIST of the namespace's NADs, shared by every pod waiting on it
// (a LIST started after a pod was seen answers for it; pods seen while it was in flight get one more
// LIST, however many they are). The refresh starts soon after the pod watch shows a new pod (its own
// namespace, those its annotations name, and the namespaces calls read recently, such as the cluster
// network's; it waits a moment, 100 ms, for the other pods of a burst to share it), so the ADD finds
// the copy ready. A lookup that would need a newer copy starts the LIST at once and waits for it
// (bounded), then goes to the API server. Why LISTs and no NAD watch: a watch proves its progress
// only at its bookmarks (about once a minute), never for a pod bound a moment ago, so each new pod
// would need a LIST anyway; and a copy is served at most once per pod (pod_cache.h), so no answer
// outlives the LIST made for that pod. Bounded in namespaces and bytes. Thread-safe; one worker
// thread makes the LISTs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "lookup/pod_cache.h"
#include "util/json.h"

namespace manifold::lookup {

/// LISTs the NADs of a namespace: the NetworkAttachmentDefinitionList; throws (any std::exception)
/// when it cannot.
using NadLister = std::function<Json(const std::string& ns)>;

/// A NAD lookup's answer: the NAD's JSON when Hit.
struct NadAnswer {
  Verdict verdict = Verdict::Stale;
  bool waited = false;  ///< the answer came after waiting for a LIST
  std::string body;     ///< the NAD as the API server's GET returns it (Hit only)
};

/// The NADs of the namespaces this node's pods use.
class NadCache {
 public:
  /// Bounds of the cache.
  struct Limits {
    std::size_t max_namespaces = 64;          ///< namespaces kept (least recently used evicted)
    std::size_t max_bytes = 8u << 20;         ///< the NADs' JSON together
    std::chrono::seconds recently_read{600};  ///< a namespace read this recently is refreshed for every new pod
    /// How long a refresh for a new pod waits for more pods to share its LIST; a lookup that needs
    /// it starts it at once.
    std::chrono::milliseconds batch{100};
  };

  /// Lists through `lister` (on the cache's worker thread).
  NadCache(NadLister lister, Limits limits);
  /// Default limits.
  explicit NadCache(NadLister lister) : NadCache(std::move(lister), Limits{}) {}
  /// Stops the worker (a LIST in flight ends first).
  ~NadCache();
  NadCache(const NadCache&) = delete;
  NadCache& operator=(const NadCache&) = delete;

  /// A new pod seen at `bound_rv`: refreshes `namespaces` and every namespace read recently unless
  /// their copies are already that fresh.
  void new_pod(const std::vector<std::string>& namespaces, std::uint64_t bound_rv);
  /// The NAD `ns`/`name` for a pod bound at `bound_rv`, waiting until `deadline` for a fresh enough
  /// copy (a LIST is started when none is under way).
  NadAnswer get(const std::string& ns, const std::string& name, std::uint64_t bound_rv, Clock::time_point deadline);

  /// LISTs made so far (failed ones included).
  std::uint64_t lists() const;
  /// Bytes of NAD JSON held.
  std::size_t bytes() const;
  /// Namespaces held.
  std::size_t namespaces() const;

 private:
  struct Space {
    std::map<std::string, std::string> nads;  ///< name → JSON
    std::optional<std::uint64_t> progress;    ///< the LIST's resourceVersion
    std::uint64_t wanted = 0;                 ///< the highest resourceVersion asked for
    std::uint64_t last_want = 0;              ///< want_counter_ at the latest ask
    std::uint64_t unreachable = 0;            ///< asks up to this gave up (a LIST after them was older)
    bool queued = false, listing = false, failed = false, not_integer = false, too_large = false;
    std::size_t bytes = 0;
    int waiters = 0;
    Clock::time_point used{};
    Clock::time_point due{};  ///< when the queued LIST is to start
  };
  Space* space(const std::string& ns);
  void want(const std::string& ns, std::uint64_t rv, Clock::time_point due);
  void enqueue(const std::string& ns, Space& s, Clock::time_point due);
  std::deque<std::string>::iterator next_due();
  void work();
  void apply(const std::string& ns, std::uint64_t started, const std::optional<Json>& list);
  Verdict check(const Space& s, const std::string& name, std::uint64_t rv, std::string& body) const;

  NadLister lister_;
  Limits limits_;
  mutable std::mutex mu_;
  std::condition_variable work_ready_;
  std::condition_variable changed_;
  std::map<std::string, Space> spaces_;
  std::deque<std::string> queue_;
  std::uint64_t want_counter_ = 0;
  std::uint64_t lists_ = 0;
  std::size_t bytes_ = 0;
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace manifold::lookup
