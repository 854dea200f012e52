// The node agent's control loop: LIST this node's pods (fieldSelector spec.nodeName), reconcile
// every pod that has a complete sandbox in the cache, then WATCH from the list's resourceVersion
// with bookmarks, reconciling each pod as its events arrive. A watch that ends is resumed from the
// last resourceVersion seen; 410 Gone (or an ERROR event saying so) relists; a failed or garbled
// stream reconnects after a jittered, growing backoff. A pod whose reconcile failed is retried with
// backoff; one whose annotation is invalid waits until it changes; one with more changes than one
// reconcile makes is continued on the next ticks, pods taking turns, so a pod with much to change
// never holds up the others. Every request and the idle stream are bounded. One thread: the
// stream's wait ticks run the due retries and continuations, and check for stop. Each tick (and
// each reconcile) is a heartbeat: liveness() reports the loop alive while they keep coming, whatever
// the API server does; health() reports whether it is in sync with the API server (readiness).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "agent/metrics.h"
#include "agent/reconciler.h"
#include "engine/services.h"
#include "http/rate_limit.h"
#include "http/retry.h"
#include "k8s/api_client.h"
#include "k8s/pod.h"
#include "k8s/watch_stream.h"
#include "lookup/pod_cache.h"

namespace manifold::agent {

/// Settings of the agent's loop.
struct AgentOptions {
  std::string node_name;                           ///< this node (the downward API's spec.nodeName)
  std::string kubeconfig;                          ///< the agent's credentials ("" = in-cluster)
  std::string cni_dir = "/var/lib/cni/manifold";   ///< the cache the CNI binary writes
  int watch_timeout_seconds = 300;                 ///< the server ends each WATCH after this long
  std::chrono::milliseconds idle_timeout{90000};   ///< a stream silent this long (no event, no bookmark) is dropped
  std::chrono::milliseconds open_timeout{10000};   ///< bound of opening a WATCH
  std::chrono::milliseconds tick{200};             ///< how often a waiting stream checks for stop and retries
  std::chrono::milliseconds initial_backoff{500};  ///< first wait after a failure (reconnect or retry)
  std::chrono::milliseconds max_backoff{30000};    ///< longest wait after repeated failures
  /// A watch that ends sooner than this without delivering a single event (not even a bookmark) is
  /// treated as a failure: the next one waits a growing backoff, so a server or proxy that ends
  /// every watch at once is not answered with a tight reconnect loop.
  std::chrono::milliseconds quick_watch{10000};
  double api_requests_per_second = 20;  ///< ceiling on the agent's own API request rate (list, watch, hot-plug)
  double api_burst = 100;               ///< requests allowed at once above that rate
  /// The runtime's CNI config dir with the generated config, whose namespace policy hot-plugs
  /// follow ("" = the policy each ADD recorded).
  std::string conf_dir;
  /// Longest time one tick spends on retries and continuations (at least one pod is served).
  std::chrono::milliseconds retry_budget{1000};
  /// The loop counts as dead when no heartbeat came for this long: more than one reconcile can take
  /// (a few delegate calls and API calls), far more than a tick.
  std::chrono::milliseconds liveness_bound{600000};
};

/// What /healthz (liveness) or /readyz (readiness) reports about the loop.
struct AgentHealth {
  bool ok = false;     ///< alive (liveness), or synced with the API server and watching (readiness)
  std::string reason;  ///< why not
};

/// The node agent's loop.
class Agent {
 public:
  /// Works through `services` and updates `metrics`; both must outlive it.
  Agent(const engine::Services& services, AgentOptions options, AgentMetrics& metrics);
  /// Runs until `stop` returns true (checked at least every options.tick). Returns 0, or 1 when it
  /// cannot start (no credentials, invalid node name).
  int run(const std::function<bool()>& stop);
  /// The loop's readiness: synced with the API server and watching. Safe to call from another thread.
  AgentHealth health() const;
  /// The loop's liveness: a heartbeat came within options.liveness_bound (the loop ticks whether or
  /// not the API server answers). Safe to call from another thread when services.clock is.
  AgentHealth liveness() const;
  /// Feeds `cache` (which must outlive the loop; null: none) with the pods the watch sees and
  /// whether the watch is live. Call before run().
  void feed_lookups(lookup::PodCache* cache) { lookups_ = cache; }

 private:
  /// What the loop knows about one pod.
  struct PodState {
    k8s::Pod pod;                                      ///< the pod as last seen
    int failures = 0;                                  ///< reconciles failed in a row
    std::chrono::steady_clock::time_point retry_at{};  ///< next retry when failures > 0
    std::optional<std::string> invalid_annotation;     ///< the annotation found invalid, if any
    bool more = false;                                 ///< changes remain for the next turn
    std::string told_failure;     ///< the failure its last Warning event told (for this annotation)
    std::string told_annotation;  ///< the annotation that failure was for
  };

  static engine::Services rate_limited(const engine::Services& services,
                                       const std::shared_ptr<http::RequestRateLimit>& limit);
  bool list_and_reconcile();
  void count_api_requests();
  enum class WatchEnd { Resume, Empty, Relist, Backoff, Stopped };
  WatchEnd watch_once();
  bool handle(const k8s::WatchEvent& event);
  void reconcile_pod(const std::string& uid);
  void publish_relist();
  void publish_pod(const std::string& uid, const k8s::Pod* pod);
  WatchEnd watch_and_publish();
  void run_due_retries();
  void beat();
  void set_health(bool ok, std::string reason);
  std::chrono::milliseconds backoff(int failures);
  bool wait(std::chrono::milliseconds duration);

  const engine::Services& services_;
  AgentOptions options_;
  AgentMetrics& metrics_;
  std::shared_ptr<http::RequestRateLimit> rate_limit_;  ///< every transport the agent opens draws on it
  engine::Services limited_;                            ///< services_ with rate-limited transports
  Reconciler reconciler_;
  std::function<bool()> stop_;
  std::unique_ptr<http::HttpTransport> transport_;
  std::unique_ptr<k8s::ApiClient> api_;
  http::RandomJitter jitter_;
  std::string resource_version_;
  int counted_requests_ = 0;              ///< requests of api_ already added to the metrics
  std::uint64_t counted_throttled_ = 0;   ///< throttled requests already added to the metrics
  int watch_events_ = 0;                  ///< events (bookmarks included) the current watch delivered
  std::map<std::string, PodState> pods_;  ///< by pod UID
  WatchEnd pending_end_ = WatchEnd::Resume;
  std::string last_served_;                 ///< the UID of the pod the last retry turn served
  std::atomic<std::int64_t> heartbeat_{0};  ///< services.clock at the last heartbeat, in its ticks
  lookup::PodCache* lookups_ = nullptr;     ///< the relay's pod cache, fed from the watch
  mutable std::mutex health_mu_;
  AgentHealth health_;
};

}  // namespace manifold::agent
