// The cache (design §7): what DEL, CHECK and GC need to undo or verify an ADD without the API
// server — the exact bytes of every delegate config and result, interface names and the
// network-scoping state. One entry per runtime call that attached something, keyed like libcni keys
// its own results: container ID, network name (the meta config's "name") and CNI_IFNAME, so a
// runtime that attaches several manifold networks to one container (podman `--network a,b`) gets
// one entry per network and a DEL of one never touches another. FileCache keeps them as
// `<cniDir>/<containerID>/<network>@<ifname>.json` (the network name percent-encoded), written
// atomically (temp file, rename) with 0700 directories and 0600 files, and serialises every call for
// one container with the FileLock `<cniDir>/<containerID>.lock`, which goes away with the
// container's last entry (so a refused call leaves nothing behind). Entries of the first layout
// (`<cniDir>/<containerID>.json`, one per container, no network name) are still read, DELed and
// removed. Writes are not fsync'ed: a reader or a crashed manifold always sees a whole old or whole
// new file, and only a power loss — which also destroys every network namespace the cache
// describes — can lose or truncate an entry, which DEL and GC then treat as unreadable (best-effort
// cleanup). An fsync costs milliseconds to tens of milliseconds on a busy node disk, twice per
// attachment, which is far over the per-ADD budget (libcni and Multus do not sync their caches
// either). MemoryCache is the fake for command tests. Keys are validated before they become file
// names, and cache files are treated as untrusted input on load.
#pragma once

#include <chrono>
#include <compare>
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

/// What identifies one cache entry: the container, the network (the meta config's "name") and the
/// CNI_IFNAME of the runtime call that made it.
struct EntryKey {
  std::string container_id;  ///< CNI_CONTAINERID
  /// The network's name; "" names the one entry a container had in the first layout, which
  /// recorded no network (such an entry's `ifname` is "" as well).
  std::string network;
  std::string ifname;        ///< CNI_IFNAME
  /// "<containerID>/<network>/<ifname>", for messages.
  std::string str() const;
  /// True for the key of a first-layout entry.
  bool legacy() const { return network.empty(); }

  auto operator<=>(const EntryKey&) const = default;
};

/// Everything cached for one runtime call: its key, the namespace and every attachment it made.
struct ContainerRecord {
  std::string container_id;  ///< CNI_CONTAINERID
  std::string network;       ///< the network's name ("" in an entry of the first layout)
  std::string netns;         ///< CNI_NETNS at ADD
  std::string ifname;        ///< CNI_IFNAME
  std::string cni_version;   ///< the config's cniVersion
  std::string cni_path;      ///< CNI_PATH at ADD, so a DEL outside a CNI call finds the delegates
  std::vector<AttachmentRecord> attachments;
  /// Entry-level state; must be a JSON object.
  Json extra = Json::object();

  /// This record's cache key.
  EntryKey key() const { return {container_id, network, ifname}; }
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

/// Longest accepted network name, once percent-encoded for its file name.
inline constexpr size_t kMaxEncodedNetworkLength = 200;

/// Throws CniError(InvalidEnv) unless `id` matches [A-Za-z0-9][A-Za-z0-9_.-]* and has at most
/// kMaxContainerIdLength characters (so it is safe as a file name).
void validate_container_id(std::string_view id);

/// Throws CniError unless `key` can name an entry: a valid container ID (InvalidEnv), a network
/// name of at most kMaxEncodedNetworkLength bytes once encoded (InvalidConfig) and a CNI_IFNAME of
/// 1-15 characters of [A-Za-z0-9_.-] (InvalidEnv); or, for a first-layout key, a valid container ID
/// and an empty ifname.
void validate_entry_key(const EntryKey& key);

/// The file name of an entry: "<network, percent-encoded>@<ifname>.json". Every byte outside
/// [A-Za-z0-9_-] of the network name (so '.', '@', '/' and '%' too) becomes %XX.
std::string entry_file_name(const std::string& network, const std::string& ifname);

/// The (network, ifname) an entry file name encodes; nullopt for any other name.
std::optional<std::pair<std::string, std::string>> parse_entry_file_name(std::string_view name);

/// Serialises a record to its cache-file JSON (format "manifold-cache" version 2).
Json record_to_json(const ContainerRecord& record);
/// One element of the record's "attachments" list in the cache-file JSON.
Json attachment_to_json(const AttachmentRecord& attachment);
/// Parses and validates cache-file JSON of version 2, or of version 1 (the first layout: no
/// network, no CNI_PATH); throws CniError(Decoding) mentioning `source` on any missing or wrongly
/// typed field, an unknown format, or a key that differs from `key` (container ID always; network
/// and ifname unless `key` is a first-layout key).
ContainerRecord record_from_json(const Json& json, const EntryKey& key, const std::string& source);

/// The cache of every entry on the node.
class Cache {
 public:
  virtual ~Cache() = default;
  /// nullopt when there is no entry; throws CniError(Decoding) naming the file when it is corrupt.
  /// A first-layout entry of the container whose ifname is `key.ifname` answers for any network.
  virtual std::optional<ContainerRecord> load(const EntryKey& key) = 0;
  /// Stores the record under record.key() (atomic replace).
  virtual void save(const ContainerRecord& record) = 0;
  /// Deletes the entry (and a first-layout entry load(key) would answer with); idempotent. Call it
  /// while holding lock(key.container_id) on the same thread; otherwise it takes the lock itself.
  virtual void remove(const EntryKey& key) = 0;
  /// Every entry's key, sorted (first-layout entries as {containerID, "", ""}).
  virtual std::vector<EntryKey> list() = 0;
  /// The keys of one container's entries, sorted.
  virtual std::vector<EntryKey> list(const std::string& container_id) = 0;
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
  FileCache(std::filesystem::path dir, std::chrono::milliseconds lock_timeout, Sleeper& sleeper);

  std::optional<ContainerRecord> load(const EntryKey& key) override;
  void save(const ContainerRecord& record) override;
  void remove(const EntryKey& key) override;
  std::vector<EntryKey> list() override;
  std::vector<EntryKey> list(const std::string& container_id) override;
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
  /// The first-layout entry of `key`'s container when its ifname is `key.ifname`, else nullopt.
  std::optional<ContainerRecord> load_legacy_for(const EntryKey& key);
  /// True when the container has no entry left (its directory is removed when empty).
  bool container_is_empty(const std::string& container_id);
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
  std::map<EntryKey, std::vector<SavedAttachment>> saved_;  ///< per entry, in list order
};

/// An in-memory Cache for tests, with the same ID validation and lock semantics as FileCache.
class MemoryCache final : public Cache {
 public:
  /// A cache whose lock waits give up after `lock_timeout` (real time).
  explicit MemoryCache(std::chrono::milliseconds lock_timeout = kDefaultLockTimeout);

  std::optional<ContainerRecord> load(const EntryKey& key) override;
  void save(const ContainerRecord& record) override;
  void remove(const EntryKey& key) override;
  std::vector<EntryKey> list() override;
  std::vector<EntryKey> list(const std::string& container_id) override;
  std::unique_ptr<LockGuard> lock(const std::string& container_id) override;

  /// Makes load(key) throw CniError(Decoding) like a corrupt file, until save or remove.
  void corrupt(const EntryKey& key);
  /// True while a guard for `container_id` is alive.
  bool is_locked(const std::string& container_id) const;

 private:
  class Guard;
  void unlock(const std::string& container_id);

  std::chrono::milliseconds lock_timeout_;
  mutable std::mutex mu_;
  std::condition_variable released_;
  std::map<EntryKey, ContainerRecord> records_;
  std::set<EntryKey> corrupt_;
  std::map<std::string, std::thread::id> holders_;
};

}  // namespace manifold::store
