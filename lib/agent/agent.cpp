// Implementation of the agent's loop: list, watch, handle events, retry, back off.
#include "agent/agent.h"

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cni/error.h"
#include "http/tls_session_store.h"
#include "k8s/pod.h"
#include "k8s/selection.h"
#include "policysync/policy_agent.h"
#include "util/log.h"

namespace manifold::agent {

namespace {

using Clock = std::chrono::steady_clock;

using k8s::metadata_string;

/// `object` decoded as a pod; nullopt (logged) when it is not one the agent can work with.
std::optional<k8s::Pod> decoded_pod(const Json& object) {
  try {
    return k8s::decode_pod(object);
  } catch (const cni::CniError& e) {
    util::log_error("agent: ignoring a pod: ", e.msg());
    return std::nullopt;
  }
}

ReconcilerOptions reconciler_options(const AgentOptions& agent) {
  return ReconcilerOptions{.cni_dir = agent.cni_dir, .kubeconfig = agent.kubeconfig, .conf_dir = agent.conf_dir};
}

policysync::PolicyAgentOptions policy_options(const AgentOptions& agent) {
  policysync::PolicyAgentOptions o;
  o.node_name = agent.node_name;
  o.cni_dir = agent.cni_dir;
  o.tls_session_dir = http::tls_session_dir(agent.cni_dir);
  o.views.watch_timeout_seconds = agent.watch_timeout_seconds;
  o.views.max_backoff = agent.max_backoff;
  return o;
}

}  // namespace

Agent::Agent(const engine::Services& services, AgentOptions options, AgentMetrics& metrics)
    : services_(services),
      options_(std::move(options)),
      metrics_(metrics),
      rate_limit_(std::make_shared<http::RequestRateLimit>(options_.api_requests_per_second, options_.api_burst,
                                                           services.clock, services.sleeper)),
      limited_(rate_limited(services, rate_limit_)),
      reconciler_(limited_, reconciler_options(options_)) {
  set_health(false, "not synced with the API server yet");
  beat();
}

void Agent::beat() { heartbeat_.store(services_.clock->now().time_since_epoch().count()); }

AgentHealth Agent::liveness() const {
  const Clock::time_point last{Clock::duration(heartbeat_.load())};
  const Clock::duration silent = services_.clock->now() - last;
  if (silent <= options_.liveness_bound) return {true, ""};
  return {false, "the agent's loop has not run for " +
                     std::to_string(std::chrono::duration_cast<std::chrono::seconds>(silent).count()) + " s"};
}

engine::Services Agent::rate_limited(const engine::Services& services,
                                     const std::shared_ptr<http::RequestRateLimit>& limit) {
  engine::Services out = services;
  out.open_transport = [open = services.open_transport, limit](const http::ClusterAuth& auth,
                                                               const std::string& tls_session_dir) {
    return std::make_unique<http::RateLimitedTransport>(open(auth, tls_session_dir), limit);
  };
  return out;
}

AgentHealth Agent::health() const {
  std::lock_guard<std::mutex> lock(health_mu_);
  return health_;
}

void Agent::set_health(bool ok, std::string reason) {
  std::lock_guard<std::mutex> lock(health_mu_);
  health_.ok = ok;
  health_.reason = std::move(reason);
}

std::chrono::milliseconds Agent::backoff(int failures) {
  http::RetryPolicy policy;
  policy.initial_backoff = options_.initial_backoff;
  policy.max_backoff = options_.max_backoff;
  return http::backoff_delay(policy, std::max(failures, 1), jitter_.next());
}

bool Agent::wait(std::chrono::milliseconds duration) {
  const Clock::time_point end = services_.clock->now() + duration;
  while (!stop_()) {
    run_due_retries();
    const Clock::time_point now = services_.clock->now();
    if (now >= end) return true;
    services_.sleeper->sleep_for(
        std::min(options_.tick, std::chrono::duration_cast<std::chrono::milliseconds>(end - now)));
  }
  return false;
}

// Long because it is the loop's whole life: the checks, the API client, the policy part beside it
// and the list/watch states.
int Agent::run(const std::function<bool()>& stop) {
  stop_ = stop;
  if (!k8s::is_dns1123_subdomain(options_.node_name)) {
    util::log_error("agent: the node name \"", options_.node_name,
                    "\" is not a DNS-1123 subdomain (set --node-name or NODE_NAME from the downward API)");
    return 1;
  }
  std::optional<http::ClusterAuth> auth;
  try {
    auth = services_.find_auth(options_.kubeconfig);
  } catch (const cni::CniError& e) {
    util::log_error("agent: ", e.msg());
    return 1;
  }
  if (!auth) {
    util::log_error("agent: no Kubernetes credentials (no --kubeconfig and not running in a cluster)");
    return 1;
  }
  transport_ = limited_.open_transport(*auth, http::tls_session_dir(options_.cni_dir));
  api_ =
      std::make_unique<k8s::ApiClient>(*transport_, *auth, http::RetryPolicy{}, *services_.sleeper, *services_.clock);
  util::log_verbose("agent: watching the pods of node ", options_.node_name);
  // MultiNetworkPolicy is kept current beside the pod loop, on threads that stop when run() returns.
  const auto policy = policysync::start_policy_agent(limited_, *auth, options_.conf_dir, policy_options(options_));
  int failures = 0;
  bool listed = false;
  while (!stop_()) {
    if (!listed) {
      listed = list_and_reconcile();
      count_api_requests();
      if (!listed) {
        if (!wait(backoff(++failures))) break;
        continue;
      }
      failures = 0;
    }
    const WatchEnd end = watch_and_publish();
    count_api_requests();
    switch (end) {
      case WatchEnd::Resume:
        failures = 0;
        break;
      case WatchEnd::Empty:  // ended at once with nothing: wait as after a failure, without blaming health
        if (!wait(backoff(++failures))) return 0;
        break;
      case WatchEnd::Relist:
        metrics_.watch_restarts_expired.inc();
        listed = false;
        break;
      case WatchEnd::Backoff:
        metrics_.watch_restarts_error.inc();
        if (++failures >= 3) set_health(false, "the pod watch keeps failing; retrying");
        if (!wait(backoff(failures))) return 0;
        if (resource_version_.empty()) listed = false;
        break;
      case WatchEnd::Stopped:
        return 0;
    }
  }
  util::log_verbose("agent: stopped");
  return 0;
}

void Agent::count_api_requests() {
  metrics_.api_requests.inc(api_->requests_made() - counted_requests_);
  counted_requests_ = api_->requests_made();
  const std::uint64_t throttled = rate_limit_->throttled();
  metrics_.api_throttled.inc(static_cast<double>(throttled - counted_throttled_));
  counted_throttled_ = throttled;
}

bool Agent::list_and_reconcile() {
  Json list;
  try {
    list = api_->list_node_pods(options_.node_name);
  } catch (const cni::CniError& e) {
    util::log_error("agent: cannot list the pods of node ", options_.node_name, ": ", e.msg());
    set_health(false, "cannot list pods: " + e.msg());
    return false;
  }
  resource_version_ = metadata_string(list, "resourceVersion");
  std::map<std::string, PodState> fresh;
  for (const Json& item : list["items"]) {
    if (!item.is_object()) continue;
    const std::string uid = metadata_string(item, "uid");
    if (uid.empty()) continue;
    std::optional<k8s::Pod> pod = decoded_pod(item);
    if (!pod) continue;
    PodState state;
    if (auto old = pods_.find(uid); old != pods_.end()) state = std::move(old->second);
    state.pod = std::move(*pod);
    fresh.emplace(uid, std::move(state));
  }
  pods_ = std::move(fresh);
  publish_relist();
  metrics_.pods_tracked.set(static_cast<double>(pods_.size()));
  util::log_verbose("agent: listed ", pods_.size(), " pod(s) at resourceVersion ", resource_version_);

  // Every cached sandbox is reconciled after a (re)list: whatever happened while the agent was not
  // watching (or not running) is caught up.
  std::vector<CachedSandbox> sandboxes;
  try {
    sandboxes = reconciler_.cached_sandboxes();
  } catch (const cni::CniError& e) {
    util::log_error("agent: cannot read the cache in ", options_.cni_dir, ": ", e.msg());
  }
  metrics_.sandboxes_tracked.set(static_cast<double>(sandboxes.size()));
  std::set<std::pair<std::string, std::string>> cached;  // namespace, name
  for (const CachedSandbox& s : sandboxes) cached.emplace(s.pod.namespace_, s.pod.name);
  for (auto& [uid, state] : pods_) {
    if (stop_()) break;
    if (cached.count({state.pod.namespace_, state.pod.name}) != 0) reconcile_pod(uid);
  }
  set_health(true, "");
  return true;
}

Agent::WatchEnd Agent::watch_once() {
  k8s::WatchDecoder decoder;
  http::StreamOptions so;
  so.open_timeout = options_.open_timeout;
  so.idle_timeout = options_.idle_timeout;
  so.tick = options_.tick;
  so.on_tick = [this] {
    run_due_retries();
    count_api_requests();  // the request counts stay current while a watch is open
    return !stop_();
  };
  pending_end_ = WatchEnd::Resume;
  watch_events_ = 0;
  const Clock::time_point start = services_.clock->now();
  try {
    http::StreamEnd end = api_->watch_node_pods(
        options_.node_name, resource_version_, options_.watch_timeout_seconds, so, [&](std::string_view bytes) {
          try {
            for (const k8s::WatchEvent& event : decoder.feed(bytes))
              if (!handle(event)) return false;
          } catch (const cni::CniError& e) {
            util::log_error("agent: the pod watch sent something that is not a watch event: ", e.msg(),
                            "; reconnecting");
            pending_end_ = WatchEnd::Backoff;
            return false;
          }
          return !stop_();
        });
    if (stop_()) return WatchEnd::Stopped;
    if (end == http::StreamEnd::Stopped) return pending_end_;
    if (watch_events_ == 0 && services_.clock->now() - start < options_.quick_watch) {
      metrics_.watch_restarts_empty.inc();
      return WatchEnd::Empty;
    }
    metrics_.watch_restarts_closed.inc();
    set_health(true, "");
    return WatchEnd::Resume;
  } catch (const k8s::ApiError& e) {
    if (e.http_status() == 410) {
      util::log_verbose("agent: resourceVersion ", resource_version_, " expired; listing again");
      return WatchEnd::Relist;
    }
    util::log_error("agent: pod watch failed: ", e.msg());
    return stop_() ? WatchEnd::Stopped : WatchEnd::Backoff;
  } catch (const cni::CniError& e) {
    util::log_error("agent: pod watch failed: ", e.msg());
    return stop_() ? WatchEnd::Stopped : WatchEnd::Backoff;
  }
}

bool Agent::handle(const k8s::WatchEvent& event) {
  ++watch_events_;
  if (event.type == "ERROR") {
    const int code = event.object.value("code", 0);
    const std::string message = event.object.value("message", std::string());
    if (code == 410) {
      util::log_verbose("agent: the watch expired (", message, "); listing again");
      pending_end_ = WatchEnd::Relist;
    } else {
      util::log_error("agent: the pod watch reported an error (", code, "): ", message);
      pending_end_ = WatchEnd::Backoff;
    }
    return false;
  }
  const std::string rv = metadata_string(event.object, "resourceVersion");
  if (event.type == "BOOKMARK") {
    if (!rv.empty()) resource_version_ = rv;
    publish_pod("", nullptr);
    return true;
  }
  const std::string uid = metadata_string(event.object, "uid");
  if (uid.empty() || metadata_string(event.object, "name").empty() ||
      metadata_string(event.object, "namespace").empty()) {
    util::log_error("agent: a ", event.type, " event carries no pod (no metadata.uid/name/namespace); reconnecting");
    pending_end_ = WatchEnd::Backoff;
    return false;
  }
  if (!rv.empty()) resource_version_ = rv;
  if (event.type == "DELETED") {
    pods_.erase(uid);
    publish_pod(uid, nullptr);
  } else if (std::optional<k8s::Pod> pod = decoded_pod(event.object)) {
    PodState& state = pods_[uid];
    state.pod = std::move(*pod);
    publish_pod(uid, &state.pod);
    reconcile_pod(uid);
  } else {
    publish_pod(uid, nullptr);  // a copy older than this event must not answer
  }
  metrics_.pods_tracked.set(static_cast<double>(pods_.size()));
  return !stop_();
}

void Agent::reconcile_pod(const std::string& uid) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return;
  PodState& state = it->second;
  const std::string annotation = state.pod.annotation(k8s::kNetworksAnnotation);
  if (state.invalid_annotation && *state.invalid_annotation == annotation) return;  // told once; waits for a change
  state.invalid_annotation.reset();
  beat();
  const Clock::time_point start = services_.clock->now();
  ReconcileOutcome outcome =
      reconciler_.reconcile(state.pod, state.told_annotation == annotation ? state.told_failure : std::string());
  const Clock::time_point end = services_.clock->now();
  beat();
  state.more = outcome.more && outcome.result == ReconcileResult::Changed;
  // A retry failing the same way is logged, not told again (a NAD that does not exist yet).
  state.told_failure = outcome.result == ReconcileResult::Failed ? outcome.message : std::string();
  state.told_annotation = annotation;
  metrics_.api_requests.inc(outcome.api_requests);
  if (outcome.result != ReconcileResult::NotHere)
    metrics_.reconcile_duration.observe(std::chrono::duration<double>(end - start).count());
  switch (outcome.result) {
    case ReconcileResult::NotHere:
      state.failures = 0;
      return;
    case ReconcileResult::Unchanged:
      metrics_.reconciles_unchanged.inc();
      state.failures = 0;
      return;
    case ReconcileResult::Changed:
      metrics_.reconciles_changed.inc();
      metrics_.attachments_added.inc(outcome.attached);
      metrics_.attachments_removed.inc(outcome.detached);
      state.failures = 0;
      return;
    case ReconcileResult::Invalid:
      metrics_.reconciles_invalid.inc();
      state.invalid_annotation = annotation;
      state.failures = 0;
      return;
    case ReconcileResult::Failed:
      metrics_.reconciles_failed.inc();
      if (outcome.failed_step == "detach") {
        metrics_.detach_failed.inc();
      } else if (outcome.failed_step == "attach") {
        metrics_.attach_failed.inc();
      }
      ++state.failures;
      state.retry_at = end + backoff(state.failures);
      return;
  }
}

void Agent::run_due_retries() {
  beat();
  const Clock::time_point now = services_.clock->now();
  // Pods take turns from the one after the last served, so a pod with much to change (or a slow
  // one) never keeps the others waiting for more than one turn of its own.
  std::vector<std::string> due;
  auto collect = [&](auto from, auto to) {
    for (auto it = from; it != to; ++it)
      if (it->second.more || (it->second.failures > 0 && it->second.retry_at <= now)) due.push_back(it->first);
  };
  const auto after = pods_.upper_bound(last_served_);
  collect(after, pods_.end());
  collect(pods_.begin(), after);
  for (const std::string& uid : due) {
    if (stop_()) return;
    if (uid != due.front() && services_.clock->now() - now >= options_.retry_budget) return;
    last_served_ = uid;
    reconcile_pod(uid);
  }
}

}  // namespace manifold::agent
