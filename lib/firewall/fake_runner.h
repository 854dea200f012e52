// An in-memory IptablesRunner for unit tests. It records every call and simulates the nat and filter
// tables per (family, backend) closely enough to exercise the mesh and policy lifecycles: restore payloads are applied
// atomically with iptables-restore --noflush semantics (a user chain line creates or flushes, -A,
// -I [n], -D by exact rule text, -N, -F, -X with iptables' refusals: unknown chain or jump target,
// missing rule, non-empty or referenced chain, built-in chain), and save renders the table in
// iptables-save form. Tests can also make binaries "missing", inject restore failures, and run a
// hook just before a restore (to simulate a concurrent change).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "firewall/runner.h"
#include "firewall/save_text.h"

namespace manifold::firewall {

/// The simulated runner.
class FakeIptablesRunner final : public IptablesRunner {
 public:
  /// One recorded call.
  struct Call {
    std::string op;       ///< "save", "restore" or "detect"
    Family family{};      ///< unused for "detect"
    Backend backend{};    ///< unused for "detect"
    std::string payload;  ///< the restore payload ("" otherwise)
    Table table{};        ///< the table saved ("save" only)
  };

  FakeIptablesRunner() = default;

  std::string save(Family family, Backend backend, Table table) override;
  void restore(Family family, Backend backend, const std::string& payload) override;
  Backend detect() override;
  bool available(Family family, Backend backend) override;

  /// What detect() answers.
  void set_detected(Backend backend) { detected_ = backend; }
  /// Makes the binaries of `family`/`backend` missing: available() is false, save/restore throw.
  void set_missing(Family family, Backend backend) { missing_.insert({family, backend}); }
  /// Makes the next `count` restores of `family` fail (any backend) without changing the table.
  void fail_restores(Family family, int count) { failures_[family] = count; }
  /// Called at the start of every restore, before the payload is applied.
  void set_before_restore(std::function<void(Family, Backend)> hook) { before_restore_ = std::move(hook); }

  /// Applies `payload` like restore() but without recording it (to seed foreign rules).
  /// Throws CniError(Firewall) when the payload is refused.
  void load(Family family, Backend backend, const std::string& payload);
  /// The simulated `table` of `family`/`backend`, rendered like iptables-save -t <table>.
  std::string table_text(Family family, Backend backend, Table table = Table::Nat) const;

  /// Every call so far, in order.
  const std::vector<Call>& calls() const { return calls_; }
  /// How many calls had operation `op`.
  std::size_t count(const std::string& op) const;
  /// Forgets the recorded calls (the tables stay).
  void clear_calls() { calls_.clear(); }

 private:
  using Key = std::pair<Family, Backend>;
  using TableKey = std::tuple<Family, Backend, Table>;

  SavedTable& table(Family family, Backend backend, Table table);
  void check_present(Family family, Backend backend, bool restore) const;

  std::map<TableKey, SavedTable> tables_;
  std::set<Key> missing_;
  std::map<Family, int> failures_;
  std::function<void(Family, Backend)> before_restore_;
  std::vector<Call> calls_;
  Backend detected_ = Backend::Nft;
};

/// Applies an iptables-restore --noflush payload to `table` (nat or filter; the payload must name
/// that table) atomically: on any error the table is unchanged and CniError(Firewall) says which
/// line failed and why.
void apply_restore_payload(SavedTable& table, const std::string& payload);

/// The table a payload names in its first `*<table>` line (nat or filter); CniError(Firewall) for
/// anything else.
Table payload_table(const std::string& payload);

/// `table` with only its built-in chains, as a fresh namespace has.
SavedTable empty_table(Table table);

/// A nat table with only the four built-in chains, as a fresh namespace has.
SavedTable empty_nat_table();

}  // namespace manifold::firewall
