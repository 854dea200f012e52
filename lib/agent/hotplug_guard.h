// What a hot-plug checks before it acts in a running sandbox, beyond its annotation: that the
// recorded network namespace path still names the namespace the ADD worked in (a /proc/<pid>/ns/net
// path names whatever process has that PID now) and never the agent's own; and which namespace
// policy (`namespaceIsolation`, `globalNamespaces`) applies — the node's current generated config,
// read at every reconcile, so a change reaches running pods' hot-plugs.
#pragma once

#include <optional>
#include <string>

#include "cni/netconf.h"
#include "engine/services.h"
#include "store/record.h"

namespace manifold::agent {

/// Why a hot-plug into `netns` (the path `record` holds, which exists) must not happen; nullopt when
/// it may. Refused: a path naming another namespace than the identity the entry records, or the
/// agent's own (/proc/self/ns/net); an entry that records no identity (written by an older
/// manifold) when its path is under /proc, or when identities cannot be read. An entry without an
/// identity whose path is a bind mount (/var/run/netns/…, which keeps its namespace for as long as
/// it is mounted) may go on: the identity it names now is recorded in `record` (not saved), so it is
/// checked from then on. Without services.netns_identity nothing can be checked: only entries that
/// record no identity and whose path is not under /proc may go on.
std::optional<std::string> netns_refusal(const engine::Services& services, store::ContainerRecord& record,
                                         const std::string& netns);

/// The node's generated config in `conf_dir` (00-manifold.conflist, else 00-manifold.conf), read
/// through services.files: its namespaceIsolation and globalNamespaces replace those of `config`
/// (the config the ADD recorded). Nothing changes when `conf_dir` is "" or no readable, valid
/// generated config is there (an invalid one is logged at verbose level).
void apply_current_namespace_policy(const engine::Services& services, const std::string& conf_dir,
                                    cni::MetaConfig& config);

}  // namespace manifold::agent
