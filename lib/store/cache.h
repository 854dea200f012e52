// The per-container cache (design §7): what DEL, CHECK and GC need to undo or verify an ADD without
// the API server — the exact bytes of every delegate config and result, interface names and the
// network-scoping state. FileCache keeps one JSON file per container under cniDir, written
// atomically (temp file, rename) with 0700 directories and 0600 files, and serialises calls for
// one container with a FileLock. Writes are not fsync'ed: a reader or a crashed manifold always
// sees a whole old or whole new file, and only a power loss — which also destroys every network
// namespace the cache describes — can lose or truncate an entry, which DEL and GC then treat as
// unreadable (best-effort cleanup). An fsync costs milliseconds to tens of milliseconds on a busy
// node disk, twice per attachment, which is far over the per-ADD budget (libcni and Multus do not
// sync their caches either). MemoryCache is the fake for command tests.
// Container IDs are validated before they become a file name, and cache files are treated as
// untrusted input on load.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "store/file_lock.h"
#include "util/json.h"

namespace manifold::store {

/// One network attachment of a container.
struct AttachmentRecord {
  /// Status/display name ("<namespace>/<name>" for NADs).
  std::string name;
  /// Interface name inside the pod.
  std::string ifname;
  /// Exact bytes passed to the delegate: conf or conflist JSON text.
  std::string config;
  /// Exact result bytes; "" until the ADD succeeded.
  std::string result;
  /// True for the cluster network (eth0) attachment.
  bool cluster_network = false;
  /// Scoping state and anything else; must be a JSON object.
  Json extra = Json::object();

  bool operator==(const AttachmentRecord&) const = default;
};

/// Everything cached for one container.
struct ContainerRecord {
  std::string container_id;
  std::string netns;
  std::string ifname;
  std::string cni_version;
  std::vector<AttachmentRecord> attachments;
  /// Container-level state; must be a JSON object.
  Json extra = Json::object();

  bool operator==(const ContainerRecord&) const = default;
};

/// Longest accepted container ID. Real IDs are 64 hex digits; the bound keeps every file name we
/// derive (longest: "<id>.<pid>.<seq>.tmp", 33 more bytes) under NAME_MAX (255), so an ID that
/// passes validation can never fail later with ENAMETOOLONG.
inline constexpr size_t kMaxContainerIdLength = 200;
/// Largest cache file accepted on load (and produced on save).
inline constexpr size_t kMaxCacheFileBytes = 8u << 20;
/// Deepest JSON nesting accepted in a cache file.
inline constexpr int kMaxCacheJsonDepth = 64;
/// Default bound on waiting for a container's lock.
inline constexpr std::chrono::milliseconds kDefaultLockTimeout{30000};

/// Throws CniError(InvalidEnv) unless `id` matches [A-Za-z0-9][A-Za-z0-9_.-]* and has at most
/// kMaxContainerIdLength characters (so it is safe as a file name).
void validate_container_id(std::string_view id);

/// Serialises a record to its cache-file JSON (format "manifold-cache" version 1).
Json record_to_json(const ContainerRecord& record);
/// One element of the record's "attachments" list in the cache-file JSON.
Json attachment_to_json(const AttachmentRecord& attachment);
/// Parses and validates cache-file JSON; throws CniError(Decoding) mentioning `source` on any
/// missing or wrongly typed field, a different container ID or an unknown format.
ContainerRecord record_from_json(const Json& json, const std::string& container_id,
                                 const std::string& source);

/// The per-container cache.
class Cache {
 public:
  virtual ~Cache() = default;
  /// nullopt when there is no entry; throws CniError(Decoding) naming the file when it is corrupt.
  virtual std::optional<ContainerRecord> load(const std::string& container_id) = 0;
  /// Stores the record (atomic replace).
  virtual void save(const ContainerRecord& record) = 0;
  /// Deletes the entry and (for FileCache) the lock file; idempotent. Call it while holding
  /// lock(container_id) on the same thread; otherwise it takes the lock itself for the removal.
  virtual void remove(const std::string& container_id) = 0;
  /// Container IDs with an entry, sorted.
  virtual std::vector<std::string> list() = 0;
  /// Exclusive lock serialising all calls for one container; released by the guard's destructor.
  /// Throws CniError(TryAgainLater) when the wait exceeds the cache's lock timeout and
  /// CniError(Internal) when this thread already holds it. The guard must not outlive the cache.
  virtual std::unique_ptr<LockGuard> lock(const std::string& container_id) = 0;
};

/// The real cache: `<dir>/<containerID>.json`, `<dir>/<containerID>.lock`, temp files in
/// `<dir>/.tmp`.
class FileCache final : public Cache {
 public:
  /// A cache in `dir` (created, 0700, on first save or lock) with the default lock timeout.
  explicit FileCache(std::filesystem::path dir);
  /// A cache in `dir` whose lock waits give up after `lock_timeout`, pausing through `sleeper`
  /// (which must outlive the cache).
  FileCache(std::filesystem::path dir, std::chrono::milliseconds lock_timeout, Sleeper& sleeper);

  std::optional<ContainerRecord> load(const std::string& container_id) override;
  void save(const ContainerRecord& record) override;
  void remove(const std::string& container_id) override;
  std::vector<std::string> list() override;
  std::unique_ptr<LockGuard> lock(const std::string& container_id) override;

  /// The cache directory.
  const std::filesystem::path& dir() const { return dir_; }
  /// Path of a container's record file.
  std::filesystem::path record_path(const std::string& container_id) const;
  /// Path of a container's lock file.
  std::filesystem::path lock_path(const std::string& container_id) const;

 private:
  class Guard;
  /// An attachment as last saved, with its serialised text and that of its config and result
  /// strings (an ADD re-saves an attachment when only its result or extra changed).
  struct SavedAttachment {
    AttachmentRecord record;
    std::string text;
    std::string config_text;
    std::string result_text;
  };
  bool held_by_this_thread(const std::string& container_id);
  void remove_temp_files(const std::string& container_id);
  /// The record's file text, re-serialising only the attachments that changed since this cache
  /// last saved the container: ADD saves the growing record twice per attachment, which would
  /// otherwise make its JSON work quadratic in the number of attachments.
  std::string serialise_reusing(const ContainerRecord& record);

  std::filesystem::path dir_;
  std::chrono::milliseconds lock_timeout_;
  RealSleeper own_sleeper_;
  Sleeper& sleeper_;
  std::mutex holders_mu_;
  std::map<std::string, std::thread::id> holders_;  ///< containers locked through this cache
  std::mutex saved_mu_;
  std::map<std::string, std::vector<SavedAttachment>> saved_;  ///< per container, in list order
};

/// An in-memory Cache for tests, with the same ID validation and lock semantics as FileCache.
class MemoryCache final : public Cache {
 public:
  /// A cache whose lock waits give up after `lock_timeout` (real time).
  explicit MemoryCache(std::chrono::milliseconds lock_timeout = kDefaultLockTimeout);

  std::optional<ContainerRecord> load(const std::string& container_id) override;
  void save(const ContainerRecord& record) override;
  void remove(const std::string& container_id) override;
  std::vector<std::string> list() override;
  std::unique_ptr<LockGuard> lock(const std::string& container_id) override;

  /// Makes load(container_id) throw CniError(Decoding) like a corrupt file, until save or remove.
  void corrupt(const std::string& container_id);
  /// True while a guard for `container_id` is alive.
  bool is_locked(const std::string& container_id) const;

 private:
  class Guard;
  void unlock(const std::string& container_id);

  std::chrono::milliseconds lock_timeout_;
  mutable std::mutex mu_;
  std::condition_variable released_;
  std::map<std::string, ContainerRecord> records_;
  std::set<std::string> corrupt_;
  std::map<std::string, std::thread::id> holders_;
};

}  // namespace manifold::store
