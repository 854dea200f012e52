// The node agent's lookups from memory, wired to the real services: the pod cache the agent's loop
// feeds, the NAD cache with its LISTs on a connection of its own (under the agent's request rate
// ceiling), and the relay's view of both (lookup/cache_answers.h).
#pragma once

#include <memory>
#include <string>

#include "agent/lookup_metrics.h"
#include "engine/services.h"
#include "http/kubeconfig.h"
#include "k8s/api_client.h"
#include "lookup/cache_answers.h"
#include "lookup/nad_cache.h"
#include "lookup/pod_cache.h"

namespace manifold::plugin {

/// The caches of one agent process.
class AgentLookups {
 public:
  /// Caches of node `node`'s pods and the NADs they read, listing with `auth` through `services`
  /// (which must outlive it) at most `api_qps` requests a second (`api_burst` at once), counting in
  /// `registry`; the relay's lookups wait at most `max_wait` and name targets under the path prefix
  /// of `auth`'s server.
  AgentLookups(const engine::Services& services, const http::ClusterAuth& auth, const std::string& node, double api_qps,
               double api_burst, agent::MetricsRegistry& registry);
  /// The pod cache the loop feeds (Agent::feed_lookups).
  lookup::PodCache& pods() { return pods_; }
  /// What the relay answers from (RelayServerOptions::answers).
  std::shared_ptr<lookup::CacheAnswers> answers() const { return answers_; }

 private:
  Json list(const std::string& ns);

  agent::LookupMetrics metrics_;
  lookup::PodCache pods_;
  std::unique_ptr<http::HttpTransport> transport_;
  std::unique_ptr<k8s::ApiClient> api_;
  lookup::NadCache nads_;  // after what its worker thread uses, so that it stops first
  std::shared_ptr<lookup::CacheAnswers> answers_;
};

}  // namespace manifold::plugin
