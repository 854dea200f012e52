// Detaching: the DEL of cached attachments, in reverse, each one's network scoping removed before
// its delegate's DEL, every one attempted whatever the others do; keeping in the cache exactly the
// attachments whose DEL failed; and the whole DEL of an entry — from the cache, or, when the entry
// is missing or unreadable, from attachments rebuilt from the config (and the pod and its NADs when
// they can be read), DELeted without a namespace so that their IP reservations are released and no
// link that nothing proves ours is touched; or, for a container Multus attached before the node
// moved to manifold, from Multus's own cache.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cni/error.h"
#include "cni/skel.h"
#include "engine/services.h"
#include "engine/session.h"
#include "exec/delegate_runner.h"
#include "scoping/scoping.h"
#include "store/cache.h"

namespace manifold::engine {

/// The netns field of a rebuilt record: its delegates are DELeted without a namespace.
inline const std::string kNoNetns = "-";

/// The netns path delegates get on DEL: empty when it is kNoNetns or no longer exists (spec: do
/// what cleanup you can).
std::string del_netns(const std::string& netns);

/// DELs every attachment of `record` in reverse with CNI_NETNS `netns` ("" = none: the delegates
/// only release what they hold, e.g. IPAM), removing its network scoping and MultiNetworkPolicy
/// rules first when `scoping` is given, and its device-info file after (whether the DEL succeeded or not: the file only informs
/// the delegate's ADD). Attachments whose delegate was never started (an ADD killed before it ran
/// it) are skipped: nothing of theirs exists. Returns the attachments whose DEL failed; the first
/// error goes to `first_error`, and those whose own network scoping could not be removed also to
/// `*scoping_left` when given (their rules are ours: they must stay recorded whatever
/// `retryDeleteOnError` says). `inv` supplies the container, CNI_PATH and the runtime's CNI_ARGS
/// (for attachments without cached ones).
std::vector<store::AttachmentRecord> delete_attachments(Session& session, const cni::Invocation& inv,
                                                        const store::ContainerRecord& record, const std::string& netns,
                                                        std::optional<cni::CniError>& first_error,
                                                        scoping::ScopingEnv* scoping = nullptr,
                                                        std::vector<store::AttachmentRecord>* scoping_left = nullptr);

/// Removes a cache entry whose attachments were all deleted; a failure is logged, not thrown.
void forget_entry(store::Cache& cache, const store::EntryKey& key);

/// Records in `record` and its saved entry that a DEL began (engine/entry_state.h), so the node
/// agent leaves the sandbox alone from now on: a mark in place (store::Cache::mark_state), or a
/// save where none can be set; a failure is logged, not thrown.
void mark_deleting(store::Cache& cache, store::ContainerRecord& record);

/// Stores `record` with only its `failed` attachments, for the next DEL to retry; a failure is
/// logged, not thrown.
void keep_failed(store::Cache& cache, store::ContainerRecord record, std::vector<store::AttachmentRecord> failed);

/// The DEL invocation of a cached entry outside a CNI call (manifold gc, the agent): its container,
/// CNI_IFNAME, CNI_PATH and cniVersion; no namespace and no runtime CNI_ARGS.
cni::Invocation invocation_for(const store::ContainerRecord& record);

/// Network scoping in one pod namespace, opened for removals.
struct ScopingSession {
  std::unique_ptr<netlink::NetOps> net;  ///< netlink in the namespace
  scoping::IptablesRunnerPool iptables;  ///< iptables in the namespace
  scoping::ScopingEnv env;               ///< both, for the scoping calls
  /// Opens both in `netns`.
  ScopingSession(const Services& services, const std::string& netns);
};

/// The iptables runners of the pod namespace `netns`, for network scoping (created on first use).
scoping::IptablesRunnerPool iptables_pool(const Services& services, const std::string& netns);

/// The DEL of the call's entry (the CNI DEL): every attachment detached, the entry forgotten — or
/// kept with the attachments whose network scoping could not be removed, and with
/// `retryDeleteOnError` also those whose delegate's DEL failed, so the runtime's next DEL retries
/// them. Without an entry of manifold's, a container Multus attached (engine/multus_cache.h) gets
/// the DELs of what Multus cached for it. Throws the first error of a cached attachment after every
/// one was attempted; a rebuilt DEL only logs its errors.
void detach_entry(const Services& services, Session& session, const cni::Invocation& inv);

}  // namespace manifold::engine
