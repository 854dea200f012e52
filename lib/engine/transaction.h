// Attaching networks to one cache entry as a transaction. Each attachment is recorded before its
// delegate runs (so a crash can still be cleaned up), its result and then its network scoping are
// recorded after. A result is written by the entry's next save, which always comes before the
// next side effect or step (the next attachment, a scoping or default-route change, the
// network-status write, a rollback, or the final complete mark, which it then shares): a crash in
// between leaves what a crash inside the delegate would, so writing it earlier would protect
// nothing more. Anything that throws before commit() is undone when the transaction goes out of
// scope, in reverse and exactly: the default-route changes it made, then for every attachment it
// added the scoping and the delegate's DEL; the entry is left as it was before (removed when the
// transaction created it), except for attachments whose DEL failed, which stay recorded for the
// runtime's DEL to retry. The CNI ADD attaches every network of a new entry this way; the node
// agent attaches one more network to a running sandbox's entry the same way.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cni/result.h"
#include "cni/skel.h"
#include "engine/attachment.h"
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

  /// Attaches one more network with its scoping plan: CniError(InterfaceExists) when its interface
  /// name is taken in the namespace, CniError(DelegateFailed) for an invalid result, and whatever
  /// the delegate, the cache or the scoping throws.
  void attach(const Attachment& a, const scoping::ScopingPlan& plan);
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
  /// The decoded result of every attachment, index-aligned with record().attachments.
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

  const Services& services_;
  Session& session_;
  const cni::Invocation& inv_;
  std::unique_ptr<netlink::NetOps> netns_;
  scoping::IptablesRunnerPool iptables_;
  scoping::ScopingEnv env_;
  store::ContainerRecord record_;
  std::vector<cni::Result> results_;
  std::size_t first_new_ = 0;  ///< attachments before this index were there before
  std::vector<scoping::DefaultRouteChange> route_changes_;
  bool unsaved_ = false;  ///< record_ holds a result the cache does not have yet
  bool committed_ = false;
};

}  // namespace manifold::engine
