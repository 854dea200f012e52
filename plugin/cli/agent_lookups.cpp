// Implementation of the agent's caches: the NAD LISTs go through an API client of their own (only the
// NAD cache's worker thread uses it), and each new pod the loop reports refreshes its namespaces.
#include "plugin/cli/agent_lookups.h"

#include "http/rate_limit.h"

namespace manifold::plugin {
namespace {

/// How long a CNI call's lookup may wait for the watch or a LIST before it goes to the API server.
constexpr std::chrono::milliseconds kMaxWait(2000);

}  // namespace

AgentLookups::AgentLookups(const engine::Services& services, const http::ClusterAuth& auth, const std::string& node,
                           double api_qps, double api_burst, agent::MetricsRegistry& registry)
    : metrics_(registry),
      pods_(node),
      transport_(std::make_unique<http::RateLimitedTransport>(
          services.open_transport(auth, ""),
          std::make_shared<http::RequestRateLimit>(api_qps, api_burst, services.clock, services.sleeper))),
      api_(
          std::make_unique<k8s::ApiClient>(*transport_, auth, http::RetryPolicy{}, *services.sleeper, *services.clock)),
      nads_([this](const std::string& ns) { return list(ns); }),
      answers_(std::make_shared<lookup::CacheAnswers>(pods_, nads_, http::parse_server_url(auth.server).base_path,
                                                      kMaxWait, metrics_)) {
  pods_.set_new_pod_listener([this](const std::vector<std::string>& namespaces, std::uint64_t bound_rv) {
    nads_.new_pod(namespaces, bound_rv);
  });
}

Json AgentLookups::list(const std::string& ns) {
  try {
    Json list = api_->list_nads(ns);
    metrics_.listed(true);
    return list;
  } catch (...) {
    metrics_.listed(false);
    throw;
  }
}

}  // namespace manifold::plugin
