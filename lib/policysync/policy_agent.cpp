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
  for (View& v : views_) v.stop.store(true);
  if (worker_.joinable()) worker_.join();  // first: the worker starts and stops views
  for (View& v : views_)
    if (v.thread.joinable()) v.thread.join();
}

void PolicyAgent::run_view(ViewIndex index, bool wanted) {
  View& v = views_[index];
  if (wanted == v.running) return;
  v.running = wanted;
  if (wanted) {
    v.stop.store(false);
    v.watch->reset();
    v.thread = std::thread([&v] { v.watch->run(v.stop); });
    return;
  }
  v.stop.store(true);
  if (v.thread.joinable()) v.thread.join();
  std::lock_guard<std::mutex> lock(mu_);  // what it held is no longer needed
  if (index == kPods) sync_.peers().clear_pods();
  if (index == kNamespaces) sync_.peers().clear_namespaces();
}

bool PolicyAgent::views_synced() const {
  return std::all_of(std::begin(views_), std::end(views_),
                     [](const View& v) { return !v.running || v.watch->synced(); });
}

void PolicyAgent::changed() {
  std::lock_guard<std::mutex> lock(mu_);
  dirty_ = true;
  wake_.notify_all();
}

std::unique_ptr<PolicyAgent> start_policy_agent(const engine::Services& services, const http::ClusterAuth& auth,
                                                const std::string& conf_dir, PolicyAgentOptions options) {
  if (!policy_enabled_on_node(services, conf_dir)) return nullptr;
  auto agent = std::make_unique<PolicyAgent>(services, auth, std::move(options));
  agent->start();
  return agent;
}

void PolicyAgent::start() {
  util::log_verbose("policy sync: watching MultiNetworkPolicies and the pods of node ", options_.node_name);
  run_view(kPolicies, true);
  run_view(kLocalPods, true);
  worker_ = std::thread([this] { work(); });
}

PolicyAgentStatus PolicyAgent::status() const {
  PolicyAgentStatus s;
  s.synced = views_synced();
  for (const View& v : views_) s.streams += v.running && v.watch->watching() ? 1 : 0;
  std::lock_guard<std::mutex> lock(mu_);
  s.pods = const_cast<PolicySync&>(sync_).peers().pods();
  s.policies = sync_.policies();
  s.syncs = syncs_;
  return s;
}

void PolicyAgent::work() {
  Clock::time_point next_full = services_.clock->now() + options_.resync;
  bool listing = false;  // a view is listing: wait a tick, not for a change (one may be pending)
  while (!stop_.load()) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (listing)
        wake_.wait_for(lock, options_.views.tick);
      else
        wake_.wait_for(lock, options_.views.tick, [this] { return dirty_ || stop_.load(); });
      if (stop_.load()) return;
    }
    listing = !views_synced();
    if (listing) continue;
    const bool force = services_.clock->now() >= next_full;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!dirty_ && !force) continue;
    }
    try {
      listing = !pass(force);
      if (force && !listing) next_full = services_.clock->now() + options_.resync;
    } catch (const cni::CniError& e) {
      util::log_error("policy sync: ", e.msg());
    }
  }
}

bool PolicyAgent::pass(bool force) {
  // Whatever changes from here on (a policy, the cache, a peer) marks the next pass: the flag is
  // cleared before anything is read.
  {
    std::lock_guard<std::mutex> lock(mu_);
    dirty_ = false;
  }
  const std::vector<LocalAttachment> attachments = local_attachments(*cache_);
  ViewNeeds needs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    needs = sync_.needs(attachments);
  }
  // A view that starts now is listed before the next pass (views_synced); one no longer needed stops.
  run_view(kPods, needs.pods);
  run_view(kNamespaces, needs.namespaces);
  run_view(kNads, needs.nads);
  if (!views_synced()) {
    std::lock_guard<std::mutex> lock(mu_);
    dirty_ = true;  // nothing applied yet: the pass is owed
    return false;
  }
  std::vector<Json> events;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const SyncResult r = sync_.sync(attachments, force);
    ++syncs_;
    if (r.changed > 0)
      util::log_verbose("policy sync: ", r.evaluated, " attachment(s) evaluated, ", r.changed, " changed, ", r.restored,
                        " famil", r.restored == 1 ? "y" : "ies", " restored, ", r.failed, " failed");
    events = warnings_.take(r.invalid);
  }
  if (!events.empty()) send_warnings(events);
  return true;
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
