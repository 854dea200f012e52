// Implementation of MultiNetworkPolicy in the engine: loading the namespace's policies (with the
// policy-for existence check), planning each attachment, the warning events, the ADD/DEL calls
// into policy/enforce.h, and CHECK.
#include "engine/policy_step.h"

#include <algorithm>
#include <map>

#include "cni/error.h"
#include "engine/plan.h"
#include "engine/pod_status.h"
#include "engine/policy_peers.h"
#include "k8s/api_status.h"
#include "k8s/isolation.h"
#include "policy/policy_error.h"
#include "util/log.h"

namespace manifold::engine {

namespace {

using firewall::Family;
using policy::MultiNetworkPolicy;

constexpr std::size_t kMaxEventMessage = 1024;  // what events.k8s.io accepts as a note

// A secondary attachment made from a NAD: the only kind a policy-for can name.
bool may_be_covered(const Attachment& a) { return a.from_nad && !a.cluster_network; }

// The pod as policies see it; its namespace and name are the decoded pod's (a GET answer may leave
// them out of the object).
policy::PodView pod_view_of(const k8s::Pod& pod) {
  Json object = pod.object;
  object["metadata"]["namespace"] = pod.namespace_;
  object["metadata"]["name"] = pod.name;
  try {
    return policy::read_pod_view(object);
  } catch (const policy::PolicyError& e) {
    throw cni::CniError(cni::ErrorCode::Decoding,
                        std::string("cannot read the pod for MultiNetworkPolicy: ") + e.what());
  }
}

bool selects(const MultiNetworkPolicy& p, const policy::PodView& pod) {
  return !p.pod_selector || p.pod_selector->matches(pod.labels);
}

// The NADs the valid policies that may select `pod` name and the pod is not attached to, which the
// pod may reference at all (namespaceIsolation), each with the policies naming it.
std::map<std::string, std::vector<std::size_t>> names_to_verify(const cni::MetaConfig& config,
                                                                const std::vector<MultiNetworkPolicy>& policies,
                                                                const policy::PodView& pod,
                                                                const std::vector<std::string>& own) {
  const k8s::NamespacePolicy isolation = k8s::namespace_policy_from_config(config);
  std::map<std::string, std::vector<std::size_t>> out;
  for (std::size_t i = 0; i < policies.size(); ++i) {
    if (!policies[i].valid() || !selects(policies[i], pod)) continue;
    for (const policy::NetworkRef& n : policies[i].networks) {
      if (std::find(own.begin(), own.end(), n.str()) != own.end()) continue;
      try {
        k8s::check_isolation(isolation, pod.ns, n.ns);
      } catch (const cni::CniError&) {
        continue;  // a network this pod may never join: whether it exists does not matter here
      }
      out[n.str()].push_back(i);
    }
  }
  return out;
}

// The policies of the pod's namespace, each policy-for name the pod does not join checked to exist.
std::vector<MultiNetworkPolicy> load_policies(const cni::MetaConfig& config, KubeAccess& kube,
                                              const policy::PodView& pod, const std::vector<std::string>& own) {
  Json list;
  try {
    list = kube.list_multi_network_policies(pod.ns);
  } catch (const k8s::ApiError& e) {
    if (!e.not_found()) throw;
    util::log_verbose("MultiNetworkPolicy is not served by the API server (", e.msg(), "): no policy applies");
    return {};
  }
  std::vector<MultiNetworkPolicy> policies;
  for (const Json& item : list["items"]) {
    MultiNetworkPolicy p = policy::read_policy(item, pod.ns);
    if (p.ns == pod.ns) policies.push_back(std::move(p));
  }
  const auto names = names_to_verify(config, policies, pod, own);
  if (names.empty()) return policies;
  std::vector<k8s::ObjectKey> keys;
  for (const auto& [name, users] : names) {
    const auto slash = name.find('/');
    keys.push_back({name.substr(0, slash), name.substr(slash + 1)});
  }
  const std::vector<k8s::ApiOutcome> outcomes = kube.get_nads(keys);
  std::size_t k = 0;
  for (const auto& [name, users] : names) {
    const k8s::ApiOutcome& outcome = outcomes.at(k++);
    if (!outcome.error) continue;
    std::string why = "which does not exist";
    try {
      std::rethrow_exception(outcome.error);
    } catch (const k8s::ApiError& e) {
      if (!e.not_found()) why = "which cannot be read (" + e.msg() + ")";
    } catch (const cni::CniError& e) {
      why = "which cannot be read (" + e.msg() + ")";
    }
    for (std::size_t i : users)
      policy::invalidate_policy(policies[i], policy::kPolicyForPath + ": names network " + name + ", " + why);
  }
  return policies;
}

std::vector<Family> families_here(const Services& services) {
  std::vector<Family> families{Family::V4};
  if (services.file_exists && services.file_exists("/proc/net/if_inet6")) families.push_back(Family::V6);
  return families;
}

// One Warning event per invalid policy that isolates an attachment of the pod (best effort).
void warn_invalid(KubeAccess& kube, const cni::Invocation& inv, const k8s::Pod& pod,
                  const std::map<std::string, std::vector<std::string>>& invalid) {
  const cni::PodRef ref = cni::pod_ref_from(inv.args);
  for (const auto& [error, ifnames] : invalid) {
    std::string where;
    for (const std::string& i : ifnames) where += (where.empty() ? "" : ", ") + i;
    std::string message = "MultiNetworkPolicy " + error + "; until it is fixed it isolates " + where +
                          " in both directions and allows nothing there";
    if (message.size() > kMaxEventMessage) message = message.substr(0, kMaxEventMessage - 3) + "...";
    util::log_warning(message);
    send_warning_event(kube, ref, pod, kInvalidPolicyReason, message);
  }
}

std::vector<std::string> own_networks(const std::vector<Attachment>& attachments) {
  std::vector<std::string> own;
  for (const Attachment& a : attachments)
    if (may_be_covered(a)) own.push_back(a.name);
  return own;
}

}  // namespace

PolicyPlan plan_policies(const Services& services, const Session& session, KubeAccess& kube, const cni::Invocation& inv,
                         const std::optional<k8s::Pod>& pod, const std::vector<Attachment>& attachments) {
  PolicyPlan plan;
  plan.config = policy::read_policy_config(session.config.multi_network_policy);
  plan.attachments.resize(attachments.size());
  const std::vector<std::string> own = own_networks(attachments);
  if (!plan.config.enabled || !pod || own.empty()) return plan;
  const policy::PodView view = pod_view_of(*pod);
  const std::vector<MultiNetworkPolicy> policies = load_policies(session.config, kube, view, own);
  const std::vector<Family> families = families_here(services);
  std::map<std::string, std::vector<std::string>> invalid;
  for (std::size_t i = 0; i < attachments.size(); ++i) {
    const Attachment& a = attachments[i];
    if (!may_be_covered(a)) continue;
    policy::AttachmentRules rules = policy::evaluate(view, a.name, policies, nullptr);
    if (!rules.covered()) continue;
    for (const auto* d : {&rules.ingress, &rules.egress})
      for (const std::string& error : d->invalid) {
        auto& list = invalid[error];
        const std::string where = a.ifname + " (" + a.name + ")";
        if (std::find(list.begin(), list.end(), where) == list.end()) list.push_back(where);
      }
    util::log_verbose("MultiNetworkPolicy isolates ", a.ifname, " (", a.name,
                      "):", rules.ingress.isolated ? " ingress" : "", rules.egress.isolated ? " egress" : "");
    plan.attachments[i] = AttachmentPolicy{
        std::move(rules), policy::PolicyState::planned(a.ifname, a.name, families, plan.config.lock_wait_seconds)};
  }
  if (!invalid.empty()) warn_invalid(kube, inv, *pod, invalid);
  return plan;
}

Json apply_attachment_policy(scoping::ScopingEnv& env, const AttachmentPolicy& plan,
                             const policy::PolicyConfig& config) {
  return policy::apply_policy(env.iptables.get(config.lock_wait_seconds), plan.state, plan.rules, config).to_json();
}

void remove_attachment_policy(scoping::ScopingEnv& env, const Json& state) {
  const policy::PolicyState s = policy::PolicyState::from_json(state);
  policy::remove_policy(env.iptables.get(s.lock_wait_seconds), s);
}

Json rebuilt_policy_state(const cni::MetaConfig& config, const Attachment& a) {
  policy::PolicyConfig cfg;
  try {
    cfg = policy::read_policy_config(config.multi_network_policy);
  } catch (const cni::CniError& e) {
    util::log_error("cannot read multiNetworkPolicy for DEL: ", e.msg(), "; looking for policy rules anyway");
    cfg.enabled = true;
  }
  if (!cfg.enabled || !may_be_covered(a)) return nullptr;
  return policy::PolicyState::planned(a.ifname, a.name, {Family::V4, Family::V6}, cfg.lock_wait_seconds).to_json();
}

std::vector<std::string> check_policies(const Services& services, const Session& session, const cni::Invocation& inv,
                                        const store::ContainerRecord& record, scoping::ScopingEnv& env) {
  const policy::PolicyConfig cfg = policy::read_policy_config(session.config.multi_network_policy);
  std::vector<std::string> diffs;
  if (!cfg.enabled) return diffs;
  std::vector<std::string> own;
  for (const store::AttachmentRecord& a : record.attachments)
    if (!a.cluster_network && a.name.find('/') != std::string::npos) own.push_back(a.name);
  KubeAccess kube(services, session.config);
  const std::optional<k8s::Pod> pod = lookup_pod(kube, inv);
  if (!pod) return diffs;
  const policy::PodView view = pod_view_of(*pod);
  const std::vector<MultiNetworkPolicy> policies =
      own.empty() ? std::vector<MultiNetworkPolicy>{} : load_policies(session.config, kube, view, own);
  for (const store::AttachmentRecord& a : record.attachments) {
    if (a.cluster_network) continue;
    const bool named = std::find(own.begin(), own.end(), a.name) != own.end();
    std::optional<policy::PolicyState> state;
    if (!a.policy.is_null()) state = policy::PolicyState::from_json(a.policy);
    // Once the agent has filled the peers in (the entry records the rules complete), the current
    // peers are expected; before, ADD's fail-closed form.
    std::optional<policy::PeerWorld> peers;
    if (named && state && state->complete) peers = list_policy_peers(kube, policies, a.name);
    const policy::AttachmentRules rules =
        named ? policy::evaluate(view, a.name, policies, peers ? &*peers : nullptr) : policy::AttachmentRules{};
    if (!state) {
      if (rules.covered()) diffs.push_back(a.ifname + ": MultiNetworkPolicy isolates it but no rules were installed");
      continue;
    }
    for (std::string& d : policy::check_policy(env.iptables.get(state->lock_wait_seconds), *state, rules, cfg.deny))
      diffs.push_back(a.ifname + ": " + d);
  }
  return diffs;
}

}  // namespace manifold::engine
