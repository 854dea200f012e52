// Implementation of the policy part of the agent: the four views and their sinks, and the worker.
#include "policysync/policy_agent.h"

#include <algorithm>

#include "cni/error.h"
#include "k8s/api_client.h"
#include "policy/policy.h"
#include "policy/policy_error.h"
#include "engine/policy_step.h"
#include "policysync/local_attachments.h"
#include "util/log.h"

namespace manifold::policysync {

namespace {

using Clock = std::chrono::steady_clock;

std::string meta(const Json& object, const char* key) { return json_string_at(object, {"metadata", key}); }

// Reads an object into the sync; an object that cannot be read is logged and skipped.
template <typename F>
void guarded(const char* what, const Json& object, F&& f) {
  try {
    f();
  } catch (const policy::PolicyError& e) {
    util::log_warning("policy sync: ignoring ", what, " ", meta(object, "namespace"), "/", meta(object, "name"), ": ",
                      e.what());
  } catch (const cni::CniError& e) {
    util::log_warning("policy sync: ignoring ", what, " ", meta(object, "namespace"), "/", meta(object, "name"), ": ",
                      e.msg());
  }
}

}  // namespace

PolicyAgent::PolicyAgent(const engine::Services& services, http::ClusterAuth auth, PolicyAgentOptions options)
    : services_(services),
      auth_(std::move(auth)),
      options_(std::move(options)),
      cache_(services.open_cache(options_.cni_dir)),
      sync_(real_applier(services, *cache_)) {
  add_views();
}

PolicyAgent::~PolicyAgent() {
  stop_.store(true);
  wake_.notify_all();
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
}

void PolicyAgent::changed() {
  std::lock_guard<std::mutex> lock(mu_);
  dirty_ = true;
  wake_.notify_all();
}

// Long because it lists the four views, each with its sink, in one place.
void PolicyAgent::add_views() {
  auto add = [this](CollectionSpec spec, CollectionSink sink) {
    sink.changed = [this] { changed(); };
    TransportFactory open = [this] { return services_.open_transport(auth_, options_.tls_session_dir); };
    views_.push_back(std::make_unique<CollectionWatch>(std::move(spec), std::move(sink), options_.views, open, auth_,
                                                       *services_.sleeper, *services_.clock));
  };
  CollectionSink policies;
  policies.relist_begin = [this] {
    std::lock_guard<std::mutex> l(mu_);
    sync_.begin_policies_relist();
  };
  policies.relist_end = [this] {
    std::lock_guard<std::mutex> l(mu_);
    sync_.end_policies_relist();
  };
  policies.put = [this](const Json& o) {
    policy::MultiNetworkPolicy p = policy::read_policy(o);  // never throws: an invalid one closes
    if (p.ns.empty() || p.name.empty()) return;
    std::lock_guard<std::mutex> l(mu_);
    sync_.put_policy(std::move(p));
  };
  policies.remove = [this](const Json& o) {
    std::lock_guard<std::mutex> l(mu_);
    sync_.remove_policy(meta(o, "namespace"), meta(o, "name"));
  };
  add({"multi-networkpolicies", "/apis/k8s.cni.cncf.io/v1beta1/multi-networkpolicies", "", "MultiNetworkPolicyList",
       false},
      std::move(policies));

  CollectionSink namespaces;
  namespaces.relist_begin = [this] {
    std::lock_guard<std::mutex> l(mu_);
    sync_.peers().begin_namespaces_relist();
  };
  namespaces.relist_end = [this] {
    std::lock_guard<std::mutex> l(mu_);
    sync_.peers().end_namespaces_relist();
  };
  namespaces.put = [this](const Json& o) {
    guarded("namespace", o, [&] {
      auto [name, labels] = policy::read_namespace(o);
      std::lock_guard<std::mutex> l(mu_);
      sync_.peers().put_namespace(name, labels);
    });
  };
  namespaces.remove = [this](const Json& o) {
    std::lock_guard<std::mutex> l(mu_);
    sync_.peers().remove_namespace(meta(o, "name"));
  };
  add({"namespaces", "/api/v1/namespaces", "", "PartialObjectMetadataList", true}, std::move(namespaces));

  CollectionSink pods;
  pods.relist_begin = [this] {
    std::lock_guard<std::mutex> l(mu_);
    sync_.peers().begin_pods_relist();
  };
  pods.relist_end = [this] {
    std::lock_guard<std::mutex> l(mu_);
    sync_.peers().end_pods_relist();
  };
  pods.put = [this](const Json& o) {
    guarded("pod", o, [&] {
      policy::PodView view = policy::read_pod_view(o);
      std::lock_guard<std::mutex> l(mu_);
      sync_.peers().put_pod(view.ns, view.name, view.labels, view.ips);
    });
  };
  pods.remove = [this](const Json& o) {
    std::lock_guard<std::mutex> l(mu_);
    sync_.peers().remove_pod(meta(o, "namespace"), meta(o, "name"));
  };
  add({"pods", "/api/v1/pods", "", "PartialObjectMetadataList", true}, std::move(pods));

  CollectionSink local;
  local.put = [this](const Json& o) {
    guarded("pod", o, [&] {
      policy::PodView view = policy::read_pod_view(o);
      std::lock_guard<std::mutex> l(mu_);
      warnings_.set_pod(view.ns, view.name, meta(o, "uid"), meta(o, "resourceVersion"));
      sync_.put_local_pod(std::move(view));
    });
  };
  local.remove = [this](const Json& o) {
    std::lock_guard<std::mutex> l(mu_);
    warnings_.remove_pod(meta(o, "namespace"), meta(o, "name"));
    sync_.remove_local_pod(meta(o, "namespace"), meta(o, "name"));
  };
  add({"pods", "/api/v1/pods", "fieldSelector=spec.nodeName%3D" + options_.node_name, "PodList", false},
      std::move(local));
}

std::unique_ptr<PolicyAgent> start_policy_agent(const engine::Services& services, const http::ClusterAuth& auth,
                                                const std::string& conf_dir, PolicyAgentOptions options) {
  if (!policy_enabled_on_node(services, conf_dir)) return nullptr;
  auto agent = std::make_unique<PolicyAgent>(services, auth, std::move(options));
  agent->start();
  return agent;
}

void PolicyAgent::start() {
  util::log_verbose("policy sync: watching MultiNetworkPolicies, namespaces and pods for node ", options_.node_name);
  for (auto& view : views_) threads_.emplace_back([this, v = view.get()] { v->run(stop_); });
  threads_.emplace_back([this] { work(); });
}

PolicyAgentStatus PolicyAgent::status() const {
  PolicyAgentStatus s;
  s.synced = std::all_of(views_.begin(), views_.end(), [](const auto& v) { return v->synced(); });
  for (const auto& v : views_) s.streams += v->watching() ? 1 : 0;
  std::lock_guard<std::mutex> lock(mu_);
  s.pods = const_cast<PolicySync&>(sync_).peers().pods();
  s.policies = sync_.policies();
  s.syncs = syncs_;
  return s;
}

void PolicyAgent::work() {
  Clock::time_point next_full = services_.clock->now() + options_.resync;
  while (!stop_.load()) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait_for(lock, options_.views.tick, [this] { return dirty_ || stop_.load(); });
      if (stop_.load()) return;
    }
    if (!std::all_of(views_.begin(), views_.end(), [](const auto& v) { return v->synced(); })) continue;
    const bool force = services_.clock->now() >= next_full;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!dirty_ && !force) continue;
    }
    try {
      pass(force);
    } catch (const cni::CniError& e) {
      util::log_error("policy sync: ", e.msg());
    }
    if (force) next_full = services_.clock->now() + options_.resync;
  }
}

void PolicyAgent::resolve_networks(const std::vector<LocalAttachment>& attachments) {
  std::set<std::string> unknown;
  {
    std::lock_guard<std::mutex> lock(mu_);
    unknown = sync_.unknown_networks(attachments);
  }
  if (unknown.empty()) return;
  std::vector<k8s::ObjectKey> keys;
  for (const std::string& n : unknown) keys.push_back({n.substr(0, n.find('/')), n.substr(n.find('/') + 1)});
  std::unique_ptr<http::HttpTransport> transport = services_.open_transport(auth_, options_.tls_session_dir);
  k8s::ApiClient api(*transport, auth_, http::RetryPolicy{}, *services_.sleeper, *services_.clock);
  const std::vector<k8s::ApiOutcome> outcomes = api.get_nads(keys);
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t i = 0;
  for (const std::string& n : unknown) {
    const k8s::ApiOutcome& outcome = outcomes.at(i++);
    if (!outcome.error) {
      sync_.set_network_exists(n, true);
      continue;
    }
    try {
      std::rethrow_exception(outcome.error);
    } catch (const k8s::ApiError& e) {
      if (e.not_found()) sync_.set_network_exists(n, false);  // others: unknown, so missing, asked again
    } catch (const cni::CniError&) {}
  }
}

void PolicyAgent::pass(bool force) {
  const std::vector<LocalAttachment> attachments = local_attachments(*cache_);
  if (force) {
    std::lock_guard<std::mutex> lock(mu_);
    sync_.forget_networks();
  }
  resolve_networks(attachments);
  std::vector<Json> events;
  {
    std::lock_guard<std::mutex> lock(mu_);
    dirty_ = false;
    const SyncResult r = sync_.sync(attachments, force);
    ++syncs_;
    if (r.changed > 0)
      util::log_verbose("policy sync: ", r.evaluated, " attachment(s) evaluated, ", r.changed, " changed, ", r.restored,
                        " famil", r.restored == 1 ? "y" : "ies", " restored, ", r.failed, " failed");
    events = warnings_.take(r.invalid);
  }
  if (!events.empty()) send_warnings(events);
}

// Best effort, as ADD's: an event that cannot be sent is logged (the pod's rules are closed anyway).
void PolicyAgent::send_warnings(const std::vector<Json>& events) {
  try {
    std::unique_ptr<http::HttpTransport> transport = services_.open_transport(auth_, options_.tls_session_dir);
    k8s::ApiClient api(*transport, auth_, http::RetryPolicy{}, *services_.sleeper, *services_.clock);
    for (const Json& event : events) api.create_event(json_string_at(event, {"metadata", "namespace"}), event);
  } catch (const cni::CniError& e) {
    util::log_warning("policy sync: could not send the ", engine::kInvalidPolicyReason, " event (", e.msg(), ")");
  }
}
}  // namespace manifold::policysync
