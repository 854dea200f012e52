// One kept-current view of a Kubernetes collection, as the policy sync needs several of them
// (policies, namespaces, pods): LIST in pages (so a cluster-wide list never has to fit in memory
// at once) then WATCH from the list's resourceVersion with bookmarks, resumed from the last
// resourceVersion seen when a watch ends; 410 Gone (at the start or as an ERROR event) relists;
// a failed request or a garbled stream waits a jittered, growing backoff. Objects are handed to a
// Sink one at a time, as they are decoded, and are not kept here. run() blocks until `stop` is set
// (checked at every tick), so each view runs on a thread of its own with its own connection.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include "http/http.h"
#include "http/kubeconfig.h"
#include "k8s/api_client.h"
#include "util/clock.h"
#include "util/json.h"

namespace manifold::policysync {

/// The metadata-only Accept headers (PartialObjectMetadata): labels and annotations, no spec.
inline constexpr const char* kMetadataListAccept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
/// The metadata-only Accept header of a watch.
inline constexpr const char* kMetadataWatchAccept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

/// Which collection, and how to read it.
struct CollectionSpec {
  std::string resource;        ///< for messages and the API's errors: "pods", "namespaces", …
  std::string collection;      ///< the path: "/api/v1/pods"
  std::string query;           ///< selectors, without '?' ("" for none)
  std::string list_kind;       ///< the kind a LIST answers: "PodList", "PartialObjectMetadataList"
  bool metadata_only = false;  ///< ask for PartialObjectMetadata
};

/// What a view reports.
struct CollectionSink {
  std::function<void()> relist_begin;       ///< a LIST begins: everything known may be stale
  std::function<bool(const Json&)> put;     ///< an object exists (listed, ADDED, MODIFIED); true: it mattered
  std::function<bool(const Json&)> remove;  ///< an object was DELETED; true: it mattered
  std::function<void()> relist_end;         ///< the LIST is complete: drop what it did not hold
  std::function<void()> changed;            ///< a LIST ended, or an event mattered
};

/// Settings of one view.
struct CollectionOptions {
  int page_size = 500;                             ///< LIST `limit`
  int watch_timeout_seconds = 300;                 ///< the server ends each WATCH after this long
  std::chrono::milliseconds idle_timeout{90000};   ///< a silent stream is dropped
  std::chrono::milliseconds open_timeout{10000};   ///< bound of opening a WATCH
  std::chrono::milliseconds tick{200};             ///< how often a waiting stream checks `stop`
  std::chrono::milliseconds initial_backoff{500};  ///< first wait after a failure
  std::chrono::milliseconds max_backoff{30000};    ///< longest wait
};

/// Opens the connection of one view.
using TransportFactory = std::function<std::unique_ptr<http::HttpTransport>()>;

/// A LIST+WATCH loop over one collection.
class CollectionWatch {
 public:
  /// Reads through connections from `open` with `auth`.
  CollectionWatch(CollectionSpec spec, CollectionSink sink, CollectionOptions options, TransportFactory open,
                  http::ClusterAuth auth, util::Sleeper& sleeper, util::Clock& clock);
  /// Lists and watches until `stop` is set.
  void run(const std::atomic<bool>& stop);
  /// Forgets that it listed (before run() starts it again: it lists anew).
  void reset() { synced_.store(false); }
  /// True once a LIST completed (and until a relist begins).
  bool synced() const { return synced_.load(); }
  /// Requests sent so far.
  int requests() const { return requests_.load(); }
  /// True while a WATCH stream is open.
  bool watching() const { return watching_.load(); }

 private:
  enum class End { Resume, Relist, Backoff, Stopped };
  bool list(k8s::ApiClient& api, const std::atomic<bool>& stop);
  End watch(k8s::ApiClient& api, const std::atomic<bool>& stop);
  bool handle(const std::string& type, const Json& object, End& end);
  bool pause(std::chrono::milliseconds duration, const std::atomic<bool>& stop);

  CollectionSpec spec_;
  CollectionSink sink_;
  CollectionOptions options_;
  TransportFactory open_;
  http::ClusterAuth auth_;
  util::Sleeper& sleeper_;
  util::Clock& clock_;
  std::string resource_version_;
  std::atomic<bool> synced_{false};
  std::atomic<bool> watching_{false};
  std::atomic<int> requests_{0};
};

}  // namespace manifold::policysync
