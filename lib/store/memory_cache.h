// MemoryCache: the Cache of the engine's tests. It keeps records in memory with the same key
// validation, storability checks and lock semantics as FileCache, and can mark an entry corrupt so
// tests exercise the paths a damaged file takes.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store/cache.h"

namespace manifold::store {

/// An in-memory Cache for tests, with the same ID validation and lock semantics as FileCache.
class MemoryCache final : public Cache {
 public:
  /// A cache whose lock waits give up after `lock_timeout` (real time).
  explicit MemoryCache(std::chrono::milliseconds lock_timeout = kDefaultLockTimeout);

  std::optional<ContainerRecord> load(const EntryKey& key) override;
  void save(const ContainerRecord& record) override;
  /// Sets the flags in the stored record, like FileCache's mark, and returns false; after
  /// refuse_marks() saves the whole record and returns true, like FileCache where no mark can be set.
  bool mark_started(const ContainerRecord& record, std::size_t count) override;
  /// Sets the stored record's "state" like FileCache's mark (false), or saves after refuse_marks().
  bool mark_state(const ContainerRecord& record) override;
  void remove(const EntryKey& key) override;
  std::vector<EntryKey> list() override;
  std::vector<EntryKey> list(const std::string& container_id) override;
  bool is_idle(const std::string& container_id) override;
  int sweep_orphan_locks() override { return 0; }
  std::unique_ptr<LockGuard> lock(const std::string& container_id) override;

  /// Makes load(key) throw CniError(Decoding) like a corrupt file, until save or remove.
  void corrupt(const EntryKey& key);
  /// From now on mark_started() and mark_state() fall back to a whole save.
  void refuse_marks() { refuse_marks_ = true; }
  /// How many times mark_started() or mark_state() was called.
  int marks() const { return marks_; }
  /// True while a guard for `container_id` is alive.
  bool is_locked(const std::string& container_id) const;

 private:
  class Guard;
  void unlock(const std::string& container_id);
  /// The marks' common part: applies `apply` to the stored record when `markable`, marks are not
  /// refused and the entry is there and readable (returns false); otherwise saves `record` (true).
  bool mark_or_save(const ContainerRecord& record, bool markable, const std::function<void(ContainerRecord&)>& apply);

  std::chrono::milliseconds lock_timeout_;
  mutable std::mutex mu_;
  std::condition_variable released_;
  std::map<EntryKey, ContainerRecord> records_;
  std::set<EntryKey> corrupt_;
  bool refuse_marks_ = false;
  int marks_ = 0;
  std::map<std::string, std::thread::id> holders_;
};

}  // namespace manifold::store
