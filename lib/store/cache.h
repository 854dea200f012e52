// The cache: what DEL, CHECK and GC need to undo or verify an ADD without the API
// server — the exact bytes of every delegate config and result, interface names and the
// network-scoping state. One entry per runtime call that attached something, keyed like libcni keys
// its own results: container ID, network name (the meta config's "name") and CNI_IFNAME, so a
// runtime that attaches several manifold networks to one container (podman `--network a,b`) gets
// one entry per network and a DEL of one never touches another. FileCache keeps them as
// `<cniDir>/<containerID>/<network>@<ifname>.json` (the network name percent-encoded), written
// atomically (temp file, rename) with 0700 directories and 0600 files, and serialises every call for
// one container with the FileLock `<cniDir>/<containerID>.lock`, which goes away with the
// container's last entry (so a refused call leaves nothing behind). An ADD's progress (which
// delegates started) and a DEL's start are marked in place on the entry's file, as the extended
// attributes kStartedAttribute and kStateAttribute, instead of rewriting it: a replace-by-rename
// costs the file system far more. Entries of the first layout
// (`<cniDir>/<containerID>.json`, one per container, no network name) are still read, DELed and
// removed. Writes are not fsync'ed: a reader or a crashed manifold always sees a whole old or whole
// new file, and only a power loss — which also destroys every network namespace the cache
// describes — can lose or truncate an entry, which DEL and GC then treat as unreadable (best-effort
// cleanup). An fsync costs milliseconds to tens of milliseconds on a busy node disk, twice per
// attachment, which is far over the per-ADD budget (libcni and Multus do not sync their caches
// either). MemoryCache (store/memory_cache.h) is the fake for the engine's tests.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "store/file_lock.h"
#include "store/record.h"
#include "util/json.h"

namespace manifold::store {

/// Default bound on waiting for a container's lock.
inline constexpr std::chrono::milliseconds kDefaultLockTimeout{30000};
/// FileCache's in-place progress mark on an entry's file: the number of its attachments (from the
/// first) whose delegate has started, in decimal. Only the file written by the entry's last save
/// carries it (a save writes a new file, whose JSON then holds every flag).
inline constexpr const char* kStartedAttribute = "user.manifold.started";
/// FileCache's in-place mark of the entry's "state" (the string at "state" of the entry's extra
/// object, e.g. "deleting"), overriding the one in the file's JSON; like kStartedAttribute, only
/// on the file the last save wrote.
inline constexpr const char* kStateAttribute = "user.manifold.state";
/// Longest state a kStateAttribute may hold.
inline constexpr std::size_t kMaxStateLength = 32;

/// The cache of every entry on the node.
class Cache {
 public:
  virtual ~Cache() = default;
  /// nullopt when there is no entry; throws CniError(Decoding) naming the file when it is corrupt.
  /// A first-layout entry of the container whose ifname is `key.ifname` answers for any network.
  virtual std::optional<ContainerRecord> load(const EntryKey& key) = 0;
  /// Stores the record under record.key() (atomic replace).
  virtual void save(const ContainerRecord& record) = 0;
  /// Records that the delegates of record.attachments[0, count) have started (the caller set their
  /// delegate_started), where it can without rewriting the entry: FileCache sets the extended
  /// attribute kStartedAttribute of the entry's file, which load() applies (a mark costs tens of
  /// microseconds on ext4; a replace-by-rename hundreds). The entry must be as `record` was last saved, but
  /// for results not written yet and these flags. When no mark can be set (a file system without
  /// user extended attributes, a full disk), saves the whole record instead (throwing what save()
  /// throws) and returns true: the caller then knows every result it held is on disk too.
  virtual bool mark_started(const ContainerRecord& record, std::size_t count) = 0;
  /// Records the entry-level "state" string of record.extra (engine/entry_state.h) the same way:
  /// in place (FileCache: the extended attribute kStateAttribute, which load() applies), else by
  /// saving the whole record (then returns true). The entry must be as `record` was last saved but
  /// for that state.
  virtual bool mark_state(const ContainerRecord& record) = 0;
  /// Deletes the entry (and a first-layout entry load(key) would answer with); idempotent. Call it
  /// while holding lock(key.container_id) on the same thread; otherwise it takes the lock itself.
  virtual void remove(const EntryKey& key) = 0;
  /// Every entry's key, sorted (first-layout entries as {containerID, "", ""}).
  virtual std::vector<EntryKey> list() = 0;
  /// The keys of one container's entries, sorted.
  virtual std::vector<EntryKey> list(const std::string& container_id) = 0;
  /// True when nothing of the container is here: no entry and no lock file, so no call for it is
  /// running (a call holds its lock file from before its first write to its end). A DEL of such a
  /// container has nothing to serialise with and takes no lock (see Commands::del).
  virtual bool is_idle(const std::string& container_id) = 0;
  /// Removes the lock files of containers that have no entry — left by a call killed between removing
  /// a container's last entry and its lock file, or by a removal that failed. A lock held by a
  /// running call is left alone. Returns how many went.
  virtual int sweep_orphan_locks() = 0;
  /// Exclusive lock serialising all calls for one container; released by the guard's destructor,
  /// which (FileCache) also removes the lock file when the container has no entry left. Throws
  /// CniError(TryAgainLater) when the wait exceeds the cache's lock timeout and CniError(Internal)
  /// when this thread already holds it. The guard must not outlive the cache.
  virtual std::unique_ptr<LockGuard> lock(const std::string& container_id) = 0;
};

/// The real cache: `<dir>/<containerID>/<network>@<ifname>.json`, `<dir>/<containerID>.lock`,
/// temp files in `<dir>/.tmp`, first-layout entries `<dir>/<containerID>.json`.
class FileCache final : public Cache {
 public:
  /// A cache in `dir` (created, 0700, on first save or lock) with the default lock timeout.
  explicit FileCache(std::filesystem::path dir);
  /// A cache in `dir` whose lock waits give up after `lock_timeout`, pausing through `sleeper`
  /// (which must outlive the cache).
  FileCache(std::filesystem::path dir, std::chrono::milliseconds lock_timeout, util::Sleeper& sleeper);

  std::optional<ContainerRecord> load(const EntryKey& key) override;
  void save(const ContainerRecord& record) override;
  bool mark_started(const ContainerRecord& record, std::size_t count) override;
  bool mark_state(const ContainerRecord& record) override;
  void remove(const EntryKey& key) override;
  std::vector<EntryKey> list() override;
  std::vector<EntryKey> list(const std::string& container_id) override;
  bool is_idle(const std::string& container_id) override;
  int sweep_orphan_locks() override;
  std::unique_ptr<LockGuard> lock(const std::string& container_id) override;

  /// The cache directory.
  const std::filesystem::path& dir() const { return dir_; }
  /// Path of an entry's file (the first-layout file for a first-layout key).
  std::filesystem::path record_path(const EntryKey& key) const;
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
  /// Sets the extended attribute `name` of the entry's file to `value`; when it cannot, saves the
  /// whole record and returns true.
  bool mark_or_save(const ContainerRecord& record, const char* name, const std::string& value);
  /// The record in the file at `path` (of entry `key`), with its in-place marks applied.
  ContainerRecord read_record(const std::filesystem::path& path, const std::string& text, const EntryKey& key);
  /// The first-layout entry of `key`'s container when its ifname is `key.ifname`, else nullopt.
  std::optional<ContainerRecord> load_legacy_for(const EntryKey& key);
  /// True when the container has no entry left (its directory is removed when empty).
  bool container_is_empty(const std::string& container_id);
  /// The record's file text, re-serialising only the attachments that changed since this cache
  /// last saved the container: ADD saves the record twice more per attachment with network
  /// scoping, which would otherwise make its JSON work quadratic in the number of attachments.
  std::string serialise_reusing(const ContainerRecord& record);

  std::filesystem::path dir_;
  std::chrono::milliseconds lock_timeout_;
  util::RealSleeper own_sleeper_;
  util::Sleeper& sleeper_;
  std::mutex holders_mu_;
  std::map<std::string, std::thread::id> holders_;  ///< containers locked through this cache
  std::mutex saved_mu_;
  std::map<EntryKey, std::vector<SavedAttachment>> saved_;  ///< per entry, in list order
};

}  // namespace manifold::store
