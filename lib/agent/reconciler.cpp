// Implementation of the reconcile of one pod: find its complete entries, and for each, under the
// container's lock, plan every attachment before anything changes, detach, attach in a
// transaction, write the network-status when it differs, send the events.
#include "agent/reconciler.h"

#include <algorithm>
#include <optional>

#include "agent/hotplug_guard.h"
#include "agent/network_diff.h"
#include "cni/error.h"
#include "cni/netconf.h"
#include "engine/detach.h"
#include "engine/entry_state.h"
#include "engine/kube_access.h"
#include "engine/plan.h"
#include "engine/pod_networks.h"
#include "engine/pod_status.h"
#include "engine/session.h"
#include "engine/transaction.h"
#include "k8s/isolation.h"
#include "k8s/network_status.h"
#include "k8s/pod.h"
#include "k8s/selection.h"
#include "util/log.h"

namespace manifold::agent {

namespace {

using cni::CniError;
using cni::ErrorCode;

/// A view of the reconciler's one API connection, for a KubeAccess that owns its transport.
class SharedTransport final : public http::HttpTransport {
 public:
  explicit SharedTransport(std::shared_ptr<http::HttpTransport> transport) : transport_(std::move(transport)) {}
  http::HttpResponse send(const http::HttpRequest& request, std::chrono::milliseconds timeout) override {
    return transport_->send(request, timeout);
  }

 private:
  std::shared_ptr<http::HttpTransport> transport_;
};

/// A reconcile step that cannot succeed before the annotation changes.
struct InvalidRequest {
  std::string message;
  std::string reason = "InvalidNetworks";  ///< of the Warning event
};

/// Removes the attachments at `indices` (ascending) of `record` from the pod: scoping, then the
/// delegate's DEL. Those whose removal failed stay recorded; `removed` gets the others. Saves the
/// record, then throws the first failure.
void detach(engine::Session& session, const engine::Services& services, const cni::Invocation& inv,
            const std::string& netns, store::ContainerRecord& record, const std::vector<std::size_t>& indices,
            std::vector<store::AttachmentRecord>& removed) {
  store::ContainerRecord gone = record;
  gone.attachments.clear();
  for (std::size_t i : indices) gone.attachments.push_back(record.attachments[i]);
  engine::ScopingSession scoping(services, netns);
  std::optional<CniError> error;
  auto failed = engine::delete_attachments(session, inv, gone, netns, error, &scoping.env);
  auto is_failed = [&](const store::AttachmentRecord& a) {
    return std::any_of(failed.begin(), failed.end(), [&](const auto& f) { return f.ifname == a.ifname; });
  };
  std::vector<store::AttachmentRecord> kept;
  for (std::size_t i = 0; i < record.attachments.size(); ++i) {
    const auto& a = record.attachments[i];
    const bool detaching = std::find(indices.begin(), indices.end(), i) != indices.end();
    if (!detaching || is_failed(a)) {
      kept.push_back(a);
    } else {
      removed.push_back(a);
    }
  }
  record.attachments = std::move(kept);
  session.cache->save(record);
  if (error) throw *error;
}

/// Sends the RemovedInterface events, then the AddedInterface events (as ADD sends them) of one
/// reconcile; best effort, and the first failure ends the sending. `entry` is the entry they
/// belong to.
void send_change_events(engine::KubeAccess& kube, const cni::PodRef& ref, const k8s::Pod& pod,
                        const store::ContainerRecord& entry, const std::vector<store::AttachmentRecord>& removed,
                        const std::vector<store::AttachmentRecord>& added) {
  std::size_t n = 0;
  for (const auto& a : removed)
    if (!engine::send_event(kube, ref, pod, "RemovedInterface", "Normal", "Remove " + a.ifname + " from " + a.name,
                            n++))
      return;
  if (added.empty()) return;
  store::ContainerRecord gained = entry;
  gained.attachments = added;
  engine::send_added_events(kube, ref, pod, gained);
}

/// One entry's hot-plug in progress: what it works with, and what it changed so far.
struct Change {
  const engine::Services& services;
  engine::Session& session;
  engine::KubeAccess& kube;
  const cni::Invocation& inv;  ///< the ADD the entry records
  const cni::PodRef ref;
  const k8s::Pod& pod;
  const std::string netns;                       ///< the sandbox's namespace, which exists
  store::ContainerRecord record;                 ///< the entry as it stands
  std::vector<store::AttachmentRecord> removed;  ///< detached so far
  std::vector<store::AttachmentRecord> added;    ///< attached (after the commit)
};

/// Applies `diff` to the pod: every attachment planned before anything changes (a default-route
/// request is invalid here), then the detachments, then the attachments in one transaction. `step`
/// tells which part failed.
void apply_diff(Change& c, const NetworkDiff& diff, std::string& step) {
  for (const PlannedAttach& p : diff.attach)
    if (p.element.has_default_route)
      throw InvalidRequest{"network " + p.element.namespace_ + "/" + p.element.name +
                           " asks for default-route, which manifold does not change on a running pod"};
  std::vector<engine::Attachment> adds;
  for (const PlannedAttach& p : diff.attach)
    adds.push_back(engine::resolve_selected_network(c.session.config, c.inv, c.kube, p.element, p.ifname));
  std::vector<scoping::ScopingPlan> plans = engine::plan_attachments_scoping(c.session.config.scoping, adds);
  // MultiNetworkPolicy: the same rules as ADD gives, in force before the interface exists.
  const engine::PolicyPlan policy =
      engine::plan_policies(c.services, c.session, c.kube, c.inv, std::optional<k8s::Pod>(c.pod), adds);
  engine::preflight_plugins(c.session, adds);

  step = "detach";
  if (!diff.detach.empty()) {
    try {
      detach(c.session, c.services, c.inv, c.netns, c.record, diff.detach, c.removed);
    } catch (...) {
      send_change_events(c.kube, c.ref, c.pod, c.record, c.removed, {});
      throw;
    }
  }
  step = "attach";
  if (adds.empty()) return;
  const std::size_t before = c.record.attachments.size();
  engine::AttachTransaction tx(c.services, c.session, c.inv, c.record);
  tx.attach_all(adds, plans, &policy);
  tx.commit();
  c.record = tx.record();
  c.added.assign(c.record.attachments.begin() + static_cast<long>(before), c.record.attachments.end());
}

/// Writes the network-status the entry records when the pod shows another (not for pods of
/// systemNamespaces, as ADD). Returns true when it wrote.
bool write_status_if_changed(Change& c) {
  if (k8s::is_system_namespace(k8s::namespace_policy_from_config(c.session.config), c.ref.namespace_)) return false;
  std::string value = k8s::render_network_status(engine::status_inputs(c.record, *c.services.files));
  if (value == c.pod.annotation(k8s::kNetworkStatusAnnotation)) return false;
  engine::write_network_status(c.kube, c.ref, c.pod, value);
  return true;
}

/// The invocation a complete entry records; nullopt for an entry that is missing, not complete,
/// or records none.
std::optional<cni::Invocation> complete_entry_invocation(store::Cache& cache, const store::EntryKey& key) {
  auto record = cache.load(key);
  if (!record || engine::entry_state(*record) != engine::EntryState::Complete) return std::nullopt;
  return engine::recorded_invocation(*record);
}

/// The pod's networks annotation, as decoded; InvalidRequest when it could not be parsed.
const std::vector<k8s::SelectionElement>& desired_networks(const k8s::Pod& pod) {
  if (pod.networks_error) throw InvalidRequest{pod.networks_error->msg()};
  return pod.networks;
}

/// The diff of `desired` against the record, every network it attaches checked against the
/// namespace policy; InvalidRequest when it cannot succeed before the annotation changes (no free
/// interface name, a network isolation forbids).
NetworkDiff checked_diff(const Change& c, const std::vector<k8s::SelectionElement>& desired) {
  NetworkDiff diff;
  try {
    diff = diff_networks(desired, c.record);
    const k8s::NamespacePolicy policy = k8s::namespace_policy_from_config(c.session.config);
    for (const PlannedAttach& p : diff.attach) k8s::check_isolation(policy, c.ref.namespace_, p.element.namespace_);
  } catch (const CniError& e) {
    throw InvalidRequest{e.msg()};
  }
  return diff;
}

/// Keeps at most `max_changes` changes of `diff` (detachments first, as they are applied); true
/// when some were left for the next reconcile.
bool bound_diff(NetworkDiff& diff, std::size_t max_changes) {
  max_changes = std::max<std::size_t>(max_changes, 1);
  bool more = false;
  if (diff.detach.size() > max_changes) {
    diff.detach.resize(max_changes);
    more = true;
  }
  const std::size_t left = max_changes - diff.detach.size();
  if (diff.attach.size() > left) {
    diff.attach.resize(left);
    more = true;
  }
  return more;
}

/// Brings the entry of `c` in line with `desired`, at most `max_changes` changes at a time: the diff
/// applied, then the network-status and the events. `step` tells which part failed when it throws.
ReconcileOutcome bring_in_line(Change& c, const std::vector<k8s::SelectionElement>& desired, std::size_t max_changes,
                               std::string& step) {
  ReconcileOutcome out;
  out.result = ReconcileResult::Unchanged;
  NetworkDiff diff = checked_diff(c, desired);
  if (!diff.empty())  // the namespace is checked right before anything acts in it
    if (auto why = netns_refusal(c.services, c.record, c.netns))
      throw InvalidRequest{"no network change in sandbox " + c.inv.container_id + ": " + *why,
                           "NetworkNamespaceChanged"};
  out.more = bound_diff(diff, max_changes);
  step = diff.attach.empty() ? "detach" : "attach";  // planning failures count against what was planned
  if (!diff.empty()) {
    apply_diff(c, diff, step);
    out.attached = static_cast<int>(c.added.size());
    out.detached = static_cast<int>(c.removed.size());
    out.result = ReconcileResult::Changed;
    util::log_verbose("pod ", c.ref.namespace_, "/", c.ref.name, " (", c.record.key().str(), "): attached ",
                      c.added.size(), ", detached ", c.removed.size(), " network(s)");
  }
  step = "status";
  if (write_status_if_changed(c)) out.result = ReconcileResult::Changed;
  send_change_events(c.kube, c.ref, c.pod, c.record, c.removed, c.added);
  return out;
}

/// The outcome of a reconcile that cannot succeed before the annotation changes: logged, and told in
/// one Warning event when the pod can be told.
ReconcileOutcome invalid_outcome(engine::KubeAccess* kube, const cni::PodRef& ref, const k8s::Pod& pod,
                                 const InvalidRequest& e) {
  ReconcileOutcome out;
  out.result = ReconcileResult::Invalid;
  out.message = e.message;
  util::log_warning("pod ", ref.namespace_, "/", ref.name, ": ", e.message, "; waiting for its annotation to change");
  if (kube && kube->configured()) engine::send_warning_event(*kube, ref, pod, e.reason, e.message);
  return out;
}

/// The outcome of a failed reconcile, worth retrying: logged, and told in a Warning event unless
/// the pod was told of this failure already (`told`).
ReconcileOutcome failed_outcome(engine::KubeAccess* kube, const cni::PodRef& ref, const k8s::Pod& pod,
                                const store::EntryKey& key, const CniError& e, const std::string& step, bool told) {
  ReconcileOutcome out;
  out.result = ReconcileResult::Failed;
  out.message = e.msg();
  out.failed_step = step;
  util::log_error("pod ", ref.namespace_, "/", ref.name, " (", key.str(), "): network change failed: ", e.msg());
  if (kube && kube->configured() && !told)
    engine::send_warning_event(*kube, ref, pod, "NetworkChangeFailed", "network change failed: " + e.msg());
  return out;
}

/// The more severe of two results (ReconcileResult is declared from the least to the most severe).
ReconcileResult worse(ReconcileResult a, ReconcileResult b) { return std::max(a, b); }

}  // namespace

Reconciler::Reconciler(const engine::Services& services, ReconcilerOptions options)
    : services_(services), options_(std::move(options)) {
  // One connection for all: a reconcile opens its KubeAccess through this factory, which hands out
  // views of the same transport instead of a new TLS connection each time.
  services_.open_transport = [this, open = services.open_transport](const http::ClusterAuth& auth,
                                                                    const std::string& session_dir) {
    if (!transport_) transport_ = open(auth, session_dir);
    return std::unique_ptr<http::HttpTransport>(std::make_unique<SharedTransport>(transport_));
  };
  services_.open_relay = nullptr;  // the agent is the relay: its own calls never go through it
}

store::Cache& Reconciler::cache() {
  if (!cache_) cache_ = services_.open_cache(options_.cni_dir);
  return *cache_;
}

std::vector<CachedSandbox> Reconciler::cached_sandboxes() {
  std::map<store::EntryKey, CachedSandbox> complete;
  for (const store::EntryKey& key : cache().list()) {
    if (auto seen = complete_.find(key); seen != complete_.end()) {
      complete.emplace(key, seen->second);
      continue;
    }
    try {
      auto record = cache().load(key);
      if (!record || engine::entry_state(*record) != engine::EntryState::Complete) continue;
      if (auto pod = engine::entry_pod(*record)) complete.emplace(key, CachedSandbox{key, *pod});
    } catch (const CniError& e) {
      util::log_warning("skipping the cache entry ", key.str(), ": ", e.msg());
    }
  }
  complete_ = std::move(complete);
  std::vector<CachedSandbox> out;
  for (const auto& [key, sandbox] : complete_) out.push_back(sandbox);
  return out;
}

ReconcileOutcome Reconciler::reconcile(const k8s::Pod& pod, const std::string& told_failure) {
  ReconcileOutcome total;
  std::vector<CachedSandbox> sandboxes;
  try {
    sandboxes = cached_sandboxes();
  } catch (const CniError& e) {
    total.result = ReconcileResult::Failed;
    total.message = "cannot read the cache in " + options_.cni_dir + ": " + e.msg();
    return total;
  }
  for (const CachedSandbox& s : sandboxes) {
    if (s.pod.namespace_ != pod.namespace_ || s.pod.name != pod.name || (!s.pod.uid.empty() && s.pod.uid != pod.uid))
      continue;
    ReconcileOutcome one = reconcile_entry(s.key, pod, told_failure);
    if (one.result == ReconcileResult::NotHere) continue;
    ++total.sandboxes;
    total.attached += one.attached;
    total.api_requests += one.api_requests;
    total.detached += one.detached;
    total.more = total.more || one.more;
    if (worse(one.result, total.result) != total.result) {
      total.message = one.message;
      total.failed_step = one.failed_step;
    }
    total.result = worse(one.result, total.result);
  }
  return total;
}

ReconcileOutcome Reconciler::reconcile_entry(const store::EntryKey& key, const k8s::Pod& pod,
                                             const std::string& told_failure) {
  ReconcileOutcome out;
  std::optional<cni::Invocation> inv;
  try {
    inv = complete_entry_invocation(cache(), key);
    if (!inv) return out;
  } catch (const CniError& e) {
    out.result = ReconcileResult::Failed;
    out.message = "cannot read the cache entry " + key.str() + ": " + e.msg();
    return out;
  }
  const cni::PodRef ref = cni::pod_ref_from(inv->args);
  // The session outlives the KubeAccess, which keeps a reference to its config: the warning event
  // of a failure is sent after the try block that opened both.
  std::optional<engine::Session> opened;
  std::optional<engine::KubeAccess> kube;
  std::string step = "attach";
  try {
    cni::MetaConfig config = cni::parse_meta_config(inv->config);
    config.kubeconfig = options_.kubeconfig;
    apply_current_namespace_policy(services_, options_.conf_dir, config);
    opened.emplace(engine::open_session(services_, std::move(config), *inv));
    engine::Session& session = *opened;
    kube.emplace(services_, session.config);
    if (!kube->configured())
      throw CniError(ErrorCode::InvalidConfig, "the agent has no Kubernetes credentials (kubeconfig or in-cluster)");
    const std::vector<k8s::SelectionElement>& desired = desired_networks(pod);  // checked before the lock

    auto lock = session.cache->lock(inv->container_id);
    auto record = session.cache->load(key);  // again, under the lock: a DEL may have begun
    if (!record || engine::entry_state(*record) != engine::EntryState::Complete) return out;
    const std::string netns = engine::del_netns(record->netns);
    if (netns.empty()) return out;  // the sandbox is going away; its DEL cleans up
    Change change{services_, session, *kube, *inv, ref, pod, netns, std::move(*record), {}, {}};
    out = bring_in_line(change, desired, options_.max_changes, step);
  } catch (const InvalidRequest& e) {
    out = invalid_outcome(kube ? &*kube : nullptr, ref, pod, e);
  } catch (const CniError& e) {
    if (e.code() == static_cast<unsigned>(ErrorCode::InterfaceExists)) {  // a name the pod already uses stays taken
      out = invalid_outcome(kube ? &*kube : nullptr, ref, pod, InvalidRequest{e.msg()});
    } else {
      out = failed_outcome(kube ? &*kube : nullptr, ref, pod, key, e, step,
                           !told_failure.empty() && e.msg() == told_failure);
    }
  }
  if (kube) out.api_requests = kube->requests_made();
  return out;
}

}  // namespace manifold::agent
