// Implementation of the per-network policy semantics: which policies apply, and per rule which
// peers and ports pass.
#include "policy/evaluate.h"

#include <algorithm>
#include <array>
#include <set>
#include <tuple>

#include "policy/prefix_set.h"

namespace manifold::policy {

namespace {

// The identity of an allow without its origin, for keeping each allow once in linear time.
using AllowKey = std::tuple<bool, int, std::array<std::uint8_t, 16>, int, bool, int, int, int>;

AllowKey key_of(const Allow& a) {
  return {a.peer.has_value(),
          a.peer ? a.peer->address.family : 0,
          a.peer ? a.peer->address.bytes : std::array<std::uint8_t, 16>{},
          a.peer ? a.peer->prefix_len : 0,
          a.port.has_value(),
          a.port ? static_cast<int>(a.port->protocol) : 0,
          a.port ? a.port->first : 0,
          a.port ? a.port->last : 0};
}

struct Context {
  const PodView& pod;
  std::string_view network;
  const PeerWorld* peers;
  std::vector<const PodView*> sorted;  // peers->pods by namespace and name
  std::set<AllowKey> seen[2];          // the allows of ingress [0] and egress [1] so far
};

void add(DirectionRules& d, Allow allow, Context& ctx, bool ingress) {
  if (ctx.seen[ingress ? 0 : 1].insert(key_of(allow)).second) d.allows.push_back(std::move(allow));
}

// The matches one port entry resolves to; a named port against `owner`'s container ports (none
// when the owner or its spec is unknown).
std::vector<PortMatch> resolve_port(const PolicyPort& port, const PodView* owner) {
  std::vector<PortMatch> out;
  if (!port.named_port.empty()) {
    if (owner == nullptr || !owner->ports_known) return out;
    for (std::uint16_t n : owner->named_ports(port.named_port, port.protocol)) out.push_back({port.protocol, n, n});
    return out;
  }
  if (port.port == 0) return {{port.protocol, 0, 0}};
  return {{port.protocol, port.port, port.end_port != 0 ? port.end_port : port.port}};
}

// The port matches of `ports` against `owner`; one empty match (every port) for an empty list.
std::vector<std::optional<PortMatch>> matches_of(const std::vector<PolicyPort>& ports, const PodView* owner,
                                                 bool every_when_empty) {
  std::vector<std::optional<PortMatch>> out;
  if (ports.empty() && every_when_empty) out.emplace_back(std::nullopt);
  for (const PolicyPort& port : ports)
    for (const PortMatch& m : resolve_port(port, owner))
      if (std::find(out.begin(), out.end(), std::optional<PortMatch>(m)) == out.end()) out.emplace_back(m);
  return out;
}

// The pods a selector peer of a policy in `policy_ns` chooses, in namespace/name order.
std::vector<const PodView*> peer_pods(const PolicyPeer& peer, const std::string& policy_ns, const Context& ctx) {
  std::vector<const PodView*> out;
  for (const PodView* pod : ctx.sorted) {
    if (peer.namespace_selector) {
      const auto ns = ctx.peers->namespaces.find(pod->ns);
      if (ns == ctx.peers->namespaces.end() || !peer.namespace_selector->matches(ns->second)) continue;
    } else if (pod->ns != policy_ns) {
      continue;
    }
    if (peer.pod_selector && !peer.pod_selector->matches(pod->labels)) continue;
    out.push_back(pod);
  }
  return out;
}

// Allows to every IP `pod` has on the network, with the fixed matches and its own named ports.
void add_pod(DirectionRules& d, const PodView& pod, const std::vector<std::optional<PortMatch>>& fixed,
             const std::vector<PolicyPort>& named, Context& ctx, bool ingress, const std::string& origin) {
  const std::vector<std::optional<PortMatch>> own = matches_of(named, &pod, false);
  for (const util::IpAddress& ip : pod.ips_on(ctx.network)) {
    for (const auto& m : fixed) add(d, {util::IpPrefix::host(ip), m, origin}, ctx, ingress);
    for (const auto& m : own) add(d, {util::IpPrefix::host(ip), m, origin}, ctx, ingress);
  }
}

// One rule: every kind of peer (none, ipBlock, selectors with and without known peers) with both
// kinds of port (resolved now, resolved per destination).
void add_rule(DirectionRules& d, const PolicyRule& rule, const MultiNetworkPolicy& policy, bool ingress, Context& ctx,
              const std::string& origin) {
  // Ingress resolves every port against the pod itself; egress resolves named ports per destination.
  std::vector<PolicyPort> fixed_ports, named;
  for (const PolicyPort& port : rule.ports) (ingress || port.named_port.empty() ? fixed_ports : named).push_back(port);
  const std::vector<std::optional<PortMatch>> fixed =
      matches_of(fixed_ports, ingress ? &ctx.pod : nullptr, rule.ports.empty());
  if (rule.peers.empty()) {
    for (const auto& m : fixed) add(d, {std::nullopt, m, origin}, ctx, ingress);
    if (named.empty()) return;
    if (ctx.peers == nullptr) {
      d.complete = false;
      return;
    }
    for (const PodView* pod : ctx.sorted) add_pod(d, *pod, {}, named, ctx, ingress, origin);
    return;
  }
  for (const PolicyPeer& peer : rule.peers) {
    if (peer.ip_block) {
      for (const util::IpPrefix& prefix : subtract_prefixes(peer.ip_block->cidr, peer.ip_block->except))
        for (const auto& m : fixed) add(d, {prefix, m, origin}, ctx, ingress);
      continue;
    }
    if (ctx.peers == nullptr) {
      d.complete = false;
      continue;
    }
    for (const PodView* pod : peer_pods(peer, policy.ns, ctx)) add_pod(d, *pod, fixed, named, ctx, ingress, origin);
  }
}

void apply_policy(AttachmentRules& out, const MultiNetworkPolicy& policy, Context& ctx) {
  if (policy.ns != ctx.pod.ns || !policy.covers(ctx.network)) return;
  if (policy.pod_selector && !policy.pod_selector->matches(ctx.pod.labels)) return;
  for (bool ingress : {true, false}) {
    DirectionRules& d = ingress ? out.ingress : out.egress;
    if (!(ingress ? policy.ingress : policy.egress)) continue;
    d.isolated = true;
    d.policies.push_back(policy.id());
    if (!policy.valid()) {
      d.invalid.push_back(policy.id() + ": " + policy.error);
      continue;
    }
    const std::vector<PolicyRule>& rules = ingress ? policy.ingress_rules : policy.egress_rules;
    for (std::size_t i = 0; i < rules.size(); ++i)
      add_rule(d, rules[i], policy, ingress, ctx,
               policy.name + (ingress ? " ingress[" : " egress[") + std::to_string(i) + "]");
  }
}

}  // namespace

AttachmentRules evaluate(const PodView& pod, std::string_view network, const std::vector<MultiNetworkPolicy>& policies,
                         const PeerWorld* peers) {
  Context ctx{pod, network, peers, {}, {}};
  if (peers != nullptr) {
    for (const PodView& p : peers->pods) ctx.sorted.push_back(&p);
    std::sort(ctx.sorted.begin(), ctx.sorted.end(),
              [](const PodView* a, const PodView* b) { return a->ns != b->ns ? a->ns < b->ns : a->name < b->name; });
  }
  std::vector<const MultiNetworkPolicy*> ordered;
  for (const MultiNetworkPolicy& p : policies) ordered.push_back(&p);
  std::sort(ordered.begin(), ordered.end(), [](const MultiNetworkPolicy* a, const MultiNetworkPolicy* b) {
    return a->ns != b->ns ? a->ns < b->ns : a->name < b->name;
  });
  AttachmentRules out;
  for (const MultiNetworkPolicy* p : ordered) apply_policy(out, *p, ctx);
  return out;
}

}  // namespace manifold::policy
