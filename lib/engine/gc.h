// GC (CNI 1.1) and STATUS of a manifold network. GC first releases every cached attachment of this
// network whose container the runtime no longer lists in `cni.dev/valid-attachments` (DEL without a
// namespace, so IPAM lets go; the entry forgotten, or kept with what failed), then gives each
// configured delegate that speaks 1.1.0 its own GC with the attachments that remain its. STATUS asks
// the cluster network's delegate. Both resolve NAD-named `clusterNetwork`/`defaultNetworks`
// through the API, as ADD does.
#pragma once

#include <set>
#include <string>
#include <utility>

#include "cni/skel.h"
#include "engine/services.h"
#include "engine/session.h"
#include "util/json.h"

namespace manifold::engine {

/// The attachments GC must keep, from `cni.dev/valid-attachments`: (containerID, ifname) pairs.
/// Throws CniError(InvalidConfig) when the key is missing or null (it would collect every container
/// of the network) or malformed; an empty list is a valid request to collect everything.
std::set<std::pair<std::string, std::string>> parse_valid_attachments(const Json& config);

/// GC of the call's network (`inv` has no container). Throws the first error after every step ran.
void collect_garbage(const Services& services, Session& session, const cni::Invocation& inv);

/// STATUS of the call's network: the cluster delegate's own STATUS when it speaks 1.1.0 (its error
/// passes through). When the cluster network is a NAD and the API cannot be reached, reports ready
/// (logged): an unreachable API server alone must not make the node NotReady.
void report_status(const Services& services, Session& session, const cni::Invocation& inv);

}  // namespace manifold::engine
