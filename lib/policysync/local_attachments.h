// The policy sync's side of this node's cache: which attachments of which pods carry policy rules
// (every complete entry's attachments whose recorded policy state was applied, with the entry's
// multiNetworkPolicy settings), and the real applier, which puts new rules in force in the pod's
// namespace under the container's lock — the lock every CNI verb and hot-plug take — after
// checking that the entry is still complete and its namespace is still the one it was added in,
// and records the new state (whether every allow is known) in the entry.
#pragma once

#include <string>
#include <vector>

#include "engine/services.h"
#include "policysync/policy_sync.h"
#include "store/cache.h"

namespace manifold::policysync {

/// Every attachment of `cache` whose policy rules the sync keeps current. Unreadable entries are
/// skipped (logged).
std::vector<LocalAttachment> local_attachments(store::Cache& cache);

/// True when the node's generated config in `conf_dir` (00-manifold.conflist or .conf) enables
/// multiNetworkPolicy; false without `conf_dir` or such a config.
bool policy_enabled_on_node(const engine::Services& services, const std::string& conf_dir);

/// The applier that works on the node: iptables in the pod namespace (services.open_iptables when
/// set), under the container's lock in `cache`.
RuleApplier real_applier(const engine::Services& services, store::Cache& cache);

}  // namespace manifold::policysync
