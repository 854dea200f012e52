// MemoryCache: records in a map under one mutex, locks as a set of held container IDs with a
// condition variable for waiters.
#include "store/memory_cache.h"

#include <algorithm>

#include "cni/error.h"
#include "store/record_text.h"

namespace manifold::store {

/// MemoryCache's lock guard.
class MemoryCache::Guard final : public LockGuard {
 public:
  Guard(MemoryCache& cache, std::string id) : cache_(cache), id_(std::move(id)) {}
  ~Guard() override { cache_.unlock(id_); }

 private:
  MemoryCache& cache_;
  std::string id_;
};

MemoryCache::MemoryCache(std::chrono::milliseconds lock_timeout) : lock_timeout_(lock_timeout) {}

std::optional<ContainerRecord> MemoryCache::load(const EntryKey& key) {
  validate_entry_key(key);
  std::lock_guard lock(mu_);
  if (corrupt_.count(key) != 0)
    throw cni::CniError(cni::ErrorCode::Decoding,
                        "corrupt cache file memory:" + key.str() + ": marked corrupt by the test");
  auto it = records_.find(key);
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

void MemoryCache::save(const ContainerRecord& record) {
  validate_entry_key(record.key());
  if (record.key().legacy())
    throw cni::CniError(cni::ErrorCode::Internal,
                        "cache entry of container " + record.container_id + " has no network name and cannot be saved");
  (void)record_text(record);  // same checks (and failures) as the file cache
  std::lock_guard lock(mu_);
  corrupt_.erase(record.key());
  records_[record.key()] = record;
}

bool MemoryCache::mark_or_save(const ContainerRecord& record, bool markable,
                               const std::function<void(ContainerRecord&)>& apply) {
  {
    std::lock_guard lock(mu_);
    ++marks_;
    auto it = records_.find(record.key());
    if (markable && !refuse_marks_ && it != records_.end() && corrupt_.count(record.key()) == 0) {
      apply(it->second);
      return false;
    }
  }
  save(record);
  return true;
}

bool MemoryCache::mark_started(const ContainerRecord& record, std::size_t count) {
  return mark_or_save(record, true, [count](ContainerRecord& stored) {
    for (std::size_t i = 0; i < count && i < stored.attachments.size(); ++i)
      stored.attachments[i].delegate_started = true;
  });
}

bool MemoryCache::mark_state(const ContainerRecord& record) {
  auto state = record.extra.find(kEntryStateKey);
  return mark_or_save(record, state != record.extra.end(),
                      [&state](ContainerRecord& stored) { stored.extra[kEntryStateKey] = *state; });
}

void MemoryCache::remove(const EntryKey& key) {
  validate_entry_key(key);
  std::lock_guard lock(mu_);
  corrupt_.erase(key);
  records_.erase(key);
}

std::vector<EntryKey> MemoryCache::list() {
  std::lock_guard lock(mu_);
  std::set<EntryKey> keys(corrupt_.begin(), corrupt_.end());
  for (const auto& [key, record] : records_) keys.insert(key);
  return {keys.begin(), keys.end()};
}

std::vector<EntryKey> MemoryCache::list(const std::string& container_id) {
  validate_container_id(container_id);
  std::vector<EntryKey> keys;
  for (EntryKey& key : list())
    if (key.container_id == container_id) keys.push_back(std::move(key));
  return keys;
}

std::unique_ptr<LockGuard> MemoryCache::lock(const std::string& container_id) {
  validate_container_id(container_id);
  std::unique_lock lock(mu_);
  auto held = holders_.find(container_id);
  if (held != holders_.end() && held->second == std::this_thread::get_id()) {
    throw cni::CniError(cni::ErrorCode::Internal, "container " + container_id + " is already locked by this thread");
  }
  bool free = released_.wait_for(lock, lock_timeout_, [&] { return holders_.count(container_id) == 0; });
  if (!free) {
    throw cni::CniError(cni::ErrorCode::TryAgainLater, "timed out after " + std::to_string(lock_timeout_.count()) +
                                                           " ms waiting for the lock of container " + container_id);
  }
  holders_[container_id] = std::this_thread::get_id();
  return std::make_unique<Guard>(*this, container_id);
}

void MemoryCache::corrupt(const EntryKey& key) {
  validate_entry_key(key);
  std::lock_guard lock(mu_);
  corrupt_.insert(key);
}

bool MemoryCache::is_idle(const std::string& container_id) {
  validate_container_id(container_id);
  if (is_locked(container_id)) return false;
  std::lock_guard lock(mu_);
  const auto of_container = [&](const EntryKey& key) { return key.container_id == container_id; };
  return std::none_of(corrupt_.begin(), corrupt_.end(), of_container) &&
         std::none_of(records_.begin(), records_.end(), [&](const auto& entry) { return of_container(entry.first); });
}

bool MemoryCache::is_locked(const std::string& container_id) const {
  std::lock_guard lock(mu_);
  return holders_.count(container_id) != 0;
}

void MemoryCache::unlock(const std::string& container_id) {
  {
    std::lock_guard lock(mu_);
    holders_.erase(container_id);
  }
  released_.notify_all();
}

}  // namespace manifold::store
