// Implementation of the sync: the stored inputs, the per-pod policy set with policy-for checked,
// the filtered peer world per network, and the apply-when-changed pass.
#include "policysync/policy_sync.h"

#include <algorithm>
#include <utility>

#include "cni/error.h"
#include "util/log.h"

namespace manifold::policysync {

namespace {

std::string pod_key(std::string_view ns, std::string_view name) {
  std::string key(ns);
  key += '/';
  key += name;
  return key;
}

bool selects(const policy::MultiNetworkPolicy& p, const policy::PodView& pod) {
  return !p.pod_selector || p.pod_selector->matches(pod.labels);
}

}  // namespace

PolicySync::PolicySync(RuleApplier apply) : apply_(std::move(apply)) {}

void PolicySync::put_policy(policy::MultiNetworkPolicy p) {
  const std::string ns = p.ns, name = p.name;
  policies_[ns][name] = StoredPolicy{std::move(p), true};
}

void PolicySync::remove_policy(std::string_view ns, std::string_view name) {
  const auto it = policies_.find(ns);
  if (it == policies_.end()) return;
  if (const auto p = it->second.find(name); p != it->second.end()) it->second.erase(p);
  if (it->second.empty()) policies_.erase(it);
}

void PolicySync::begin_policies_relist() {
  for (auto& [ns, byname] : policies_)
    for (auto& [name, stored] : byname) stored.fresh = false;
}

void PolicySync::end_policies_relist() {
  for (auto& [ns, byname] : policies_) std::erase_if(byname, [](const auto& e) { return !e.second.fresh; });
  std::erase_if(policies_, [](const auto& e) { return e.second.empty(); });
}

void PolicySync::put_local_pod(policy::PodView pod) {
  std::string key = pod_key(pod.ns, pod.name);
  local_pods_[std::move(key)] = std::move(pod);
}

void PolicySync::remove_local_pod(std::string_view ns, std::string_view name) { local_pods_.erase(pod_key(ns, name)); }

void PolicySync::remove_network(std::string_view network) {
  if (const auto it = networks_.find(network); it != networks_.end()) networks_.erase(it);
}

std::size_t PolicySync::policies() const {
  std::size_t n = 0;
  for (const auto& [ns, byname] : policies_) n += byname.size();
  return n;
}

ViewNeeds PolicySync::needs(const std::vector<LocalAttachment>& attachments) const {
  ViewNeeds out;
  std::set<std::string, std::less<>> namespaces;
  for (const LocalAttachment& a : attachments) namespaces.insert(a.pod_ns);
  for (const std::string& ns : namespaces) {
    const auto byname = policies_.find(ns);
    if (byname == policies_.end()) continue;
    out.nads = true;
    for (const auto& [name, stored] : byname->second)
      for (const auto* rules : {&stored.policy.ingress_rules, &stored.policy.egress_rules})
        for (const policy::PolicyRule& rule : *rules)
          for (const policy::PolicyPeer& peer : rule.peers) {
            if (peer.ip_block) continue;
            out.pods = true;
            out.namespaces = out.namespaces || peer.namespace_selector.has_value();
          }
  }
  return out;
}

// The policies of the pod's namespace; a valid one that selects the pod and names a network not
// known to exist is made invalid, as ADD makes it (a typo in policy-for closes, never opens). As at
// ADD, a network the pod may never join (namespaceIsolation) is not asked about.
std::vector<policy::MultiNetworkPolicy> PolicySync::policies_for(const policy::PodView& pod,
                                                                 const k8s::NamespacePolicy& isolation) const {
  std::vector<policy::MultiNetworkPolicy> out;
  const auto byname = policies_.find(pod.ns);
  if (byname == policies_.end()) return out;
  for (const auto& [name, stored] : byname->second) {
    policy::MultiNetworkPolicy p = stored.policy;
    if (p.valid() && selects(p, pod)) {
      for (const policy::NetworkRef& n : stored.policy.networks) {
        if (pod.ips.count(n.str()) != 0) continue;  // the pod is attached to it: it exists
        if (networks_.count(n.str()) != 0) continue;
        try {
          k8s::check_isolation(isolation, pod.ns, n.ns);
        } catch (const cni::CniError&) {
          continue;
        }
        policy::invalidate_policy(p, policy::kPolicyForPath + ": names network " + n.str() + ", which does not exist");
        break;
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

// Only the pods some selector of these policies may choose are materialized.
policy::PeerWorld PolicySync::world_for(std::string_view network,
                                        const std::vector<policy::MultiNetworkPolicy>& policies) const {
  std::vector<std::pair<const policy::MultiNetworkPolicy*, const policy::PolicyPeer*>> selectors;
  for (const policy::MultiNetworkPolicy& p : policies) {
    if (!p.valid() || !p.covers(network)) continue;
    for (const auto* rules : {&p.ingress_rules, &p.egress_rules})
      for (const policy::PolicyRule& rule : *rules)
        for (const policy::PolicyPeer& peer : rule.peers)
          if (!peer.ip_block) selectors.emplace_back(&p, &peer);
  }
  if (selectors.empty()) return {};
  return peers_.world(network, [&](std::string_view ns, std::string_view packed) {
    std::optional<policy::Labels> labels;  // unpacked only for a pod of a namespace some peer selects
    for (const auto& [p, peer] : selectors) {
      if (peer->namespace_selector) {
        const policy::Labels* ns_labels = peers_.namespace_labels(ns);
        if (ns_labels == nullptr || !peer->namespace_selector->matches(*ns_labels)) continue;
      } else if (ns != p->ns) {
        continue;
      }
      if (!peer->pod_selector) return true;
      if (!labels) labels = unpack_labels(packed);
      if (peer->pod_selector->matches(*labels)) return true;
    }
    return false;
  });
}

SyncResult PolicySync::sync(const std::vector<LocalAttachment>& attachments, bool force) {
  SyncResult result;
  std::set<std::string> seen;
  std::map<std::string, policy::PeerWorld> worlds;  // by network and covering policies
  for (const LocalAttachment& a : attachments) {
    const std::string id = a.id();
    seen.insert(id);
    const auto pod = local_pods_.find(pod_key(a.pod_ns, a.pod_name));
    if (pod == local_pods_.end()) continue;  // not delivered yet: ADD's rules stay
    const std::vector<policy::MultiNetworkPolicy> policies = policies_for(pod->second, a.isolation);
    // Attachments whose covering policies are the same share one world (one walk of the peers).
    std::string world_key = a.state.network;
    for (const policy::MultiNetworkPolicy& p : policies)
      if (p.valid() && p.covers(a.state.network)) world_key += "\n" + p.id();
    auto cached = worlds.find(world_key);
    if (cached == worlds.end()) cached = worlds.emplace(world_key, world_for(a.state.network, policies)).first;
    const policy::PeerWorld& world = cached->second;
    policy::AttachmentRules rules = policy::evaluate(pod->second, a.state.network, policies, &world);
    ++result.evaluated;
    for (const auto* d : {&rules.ingress, &rules.egress})
      for (const std::string& error : d->invalid)
        result.invalid.push_back({error, a.state.ifname + " (" + a.state.network + ")", a.pod_ns, a.pod_name});
    const auto last = applied_.find(id);
    if (!force && last != applied_.end() && last->second == rules) continue;
    ++result.changed;
    try {
      result.restored += apply_(a, rules);
      applied_[id] = std::move(rules);
    } catch (const cni::CniError& e) {
      ++result.failed;
      applied_.erase(id);
      util::log_error("policy sync: cannot apply the rules of ", a.state.ifname, " of pod ", pod->first, ": ", e.msg());
    }
  }
  std::erase_if(applied_, [&](const auto& e) { return seen.count(e.first) == 0; });
  return result;
}

}  // namespace manifold::policysync
