// Implementation of per-invocation Kubernetes access: lazy transport, bounded calls, API-time and
// request accounting.
#include "engine/kube_access.h"

#include "cni/error.h"
#include "engine/services.h"
#include "http/tls_session_store.h"

namespace manifold::engine {
namespace {

/// With apiPipelining off: the transport's requests and streams, a batch sent one request at a time
/// (HttpTransport's default), for proxies in front of the API server that mishandle pipelining.
class OneAtATime final : public http::HttpTransport {
 public:
  explicit OneAtATime(std::unique_ptr<http::HttpTransport> inner) : inner_(std::move(inner)) {}
  http::HttpResponse send(const http::HttpRequest& request, std::chrono::milliseconds timeout) override {
    return inner_->send(request, timeout);
  }
  http::StreamResult stream(const http::HttpRequest& request, const http::StreamOptions& options,
                            const std::function<bool(std::string_view)>& on_data) override {
    return inner_->stream(request, options, on_data);
  }

 private:
  std::unique_ptr<http::HttpTransport> inner_;
};

}  // namespace

KubeAccess::KubeAccess(const Services& services, const cni::MetaConfig& config, std::string pod_uid)
    : services_(services), config_(config), pod_uid_(std::move(pod_uid)) {
  if (services_.find_auth) auth_ = services_.find_auth(config.kubeconfig);
}

KubeAccess::~KubeAccess() = default;

k8s::ApiClient KubeAccess::client() {
  if (!auth_) throw cni::CniError(cni::ErrorCode::Internal, "Kubernetes API used without credentials");
  if (!transport_) {
    auto direct = [this] {
      auto t = services_.open_transport(*auth_, http::tls_session_dir(config_.cni_dir));
      if (!config_.api_pipelining) t = std::make_unique<OneAtATime>(std::move(t));
      return t;
    };
    transport_ = config_.agent_socket.empty() || !services_.open_relay
                     ? direct()
                     : services_.open_relay(config_.agent_socket, *auth_, pod_uid_, direct);
  }
  using std::chrono::milliseconds;
  auto left = milliseconds(config_.api_lookup_deadline_ms) - spent_;
  if (left <= milliseconds(0))
    throw cni::CniError(cni::ErrorCode::Kubernetes,
                        "Kubernetes API calls of this invocation used up their total bound of " +
                            std::to_string(config_.api_lookup_deadline_ms) + " ms (apiTimeouts.total)");
  http::RetryPolicy policy;
  policy.max_attempts = config_.api_attempts;
  policy.request_timeout = std::min(milliseconds(config_.api_request_timeout_ms), left);
  policy.total_deadline = std::min(milliseconds(config_.api_call_deadline_ms), left);
  policy.max_backoff = std::min(policy.max_backoff, policy.total_deadline);
  return k8s::ApiClient(*transport_, *auth_, policy, *services_.sleeper, *services_.clock);
}

template <class F>
auto KubeAccess::call(F&& f) {
  k8s::ApiClient c = client();
  struct Count {
    k8s::ApiClient& c;
    int& total;
    util::Clock& clock;
    std::chrono::steady_clock::time_point start;
    std::chrono::milliseconds& spent;
    ~Count() {
      total += c.requests_made();
      spent += std::chrono::duration_cast<std::chrono::milliseconds>(clock.now() - start);
    }
  } count{c, requests_, *services_.clock, services_.clock->now(), spent_};
  return f(c);
}

k8s::Pod KubeAccess::get_pod(const std::string& ns, const std::string& name) {
  return k8s::decode_pod(call([&](k8s::ApiClient& c) { return c.get_pod(ns, name); }), ns, name);
}

Json KubeAccess::get_nad(const std::string& ns, const std::string& name) {
  return call([&](k8s::ApiClient& c) { return c.get_nad(ns, name); });
}

std::vector<k8s::ApiOutcome> KubeAccess::get_nads(const std::vector<k8s::ObjectKey>& keys) {
  return call([&](k8s::ApiClient& c) { return c.get_nads(keys); });
}

Json KubeAccess::get_resource_claim(const std::string& ns, const std::string& name) {
  return call([&](k8s::ApiClient& c) { return c.get_resource_claim(ns, name); });
}

Json KubeAccess::list_resource_slices(const std::string& node, const std::string& driver) {
  return call([&](k8s::ApiClient& c) { return c.list_resource_slices(node, driver); });
}

Json KubeAccess::list_multi_network_policies(const std::string& ns) {
  return call([&](k8s::ApiClient& c) { return c.list_multi_network_policies(ns); });
}

Json KubeAccess::list_page(const std::string& resource, const std::string& collection, const std::string& query,
                           std::string_view list_kind, const std::string& accept, int limit,
                           const std::string& continue_token) {
  return call([&](k8s::ApiClient& c) {
    return c.list_page(resource, collection, query, list_kind, accept, limit, continue_token);
  });
}

Json KubeAccess::update_pod_status(const std::string& ns, const std::string& name, const Json& pod) {
  return call([&](k8s::ApiClient& c) { return c.update_pod_status(ns, name, pod); });
}

void KubeAccess::create_event(const std::string& ns, const Json& event) {
  call([&](k8s::ApiClient& c) {
    c.create_event(ns, event);  // sent once: an event is never retried (ApiClient)
    return 0;
  });
}

std::vector<k8s::ApiOutcome> KubeAccess::create_events(const std::string& ns, const std::vector<Json>& events) {
  return call([&](k8s::ApiClient& c) { return c.create_events(ns, events); });
}

std::vector<k8s::ApiOutcome> KubeAccess::update_pod_status_with_events(const std::string& ns, const std::string& name,
                                                                       const Json& pod,
                                                                       const std::vector<Json>& events) {
  return call([&](k8s::ApiClient& c) { return c.update_pod_status_with_events(ns, name, pod, events); });
}

}  // namespace manifold::engine
