// MultiNetworkPolicy in the attachment engine: what an ADD, a DEL and a CHECK do about it when the
// meta config enables it (`multiNetworkPolicy`, policy/policy_config.h).
//  - Planning (before anything is created): one LIST of the pod's namespace's policies (policies
//    select pods of their own namespace only), and — for the policies that may select the pod —
//    one batch of GETs of the NADs their policy-for names that are not the pod's own networks: a
//    name that does not exist (or cannot be read) makes its policy invalid, so a typo in
//    policy-for closes rather than leaves a network open. Every secondary attachment made from a
//    NAD is then evaluated without peers (the fail-closed form); the cluster network and networks
//    not made from a NAD are never covered. A Warning event (InvalidMultiNetworkPolicy) names each
//    invalid policy that isolates one of the pod's attachments.
//  - ADD: the rules of a covered attachment go into the pod's namespace after its delegate is
//    marked started and before the delegate runs, so the interface never exists without them; the
//    planned state is recorded with every attachment before the first delegate runs, so a DEL after
//    a kill at any point finds the chains by name.
//  - DEL and rollback remove exactly what is there (policy/enforce.h, from the saved text).
//  - CHECK compares the rules with what the current policies generate (the same LIST and GETs).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cni/skel.h"
#include "engine/attachment.h"
#include "engine/kube_access.h"
#include "engine/services.h"
#include "engine/session.h"
#include "k8s/pod.h"
#include "policy/enforce.h"
#include "policy/evaluate.h"
#include "policy/policy_config.h"
#include "scoping/scoping.h"
#include "store/record.h"

namespace manifold::engine {

/// The Warning event's reason for a policy that does not validate.
inline constexpr const char* kInvalidPolicyReason = "InvalidMultiNetworkPolicy";

/// The rules ADD installs for one attachment.
struct AttachmentPolicy {
  policy::AttachmentRules rules;  ///< evaluated without peers (fail closed)
  policy::PolicyState state;      ///< the planned state (interface, network, families)
};

/// The policy part of an ADD plan.
struct PolicyPlan {
  policy::PolicyConfig config;                               ///< the meta config's key
  std::vector<std::optional<AttachmentPolicy>> attachments;  ///< index-aligned with the plan's attachments
};

/// Plans enforcement for an ADD of `attachments` (see the file comment). Empty when the config does
/// not enable it or the call names no pod. Throws CniError(InvalidConfig) for a bad
/// `multiNetworkPolicy` key (also without a pod), and the API's error when the policies cannot be
/// listed (the ADD then fails: nothing is attached without knowing what covers it).
PolicyPlan plan_policies(const Services& services, const Session& session, KubeAccess& kube, const cni::Invocation& inv,
                         const std::optional<k8s::Pod>& pod, const std::vector<Attachment>& attachments);

/// ADD: installs `plan`'s rules in the pod namespace of `env`; returns the applied state to record.
Json apply_attachment_policy(scoping::ScopingEnv& env, const AttachmentPolicy& plan,
                             const policy::PolicyConfig& config);

/// DEL: removes the rules `state` (an attachment's `policy` record) describes. Idempotent.
void remove_attachment_policy(scoping::ScopingEnv& env, const Json& state);

/// The state a DEL without a cache entry works from for attachment `a` of `config`: a planned
/// state (our chains looked for by name in both backends and families) when enforcement is on and
/// `a` is a secondary network made from a NAD; null otherwise.
Json rebuilt_policy_state(const cni::MetaConfig& config, const Attachment& a);

/// CHECK: every difference between the policy rules of `record`'s attachments and what the current
/// policies generate ("net1: IPv4: chain MNP-IN-net1 is missing"). Empty when enforcement is off or
/// the call names no pod.
std::vector<std::string> check_policies(const Services& services, const Session& session, const cni::Invocation& inv,
                                        const store::ContainerRecord& record, scoping::ScopingEnv& env);

}  // namespace manifold::engine
