// Planning the attachments of a sandbox: which networks, in which order, with which interface
// names and delegate configs (from the static config alone, or from the pod and its NADs), and the
// validated network-scoping plan of each — all before anything is created, so a bad NAD, selection
// or scoping key fails an ADD with nothing to undo. A DEL that lost its cache entry plans the same
// way to rebuild the records it must release.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cni/netconf.h"
#include "cni/skel.h"
#include "engine/attachment.h"
#include "engine/kube_access.h"
#include "engine/pod_networks.h"
#include "engine/policy_step.h"
#include "engine/services.h"
#include "engine/session.h"
#include "k8s/pod.h"
#include "scoping/scoping.h"
#include "store/record.h"
#include "util/json.h"

namespace manifold::engine {

/// What an ADD will attach: the attachments and, index-aligned, their scoping plans and policy rules.
struct Plan {
  std::vector<Attachment> attachments;        ///< in attach order; the cluster network first
  std::vector<scoping::ScopingPlan> scoping;  ///< scoping[i] belongs to attachments[i]
  PolicyPlan policy;                          ///< policy.attachments[i] belongs to attachments[i]
};

/// The pod of the call, when Kubernetes is configured and CNI_ARGS names one (GET pod, UID checked).
std::optional<k8s::Pod> lookup_pod(KubeAccess& kube, const cni::Invocation& inv);

/// Every attachment of the call: from the pod and its NADs when there is one, else from the config.
std::vector<Attachment> resolve_attachments(const Services& services, const Session& session, KubeAccess& kube,
                                            const cni::Invocation& inv, const std::optional<k8s::Pod>& pod,
                                            Resolution mode = Resolution::Strict);

/// Strips the scoping keys from every attachment's delegate and plans each one (index-aligned with
/// `attachments`) from the top-level keys, the stripped keys, the selection's `cni-args` and
/// `default-route`; then validates the default-route requests across attachments. Throws
/// CniError(InvalidConfig) before anything is created; every delegate is stripped even then.
std::vector<scoping::ScopingPlan> plan_attachments_scoping(const Json& top_scoping,
                                                           std::vector<Attachment>& attachments);

/// The whole ADD plan: resolution, scoping plans, the plugin preflight and the MultiNetworkPolicy
/// rules (engine/policy_step.h).
Plan plan_add(const Services& services, const Session& session, KubeAccess& kube, const cni::Invocation& inv,
              const std::optional<k8s::Pod>& pod);

/// The records a DEL without a usable cache entry works from: `attachments` as they would have
/// been added (delegate config as prepared for them, planned scoping state), without results.
std::vector<store::AttachmentRecord> rebuilt_attachments(const cni::MetaConfig& config,
                                                         std::vector<Attachment> attachments);

/// The record of `a` before its delegate runs: names, the prepared delegate config (its cniVersion
/// in `version`), the CNI_ARGS it gets, its device-info file and the planned scoping state.
store::AttachmentRecord planned_record(const cni::MetaConfig& config, const cni::Invocation& inv, const Attachment& a,
                                       const scoping::ScopingPlan& plan, std::string& version);

}  // namespace manifold::engine
