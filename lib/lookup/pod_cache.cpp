// Implementation of the pod cache: entries by UID with a name index, one mutex, one condition
// variable that wakes lookups waiting for the watch; the listener is called after the lock is let go.
#include "lookup/pod_cache.h"

#include <algorithm>
#include <set>

#include "k8s/api_status.h"
#include "k8s/selection.h"
#include "lookup/resource_version.h"

namespace manifold::lookup {
namespace {

/// The pod's JSON as GET returns it: a LIST's items carry no kind and apiVersion.
std::string get_body(const k8s::Pod& pod) {
  if (pod.object.contains("kind") && pod.object.contains("apiVersion")) return pod.object.dump();
  Json copy = pod.object;
  copy["kind"] = "Pod";
  copy["apiVersion"] = "v1";
  return copy.dump();
}

std::string node_of(const k8s::Pod& pod) {
  const Json* node = json_at(pod.object, {"spec", "nodeName"});
  return node && node->is_string() ? node->get<std::string>() : std::string();
}

/// The namespaces whose NADs the pod's ADD reads: its own, then those its annotations name.
std::vector<std::string> namespaces_of(const k8s::Pod& pod) {
  std::vector<std::string> out{pod.namespace_};
  for (const k8s::SelectionElement& e : pod.networks)
    if (!e.namespace_.empty() && std::find(out.begin(), out.end(), e.namespace_) == out.end())
      out.push_back(e.namespace_);
  const std::string& dflt = pod.annotation(k8s::kDefaultNetworkAnnotation);
  if (auto slash = dflt.find('/'); slash != std::string::npos && slash > 0) {
    std::string ns = dflt.substr(0, slash);
    if (k8s::is_dns1123_label(ns) && std::find(out.begin(), out.end(), ns) == out.end()) out.push_back(ns);
  }
  return out;
}

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Hit:
      return "hit";
    case Verdict::NoUid:
      return "no-uid";
    case Verdict::WatchDown:
      return "watch-down";
    case Verdict::NotCached:
      return "not-cached";
    case Verdict::UidMismatch:
      return "uid-mismatch";
    case Verdict::OtherNode:
      return "other-node";
    case Verdict::StaticPod:
      return "static-pod";
    case Verdict::Superseded:
      return "superseded";
    case Verdict::NotInteger:
      return "rv-not-integer";
    case Verdict::Stale:
      return "stale";
    case Verdict::ServedBefore:
      return "served-before";
    case Verdict::Absent:
      return "absent";
    case Verdict::OutOfScope:
      return "out-of-scope";
    case Verdict::ListFailed:
      return "list-failed";
    case Verdict::OverCapacity:
      return "over-capacity";
  }
  return "unknown";
}

PodCache::PodCache(std::string node, Limits limits) : node_(std::move(node)), limits_(limits) {}

void PodCache::drop(const std::string& uid) {
  auto it = by_uid_.find(uid);
  if (it == by_uid_.end()) return;
  Entry& e = it->second;
  bytes_ -= e.body.size();
  auto name = uid_by_name_.find(e.ns + "/" + e.name);
  if (name != uid_by_name_.end() && name->second == uid) uid_by_name_.erase(name);
  if (--namespaces_[e.ns] <= 0) namespaces_.erase(e.ns);
  by_uid_.erase(it);
}

void PodCache::store(const k8s::Pod& pod, std::vector<std::function<void()>>& tell) {
  if (pod.uid.empty()) return;
  std::string body = get_body(pod);
  const std::string key = pod.namespace_ + "/" + pod.name;
  if (auto other = uid_by_name_.find(key); other != uid_by_name_.end() && other->second != pod.uid)
    drop(other->second);  // recreated under the same name: the old copy must never answer
  auto it = by_uid_.find(pod.uid);
  if (it == by_uid_.end()) {
    if (by_uid_.size() >= limits_.max_pods || bytes_ + body.size() > limits_.max_bytes) return;
    Entry e{pod.namespace_, pod.name, node_of(pod), {}, {}, std::nullopt, false, false, false};
    if (e.node == node_) e.bound_rv = parse_resource_version(pod.resource_version);
    if (e.bound_rv && listener_)
      tell.push_back([this, namespaces = namespaces_of(pod), rv = *e.bound_rv] { listener_(namespaces, rv); });
    it = by_uid_.emplace(pod.uid, std::move(e)).first;
    uid_by_name_[key] = pod.uid;
    ++namespaces_[pod.namespace_];
  } else if (bytes_ - it->second.body.size() + body.size() > limits_.max_bytes) {
    drop(pod.uid);  // grew past the bound: an older copy must not answer either
    return;
  }
  Entry& e = it->second;
  if (e.node != node_ && node_of(pod) == node_) e.bound_rv = parse_resource_version(pod.resource_version);
  e.node = node_of(pod);
  e.is_static = pod.is_static();
  if (e.rv != pod.resource_version) e.superseded = false;
  e.rv = pod.resource_version;
  bytes_ = bytes_ - e.body.size() + body.size();
  e.body = std::move(body);
}

void PodCache::observe(const k8s::Pod& pod) {
  std::vector<std::function<void()>> tell;
  {
    std::lock_guard lock(mu_);
    store(pod, tell);
  }
  changed_.notify_all();
  for (auto& t : tell) t();
}

void PodCache::forget(const std::string& uid) {
  {
    std::lock_guard lock(mu_);
    drop(uid);
  }
  changed_.notify_all();
}

void PodCache::relisted(const std::vector<const k8s::Pod*>& pods) {
  std::vector<std::function<void()>> tell;
  {
    std::lock_guard lock(mu_);
    std::set<std::string> listed;
    for (const k8s::Pod* p : pods) listed.insert(p->uid);
    std::vector<std::string> gone;
    for (const auto& [uid, e] : by_uid_)
      if (!listed.count(uid)) gone.push_back(uid);
    for (const std::string& uid : gone) drop(uid);
    for (const k8s::Pod* p : pods) store(*p, tell);
  }
  changed_.notify_all();
  for (auto& t : tell) t();
}

void PodCache::set_live(bool live) {
  {
    std::lock_guard lock(mu_);
    if (live_ == live) return;
    live_ = live;
  }
  changed_.notify_all();
}

bool PodCache::live() const {
  std::lock_guard lock(mu_);
  return live_;
}

Verdict PodCache::wait_for(std::unique_lock<std::mutex>& lock, const std::function<Verdict()>& check,
                           Clock::time_point deadline, bool& waited) {
  for (;;) {
    if (!live_) return Verdict::WatchDown;
    Verdict v = check();
    // Only a pod not there yet (or not in its latest version) is worth waiting for: the watch may
    // not have delivered it.
    if (v != Verdict::NotCached && v != Verdict::UidMismatch && v != Verdict::Superseded) return v;
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) return live_ ? check() : Verdict::WatchDown;
    waited = true;
  }
}

PodAnswer PodCache::get(const std::string& ns, const std::string& name, const std::string& uid,
                        Clock::time_point deadline) {
  PodAnswer out;
  if (uid.empty()) {
    out.verdict = Verdict::NoUid;
    return out;
  }
  std::unique_lock lock(mu_);
  const Entry* found = nullptr;
  auto check = [&]() -> Verdict {
    auto name_it = uid_by_name_.find(ns + "/" + name);
    if (name_it == uid_by_name_.end()) return Verdict::NotCached;
    found = &by_uid_.at(name_it->second);
    if (name_it->second != uid) return found->is_static ? Verdict::StaticPod : Verdict::UidMismatch;
    if (found->node != node_) return Verdict::OtherNode;
    return found->superseded ? Verdict::Superseded : Verdict::Hit;
  };
  out.verdict = wait_for(lock, check, deadline, out.waited);
  if (out.verdict == Verdict::Hit) out.body = found->body;
  return out;
}

BoundPod PodCache::bound(const std::string& uid, Clock::time_point deadline, bool claim_nads) {
  BoundPod out;
  if (uid.empty()) {
    out.verdict = Verdict::NoUid;
    return out;
  }
  std::unique_lock lock(mu_);
  Entry* found = nullptr;
  auto check = [&]() -> Verdict {
    auto it = by_uid_.find(uid);
    if (it == by_uid_.end()) return Verdict::NotCached;
    found = &it->second;
    if (found->node != node_) return Verdict::OtherNode;
    if (!found->bound_rv) return Verdict::NotInteger;
    return found->nads_served ? Verdict::ServedBefore : Verdict::Hit;
  };
  bool waited = false;
  out.verdict = wait_for(lock, check, deadline, waited);
  if (out.verdict != Verdict::Hit) return out;
  out.ns = found->ns;
  out.bound_rv = *found->bound_rv;
  if (claim_nads) found->nads_served = true;
  return out;
}

void PodCache::superseded(const std::string& ns, const std::string& name, const std::string& rv) {
  std::lock_guard lock(mu_);
  auto uid = uid_by_name_.find(ns + "/" + name);
  if (uid == uid_by_name_.end()) return;
  Entry& e = by_uid_.at(uid->second);
  if (!rv.empty() && e.rv == rv) e.superseded = true;
}

bool PodCache::has_namespace(const std::string& ns) const {
  std::lock_guard lock(mu_);
  return namespaces_.count(ns) != 0;
}

std::size_t PodCache::size() const {
  std::lock_guard lock(mu_);
  return by_uid_.size();
}

std::size_t PodCache::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace manifold::lookup
