// The MultiNetworkPolicy peers CHECK compares with once the node agent has filled them in: listed
// from the API server, metadata only (PartialObjectMetadata: labels and network-status), in pages,
// only what the selectors of the policies covering the network may choose — the pods of the
// policy's namespace for a podSelector alone (its matchLabels sent as the label selector), every
// namespace's pods and the namespaces' labels when a namespaceSelector is involved.
#pragma once

#include <string_view>
#include <vector>

#include "engine/kube_access.h"
#include "policy/evaluate.h"
#include "policy/policy.h"

namespace manifold::engine {

/// The peers `policies` may choose on `network` ("ns/name"). Throws the API's error.
policy::PeerWorld list_policy_peers(KubeAccess& kube, const std::vector<policy::MultiNetworkPolicy>& policies,
                                    std::string_view network);

}  // namespace manifold::engine
