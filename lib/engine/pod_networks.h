// Attachment resolution with Kubernetes, in Multus's order: the cluster network (the pod's
// v1.multus-cni.io/default-network annotation, else `clusterNetwork` as a NAD in multusNamespace or a
// config file, else the first delegate), then `defaultNetworks` (not for pods in systemNamespaces),
// then the networks of the pod's k8s.v1.cni.cncf.io/networks annotation. Each distinct NAD is
// fetched once; selection-element fields are delivered as Multus delivers them.
#pragma once

#include <string>
#include <vector>

#include "cni/netconf.h"
#include "cni/skel.h"
#include "engine/attachment.h"
#include "engine/kube_access.h"
#include "k8s/pod.h"
#include "k8s/selection.h"
#include "kubelet/device_allocation.h"
#include "util/json.h"

namespace manifold::engine {

/// The pod named by CNI_ARGS is not in the Kubernetes API (404): CniError(Kubernetes) naming it. A
/// type of its own because a DEL without a cache expects it (the runtime's repeated DELs of a
/// deleted pod's sandbox), where every other failure to read the pod is worth an error line.
class PodNotFound : public cni::CniError {
 public:
  /// The error for pod `ns`/`name`.
  PodNotFound(const std::string& ns, const std::string& name);
};

/// Fetches the pod named by CNI_ARGS, decoded, and checks its UID against K8S_POD_UID (static pods,
/// marked by the kubernetes.io/config.source annotation, are exempt). A missing pod is PodNotFound.
k8s::Pod fetch_pod(KubeAccess& kube, const cni::PodRef& ref);

/// How resolve_pod_attachments treats a network it cannot resolve.
enum class Resolution {
  Strict,      ///< ADD: any failure is the error of the whole resolution
  BestEffort,  ///< DEL without a cache: such a network is skipped (logged); the others keep the
               ///< interface names they had at ADD, so their delegates can release what they hold
};

/// Resolves every attachment of `pod`. `devices` hands out kubelet-allocated device IDs.
std::vector<Attachment> resolve_pod_attachments(const cni::MetaConfig& config, const cni::Invocation& inv,
                                                KubeAccess& kube, const k8s::Pod& pod,
                                                kubelet::DeviceAllocator& devices,
                                                Resolution mode = Resolution::Strict);

/// The attachment of one element of the pod's networks annotation as ADD resolves it (namespace
/// isolation, NAD fetched, the element's requests applied and recorded), on `ifname`: the node
/// agent's hot-plug. No kubelet device is allocated to it. Throws what resolution throws
/// (CniError(NetworkNotFound) for a missing NAD, isolation and API errors).
Attachment resolve_selected_network(const cni::MetaConfig& config, const cni::Invocation& inv, KubeAccess& kube,
                                    const k8s::SelectionElement& element, const std::string& ifname);
/// The networks manifold is configured with, for verbs that have no pod (GC, STATUS): the cluster
/// network, `defaultNetworks` and the remaining inline delegates, with NAD names resolved through
/// `kube` as ADD resolves them (files when Kubernetes is not configured). Throws the API's CniError
/// (k8s::ApiError) when a NAD cannot be read, CniError(NetworkNotFound) when a network is missing.
std::vector<Attachment> resolve_configured_attachments(const cni::MetaConfig& config, const cni::Invocation& inv,
                                                       KubeAccess& kube);

}  // namespace manifold::engine
