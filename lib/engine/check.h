// CHECK of a cache entry: every attachment, not only the cluster network — its interface is in the
// namespace with the addresses its result reported, its delegate's own CHECK (with the cached
// result as prevResult) passes, and its network scoping (rules, tables, chains, the chosen default
// route) is what ADD made; with MultiNetworkPolicy enforced, the policy rules of every attachment
// are what the current policies generate (engine/policy_step.h).
#pragma once

#include "cni/skel.h"
#include "engine/services.h"
#include "engine/session.h"
#include "netlink/net_ops.h"
#include "store/record.h"

namespace manifold::engine {

/// Throws CniError(CheckFailed) when the interface of `a` is missing or lacks an address of its
/// cached result, CniError(Decoding) when that result cannot be decoded.
void check_interface(netlink::NetOps& ops, const store::AttachmentRecord& a);

/// CHECK of the call's entry (the caller holds the container's lock). Throws
/// CniError(UnknownContainer) when nothing is recorded, CniError(CheckFailed) naming the first
/// difference, and a delegate's own CHECK error.
void check_entry(const Services& services, Session& session, const cni::Invocation& inv);

}  // namespace manifold::engine
