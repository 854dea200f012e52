// Attaching networks to one cache entry as a transaction. Every interface name is checked free
// and every attachment recorded, in one write, before the first delegate runs (so a crash at any
// point leaves an entry whose DEL releases whatever was done). Each later delegate is marked
// started before it runs, in place (store::Cache::mark_started, no rewrite of the entry), so the
// DEL after a kill skips the attachments whose delegate never ran: there is nothing to release,
// and a plugin whose DEL fails on an interface it never made (Debian's host-device, sbr) would
// otherwise keep the pod's DEL failing when retryDeleteOnError is set. A delegate's result,
// and then its network scoping, are recorded after it ran. A result is written by the entry's next
// save, which always comes before the next step that depends on it or acts outside the
// transaction (a scoping or default-route change, the network-status write, a rollback, or the
// final complete mark, which it then shares): a crash in between leaves what a crash inside the
// delegate would, so writing it earlier would protect nothing more. An ADD of N networks without
// scoping thus writes its entry twice (three times with Kubernetes), not once or twice per
// network: each write replaces the entry's file, which costs a file system's replace-by-rename
// work (ext4 allocates and starts writing the new data, and frees the old). Anything that throws
// before commit() is undone when the transaction goes out of scope, in reverse and exactly: the
// default-route changes it made, then for every attachment whose delegate ran the scoping and the
// delegate's DEL; the entry is left as it was before (removed when the transaction created it),
// except for attachments whose DEL failed, which stay recorded for the runtime's DEL to retry. The
// CNI ADD attaches every network of a new entry this way; the node agent attaches more networks to
// a running sandbox's entry the same way.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cni/result.h"
#include "cni/skel.h"
#include "engine/attachment.h"
#include "engine/policy_step.h"
#include "engine/services.h"
#include "engine/session.h"
#include "netlink/net_ops.h"
#include "scoping/scoping.h"
#include "store/record.h"

namespace manifold::engine {

/// Throws the cache's CniError (naming the entry) when the entry of `key` exists but cannot be read:
/// it may describe attachments only its DEL can still release, so ADD must not overwrite it.
void refuse_unreadable_entry(store::Cache& cache, const store::EntryKey& key);

/// A new, empty entry for the call `inv` in `session`'s network.
store::ContainerRecord new_entry(const Session& session, const cni::Invocation& inv);

/// The default-route step over a record's attachments (`plans` index-aligned with
/// `record.attachments`): the routes applied in `env`, each changed result rewritten in the version
/// it was written in, so the returned result, CHECK's prevResult and the network-status `gateway`
/// lists agree with the namespace. Returns what changed (empty: nothing was asked or changed).
std::vector<scoping::DefaultRouteChange> apply_default_routes_to_record(scoping::ScopingEnv& env,
                                                                        const std::vector<scoping::ScopingPlan>& plans,
                                                                        store::ContainerRecord& record);

/// Attachments added to one entry, all or none. The caller holds the container's cache lock for the
/// transaction's whole life.
class AttachTransaction {
 public:
  /// Starts on `entry` (empty for an ADD; the sandbox's current entry for a hot-plug, whose
  /// results are decoded now) in the sandbox `inv` names. Opens its network namespace: CniError
  /// when it cannot.
  AttachTransaction(const Services& services, Session& session, const cni::Invocation& inv,
                    store::ContainerRecord entry);
  /// Rolls back unless committed. Never throws; what cannot be undone is logged.
  ~AttachTransaction();
  AttachTransaction(const AttachTransaction&) = delete;
  AttachTransaction& operator=(const AttachTransaction&) = delete;

  /// Attaches `as` in order, each with its scoping plan (`plans` index-aligned) and, when `policy`
  /// is given, the MultiNetworkPolicy rules it plans (index-aligned; installed before the
  /// delegate runs): all recorded in one write, then each delegate run. CniError(InterfaceExists)
  /// when an interface name is taken in the namespace (before any delegate runs, or when an
  /// earlier delegate took it), CniError(DelegateFailed) for an invalid result, and whatever the
  /// delegate, the cache, the scoping or the policy rules throw.
  void attach_all(const std::vector<Attachment>& as, const std::vector<scoping::ScopingPlan>& plans,
                  const PolicyPlan* policy = nullptr);
  /// The default-route step over every attachment of the entry (`plans` index-aligned with
  /// record().attachments): routes applied, results rewritten to match, the entry saved.
  void apply_default_routes(const std::vector<scoping::ScopingPlan>& plans);
  /// Records the entry as complete (engine/entry_state.h) and saves it: the ADD calls it once it
  /// attached everything and wrote the network-status, so the node agent may act on the sandbox.
  void mark_complete();
  /// Writes the entry if a result is not on disk yet: called before any side effect outside the
  /// transaction (the network-status write), so the cache covers everything done so far.
  void flush();
  /// The entry as it stands.
  const store::ContainerRecord& record() const { return record_; }
  /// The decoded result of every attachment whose delegate ran: index-aligned with
  /// record().attachments once attach_all() returned.
  const std::vector<cni::Result>& results() const { return results_; }
  /// Writes what is not on disk yet (flush()), then keeps everything: the destructor no longer
  /// rolls back. When that write throws, the transaction is not committed and rolls back.
  void commit() {
    flush();
    committed_ = true;
  }

 private:
  void roll_back() noexcept;
  void save();
  void refuse_taken_ifname(const Attachment& a);
  void run_attachment(const Attachment& a, const scoping::ScopingPlan& plan, const std::string& version,
                      std::size_t index, const PolicyPlan* policy, std::size_t policy_index);

  const Services& services_;
  Session& session_;
  const cni::Invocation& inv_;
  std::unique_ptr<netlink::NetOps> netns_;
  scoping::IptablesRunnerPool iptables_;
  scoping::ScopingEnv env_;
  store::ContainerRecord record_;
  std::vector<cni::Result> results_;
  std::size_t first_new_ = 0;  ///< attachments before this index were there before
  std::size_t started_ = 0;    ///< attachments before this index had their delegate run (or tried)
  std::vector<scoping::DefaultRouteChange> route_changes_;
  bool unsaved_ = false;  ///< record_ holds a result the cache does not have yet
  bool committed_ = false;
};

}  // namespace manifold::engine
