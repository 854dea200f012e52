// FileCache: entries as files under cniDir, one directory per container, written through a temp
// file in `<dir>/.tmp` (same filesystem, so rename stays atomic) named `<id>.<pid>.<seq>.tmp`,
// which lets remove() sweep leftovers of a crashed writer for that container without scanning the
// cache. A container's directory and lock file are removed together with its last entry.
#include "store/cache.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "cni/error.h"
#include "store/cache_files.h"
#include "store/record.h"
#include "store/record_text.h"

namespace manifold::store {

namespace {

constexpr const char* kTempDirName = ".tmp";
constexpr const char* kStateLetters = "abcdefghijklmnopqrstuvwxyz";

// The value of the in-place mark `name` on the entry file `path`: nullopt when it has none (or the
// file system keeps no extended attributes). CniError(Decoding) naming the file and the attribute
// when the value is empty, longer than `max_length` or has a byte outside `allowed`.
// True when `value` can be an in-place mark: 1 to `max_length` bytes, all of them in `allowed`.
bool is_valid_mark(std::string_view value, std::string_view allowed, std::size_t max_length) {
  return !value.empty() && value.size() <= max_length && value.find_first_not_of(allowed) == std::string_view::npos;
}

std::optional<std::string> read_mark(const std::filesystem::path& path, const char* name, std::string_view allowed,
                                     std::size_t max_length) {
  char buf[64];
  const ssize_t n = ::lgetxattr(path.c_str(), name, buf, sizeof buf);
  if (n < 0 && (errno == ENODATA || errno == ENOTSUP || errno == ENOENT)) return std::nullopt;
  if (n < 0 && errno != ERANGE) throw_io(std::string("cannot read the attribute ") + name + " of", path, errno);
  const std::string_view value(buf, n < 0 ? 0 : static_cast<std::size_t>(n));
  if (!is_valid_mark(value, allowed, max_length))
    throw cni::CniError(cni::ErrorCode::Decoding,
                        "corrupt cache file " + path.string() + ": its attribute " + name + " is not a valid mark");
  return std::string(value);
}

}  // namespace

/// FileCache's lock guard: the flock plus this thread's entry in the holder table. When the
/// container has no entry left, the lock file goes before the flock is released, so a call that
/// changed nothing (or removed the last entry) leaves nothing of the container behind.
class FileCache::Guard final : public LockGuard {
 public:
  Guard(FileCache& cache, std::string id, std::unique_ptr<FileLock> lock)
      : cache_(cache), id_(std::move(id)), lock_(std::move(lock)) {}
  ~Guard() override {
    try {
      if (cache_.container_is_empty(id_)) lock_->unlink_file();
    } catch (const cni::CniError&) {
      // A lock file that cannot be removed (read-only cniDir) is harmless: the next call reuses it.
    }
    std::lock_guard table_lock(cache_.holders_mu_);
    cache_.holders_.erase(id_);
  }  // lock_ is released after the entry is gone

 private:
  FileCache& cache_;
  std::string id_;
  std::unique_ptr<FileLock> lock_;
};

// Not a delegating constructor: naming own_sleeper_ before any constructor of the object has begun
// is undefined behaviour; here it is constructed (declared before sleeper_) when sleeper_ binds.
FileCache::FileCache(std::filesystem::path dir)
    : dir_(std::move(dir)), lock_timeout_(kDefaultLockTimeout), sleeper_(own_sleeper_) {}

FileCache::FileCache(std::filesystem::path dir, std::chrono::milliseconds lock_timeout, util::Sleeper& sleeper)
    : dir_(std::move(dir)), lock_timeout_(lock_timeout), sleeper_(sleeper) {}

std::filesystem::path FileCache::record_path(const EntryKey& key) const {
  if (key.legacy()) return dir_ / (key.container_id + std::string(kEntryExt));
  return dir_ / key.container_id / entry_file_name(key.network, key.ifname);
}

std::filesystem::path FileCache::lock_path(const std::string& container_id) const {
  return dir_ / (container_id + ".lock");
}

std::optional<ContainerRecord> FileCache::load(const EntryKey& key) {
  validate_entry_key(key);
  std::filesystem::path path = record_path(key);
  std::optional<std::string> text = read_bounded(path, kMaxCacheFileBytes);
  if (!text) return key.legacy() ? std::nullopt : load_legacy_for(key);
  return read_record(path, *text, key);
}

ContainerRecord FileCache::read_record(const std::filesystem::path& path, const std::string& text,
                                       const EntryKey& key) {
  ContainerRecord record = record_from_json(parse_record_json(text, path.string()), key, path.string());
  // A reader without the container's lock may find a newer file here than the text it read: the
  // marks it then applies can only claim more delegates started (DEL more), or a later state.
  if (std::optional<std::string> count = read_mark(path, kStartedAttribute, "0123456789", 9)) {
    std::size_t n = 0;
    for (char c : *count) n = n * 10 + static_cast<std::size_t>(c - '0');
    for (std::size_t i = 0; i < n && i < record.attachments.size(); ++i) record.attachments[i].delegate_started = true;
  }
  if (std::optional<std::string> state = read_mark(path, kStateAttribute, kStateLetters, kMaxStateLength))
    record.extra[kEntryStateKey] = *state;
  return record;
}

std::optional<ContainerRecord> FileCache::load_legacy_for(const EntryKey& key) {
  EntryKey legacy{key.container_id, "", ""};
  std::filesystem::path path = record_path(legacy);
  std::optional<std::string> text = read_bounded(path, kMaxCacheFileBytes);
  if (!text) return std::nullopt;
  ContainerRecord record = read_record(path, *text, legacy);
  if (record.ifname != key.ifname) return std::nullopt;
  return record;
}

std::string FileCache::serialise_reusing(const ContainerRecord& record) {
  check_storable(record);
  std::lock_guard saved_lock(saved_mu_);
  std::vector<SavedAttachment>& saved = saved_[record.key()];
  if (saved.size() > record.attachments.size()) saved.resize(record.attachments.size());
  // attachment_to_json(a) compact, byte for byte, from its members' texts; the config and result
  // texts are reused from the last save when those strings did not change.
  auto encode = [&record](const AttachmentRecord& a, const SavedAttachment* before) {
    SavedAttachment s{a, {}, {}, {}};
    s.config_text = before != nullptr && before->record.config == a.config ? before->config_text
                                                                           : compact_json(Json(a.config), record);
    s.result_text = before != nullptr && before->record.result == a.result ? before->result_text
                                                                           : compact_json(Json(a.result), record);
    std::string extra = compact_json(attachment_extra_json(a), record);
    std::string name = compact_json(Json(a.name), record);
    std::string ifname = compact_json(Json(a.ifname), record);
    s.text.reserve(80 + name.size() + ifname.size() + s.config_text.size() + s.result_text.size() + extra.size());
    s.text.append("{\"name\":").append(name).append(",\"ifname\":").append(ifname);
    s.text.append(",\"config\":").append(s.config_text).append(",\"result\":").append(s.result_text);
    s.text.append(",\"clusterNetwork\":").append(a.cluster_network ? "true" : "false");
    s.text.append(",\"extra\":").append(extra).append("}");
    return s;
  };
  for (size_t i = 0; i < record.attachments.size(); ++i) {
    const AttachmentRecord& a = record.attachments[i];
    if (i == saved.size()) {
      saved.push_back(encode(a, nullptr));
    } else if (!(saved[i].record == a)) {
      saved[i] = encode(a, &saved[i]);
    }
  }
  std::vector<const std::string*> texts;  // taken once `saved` no longer grows
  texts.reserve(saved.size());
  for (const SavedAttachment& s : saved) texts.push_back(&s.text);
  return assemble_record_text(record, texts);
}

void FileCache::save(const ContainerRecord& record) {
  EntryKey key = record.key();
  validate_entry_key(key);
  if (key.legacy())
    throw cni::CniError(cni::ErrorCode::Internal,
                        "cache entry of container " + record.container_id + " has no network name and cannot be saved");
  std::string text = serialise_reusing(record);
  std::filesystem::path temp_dir = dir_ / kTempDirName;
  TempFile temp(temp_dir, record.container_id, [&] {
    ensure_dir(dir_);
    ensure_dir(temp_dir);
  });
  temp.commit(text, record_path(key), [&] { ensure_dir(dir_ / key.container_id); });
  // The entry now answers for its network: a first-layout entry it replaces is retired. The save
  // has succeeded whatever happens here: an unreadable first-layout entry is not known to answer for
  // this key and stays (as remove() leaves it), and one that cannot be unlinked now is shadowed by
  // this entry for every reader and goes with it in remove().
  try {
    if (load_legacy_for(key)) unlink_if_present(record_path({key.container_id, "", ""}));
  } catch (const cni::CniError&) {}
}

bool FileCache::mark_or_save(const ContainerRecord& record, const char* name, const std::string& value) {
  const std::filesystem::path path = record_path(record.key());
  if (!record.key().legacy() && ::lsetxattr(path.c_str(), name, value.data(), value.size(), 0) == 0) return false;
  save(record);  // no mark possible here (ENOTSUP, ENOSPC, …): the whole record says it
  return true;
}

bool FileCache::mark_started(const ContainerRecord& record, std::size_t count) {
  return mark_or_save(record, kStartedAttribute, std::to_string(count));
}

bool FileCache::mark_state(const ContainerRecord& record) {
  auto it = record.extra.find(kEntryStateKey);
  const std::string state = it != record.extra.end() && it->is_string() ? it->get<std::string>() : std::string();
  if (!is_valid_mark(state, kStateLetters, kMaxStateLength)) {
    save(record);  // not a state a mark can hold
    return true;
  }
  return mark_or_save(record, kStateAttribute, state);
}

void FileCache::remove(const EntryKey& key) {
  validate_entry_key(key);
  {
    std::lock_guard saved_lock(saved_mu_);
    saved_.erase(key);
  }
  std::unique_ptr<LockGuard> own_lock;
  if (!held_by_this_thread(key.container_id)) {
    if (is_idle(key.container_id)) return;  // nothing to remove, and no lock file to leave behind
    own_lock = lock(key.container_id);
  }
  if (!key.legacy()) {
    unlink_if_present(record_path(key));
    std::optional<ContainerRecord> legacy;
    try {
      legacy = load_legacy_for(key);
    } catch (const cni::CniError&) {
      // An unreadable first-layout entry is not known to answer for this key: it stays.
    }
    if (legacy) unlink_if_present(record_path({key.container_id, "", ""}));
  } else {
    unlink_if_present(record_path(key));
  }
  remove_temp_files(key.container_id);
}

bool FileCache::is_idle(const std::string& container_id) {
  validate_container_id(container_id);
  const auto absent = [](const std::filesystem::path& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) != 0 && errno == ENOENT;
  };
  return absent(dir_ / container_id) && absent(lock_path(container_id)) && absent(record_path({container_id, "", ""}));
}

bool FileCache::container_is_empty(const std::string& container_id) {
  std::filesystem::path dir = dir_ / container_id;
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) return false;  // ENOTEMPTY, EROFS, …
  struct stat st {};
  return ::lstat(record_path({container_id, "", ""}).c_str(), &st) != 0 && errno == ENOENT;
}

std::vector<EntryKey> FileCache::list() {
  std::vector<EntryKey> keys;
  DIR* raw = ::opendir(dir_.c_str());
  if (raw == nullptr) {
    if (errno == ENOENT) return keys;
    throw_io("cannot list", dir_, errno);
  }
  std::unique_ptr<DIR, int (*)(DIR*)> dir(raw, ::closedir);
  std::vector<std::string> containers;
  while (dirent* entry = ::readdir(dir.get())) {
    std::string_view name = entry->d_name;
    if (name.size() > kEntryExt.size() && name.substr(name.size() - kEntryExt.size()) == kEntryExt) {
      std::string_view id = name.substr(0, name.size() - kEntryExt.size());
      if (is_valid_container_id(id)) keys.push_back({std::string(id), "", ""});
    } else if (is_valid_container_id(name) && entry->d_type != DT_REG) {
      containers.emplace_back(name);
    }
  }
  for (const std::string& id : containers)
    for (EntryKey& key : list(id))
      if (!key.legacy()) keys.push_back(std::move(key));
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::vector<EntryKey> FileCache::list(const std::string& container_id) {
  validate_container_id(container_id);
  std::vector<EntryKey> keys;
  struct stat st {};
  if (::lstat(record_path({container_id, "", ""}).c_str(), &st) == 0) keys.push_back({container_id, "", ""});
  std::filesystem::path path = dir_ / container_id;
  DIR* raw = ::opendir(path.c_str());
  if (raw == nullptr) {
    if (errno == ENOENT || errno == ENOTDIR) return keys;
    throw_io("cannot list", path, errno);
  }
  std::unique_ptr<DIR, int (*)(DIR*)> dir(raw, ::closedir);
  while (dirent* entry = ::readdir(dir.get())) {
    auto parsed = parse_entry_file_name(entry->d_name);
    if (!parsed) continue;
    EntryKey key{container_id, std::move(parsed->first), std::move(parsed->second)};
    try {
      validate_entry_key(key);
    } catch (const cni::CniError&) {
      continue;  // not a name we write
    }
    keys.push_back(std::move(key));
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

int FileCache::sweep_orphan_locks() {
  DIR* raw = ::opendir(dir_.c_str());
  if (raw == nullptr) {
    if (errno == ENOENT) return 0;
    throw_io("cannot list", dir_, errno);
  }
  std::unique_ptr<DIR, int (*)(DIR*)> dir(raw, ::closedir);
  constexpr std::string_view kLockExt = ".lock";
  std::vector<std::string> ids;
  while (dirent* entry = ::readdir(dir.get())) {
    std::string_view name = entry->d_name;
    if (name.size() <= kLockExt.size() || name.substr(name.size() - kLockExt.size()) != kLockExt) continue;
    std::string_view id = name.substr(0, name.size() - kLockExt.size());
    if (is_valid_container_id(id)) ids.emplace_back(id);
  }
  int removed = 0;
  for (const std::string& id : ids) {
    if (held_by_this_thread(id) || !list(id).empty()) continue;
    try {
      // A zero wait: a lock somebody holds belongs to a running call, which removes it itself.
      std::unique_ptr<FileLock> held = FileLock::acquire(lock_path(id), std::chrono::milliseconds(0), sleeper_);
      if (container_is_empty(id)) {
        held->unlink_file();
        ++removed;
      }
    } catch (const cni::CniError&) {
      // Busy or unremovable: the next sweep tries again.
    }
  }
  return removed;
}

std::unique_ptr<LockGuard> FileCache::lock(const std::string& container_id) {
  validate_container_id(container_id);
  if (held_by_this_thread(container_id)) {
    throw cni::CniError(cni::ErrorCode::Internal, "container " + container_id + " is already locked by this thread");
  }
  ensure_dir(dir_);
  auto guard =
      std::make_unique<Guard>(*this, container_id, FileLock::acquire(lock_path(container_id), lock_timeout_, sleeper_));
  std::lock_guard table_lock(holders_mu_);
  holders_[container_id] = std::this_thread::get_id();
  return guard;
}

bool FileCache::held_by_this_thread(const std::string& container_id) {
  std::lock_guard table_lock(holders_mu_);
  auto it = holders_.find(container_id);
  return it != holders_.end() && it->second == std::this_thread::get_id();
}

void FileCache::remove_temp_files(const std::string& container_id) {
  std::filesystem::path temp_dir = dir_ / kTempDirName;
  DIR* raw = ::opendir(temp_dir.c_str());
  if (raw == nullptr) {
    if (errno == ENOENT) return;
    throw_io("cannot list", temp_dir, errno);
  }
  std::unique_ptr<DIR, int (*)(DIR*)> dir(raw, ::closedir);
  const std::string prefix = container_id + ".";
  while (dirent* entry = ::readdir(dir.get())) {
    std::string_view name = entry->d_name;
    if (name.substr(0, prefix.size()) == prefix && is_temp_suffix(name.substr(prefix.size()))) {
      unlink_if_present(temp_dir / std::string(name));
    }
  }
}

}  // namespace manifold::store
