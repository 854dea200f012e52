// FileCache and MemoryCache, plus the record <-> JSON mapping and container-ID validation. Configs
// and results are stored as JSON strings, so they come back byte for byte. Every file operation
// uses O_NOFOLLOW and checks its result; files are fchmod'ed to 0600 and created directories
// chmod'ed to 0700 so the umask cannot widen or narrow them. Temp files live in `<dir>/.tmp`
// (same filesystem, so rename stays atomic) and are named `<id>.<pid>.<seq>.tmp`, which lets
// remove() sweep leftovers of a crashed writer for that container without scanning the cache.
#include "store/cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "cni/error.h"

namespace manifold::store {

namespace {

constexpr const char* kFormat = "manifold-cache";
constexpr int kFormatVersion = 1;
constexpr const char* kTempDirName = ".tmp";
/// Attempts at finding an unused temp-file name before giving up.
constexpr int kTempNameAttempts = 100;

std::atomic<unsigned long> temp_sequence{0};

[[noreturn]] void throw_io(const std::string& what, const std::filesystem::path& path, int err) {
  throw cni::CniError(cni::ErrorCode::Io, what + " " + path.string() + ": " + std::strerror(err));
}

[[noreturn]] void throw_corrupt(const std::string& source, const std::string& problem) {
  throw cni::CniError(cni::ErrorCode::Decoding, "corrupt cache file " + source + ": " + problem);
}

bool is_id_char(char c, bool first) {
  bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  return alnum || (!first && (c == '_' || c == '.' || c == '-'));
}

bool is_valid_container_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxContainerIdLength) return false;
  for (size_t i = 0; i < id.size(); ++i) {
    if (!is_id_char(id[i], i == 0)) return false;
  }
  return true;
}

/// Creates `dir` and any missing parents with mode 0700 (exactly; the umask is overridden).
void ensure_dir(const std::filesystem::path& dir) {
  if (::mkdir(dir.c_str(), 0700) == 0) {
    if (::chmod(dir.c_str(), 0700) != 0) throw_io("cannot chmod directory", dir, errno);
    return;
  }
  int err = errno;
  if (err == ENOENT && dir.has_relative_path() && dir.parent_path() != dir) {
    ensure_dir(dir.parent_path());
    return ensure_dir(dir);
  }
  if (err != EEXIST) throw_io("cannot create directory", dir, err);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) throw_io("cannot stat directory", dir, errno);
  if (!S_ISDIR(st.st_mode))
    throw cni::CniError(cni::ErrorCode::Io, dir.string() + " is not a directory");
}

void write_all(const UniqueFd& fd, std::string_view data, const std::filesystem::path& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd.get(), data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw_io("cannot write", path, n < 0 ? errno : EIO);
    data.remove_prefix(static_cast<size_t>(n));
  }
}

/// Reads a whole file of at most kMaxCacheFileBytes; nullopt when it does not exist.
std::optional<std::string> read_bounded(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) {
    if (errno == ENOENT) return std::nullopt;
    if (errno == ELOOP) throw_corrupt(path.string(), "it is a symbolic link");
    throw_io("cannot open", path, errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_io("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode)) throw_corrupt(path.string(), "not a regular file");
  if (static_cast<unsigned long long>(st.st_size) > kMaxCacheFileBytes) {
    throw_corrupt(path.string(), "larger than " + std::to_string(kMaxCacheFileBytes) + " bytes");
  }
  std::string text;
  char buf[64 * 1024];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_io("cannot read", path, errno);
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxCacheFileBytes) {
      throw_corrupt(path.string(), "larger than " + std::to_string(kMaxCacheFileBytes) + " bytes");
    }
  }
  return text;
}

Json parse_bounded(const std::string& text, const std::string& source) {
  Json::parser_callback_t depth_limit = [&source](int depth, Json::parse_event_t, Json&) {
    if (depth > kMaxCacheJsonDepth) {
      throw_corrupt(source,
                    "JSON nested deeper than " + std::to_string(kMaxCacheJsonDepth) + " levels");
    }
    return true;
  };
  try {
    return Json::parse(text, depth_limit);
  } catch (const Json::exception& e) {
    throw_corrupt(source, e.what());
  }
}

const Json& member(const Json& obj, const char* key, const std::string& where,
                   const std::string& source) {
  auto it = obj.find(key);
  if (it == obj.end()) throw_corrupt(source, "\"" + where + key + "\" is missing");
  return *it;
}

std::string string_member(const Json& obj, const char* key, const std::string& where,
                          const std::string& source) {
  const Json& v = member(obj, key, where, source);
  if (!v.is_string()) throw_corrupt(source, "\"" + where + key + "\" is not a string");
  return v.get<std::string>();
}

Json object_member(const Json& obj, const char* key, const std::string& where,
                   const std::string& source) {
  const Json& v = member(obj, key, where, source);
  if (!v.is_object()) throw_corrupt(source, "\"" + where + key + "\" is not an object");
  return v;
}

AttachmentRecord attachment_from_json(const Json& j, const std::string& where,
                                      const std::string& source) {
  if (!j.is_object()) throw_corrupt(source, "\"" + where + "\" is not an object");
  std::string prefix = where + ".";
  AttachmentRecord a;
  a.name = string_member(j, "name", prefix, source);
  a.ifname = string_member(j, "ifname", prefix, source);
  a.config = string_member(j, "config", prefix, source);
  a.result = string_member(j, "result", prefix, source);
  const Json& cluster = member(j, "clusterNetwork", prefix, source);
  if (!cluster.is_boolean())
    throw_corrupt(source, "\"" + prefix + "clusterNetwork\" is not a boolean");
  a.cluster_network = cluster.get<bool>();
  a.extra = object_member(j, "extra", prefix, source);
  return a;
}

/// Throws CniError(Internal) unless every `extra` of the record is an object.
void check_storable(const ContainerRecord& record) {
  if (!record.extra.is_object()) {
    throw cni::CniError(cni::ErrorCode::Internal,
                        "cache record of " + record.container_id + ": extra is not an object");
  }
  for (const AttachmentRecord& a : record.attachments) {
    if (!a.extra.is_object()) {
      throw cni::CniError(
          cni::ErrorCode::Internal,
          "cache record of " + record.container_id + ": extra of " + a.name + " is not an object");
    }
  }
}

/// Compact JSON text of `value` (a part of `record`); CniError(Internal) when it cannot be
/// serialised (invalid UTF-8).
std::string compact(const Json& value, const ContainerRecord& record) {
  try {
    return value.dump();
  } catch (const Json::exception& e) {
    throw cni::CniError(cni::ErrorCode::Internal, "cannot cache container " + record.container_id +
                                                      ": " + std::string(e.what()));
  }
}

/// Appends the final newline and enforces the size limit.
std::string finish_text(std::string text, const ContainerRecord& record) {
  text += '\n';
  if (text.size() > kMaxCacheFileBytes) {
    throw cni::CniError(cni::ErrorCode::Io, "cache record of container " + record.container_id +
                                                " is " + std::to_string(text.size()) +
                                                " bytes, more than the limit of " +
                                                std::to_string(kMaxCacheFileBytes));
  }
  return text;
}

/// The record's file text; throws when it cannot be stored.
std::string serialise(const ContainerRecord& record) {
  check_storable(record);
  return finish_text(compact(record_to_json(record), record), record);
}

/// The file text of `record` given the text of each of its attachments: byte for byte what
/// serialise() writes (record_to_json's key order, compact).
std::string assemble(const ContainerRecord& record, const std::vector<const std::string*>& attachments) {
  std::string text = "{\"kind\":" + compact(Json(kFormat), record) +
                     ",\"version\":" + std::to_string(kFormatVersion) +
                     ",\"containerId\":" + compact(Json(record.container_id), record) +
                     ",\"netns\":" + compact(Json(record.netns), record) +
                     ",\"ifname\":" + compact(Json(record.ifname), record) +
                     ",\"cniVersion\":" + compact(Json(record.cni_version), record) + ",\"attachments\":[";
  const std::string extra = compact(record.extra, record);
  std::size_t size = text.size() + attachments.size() + extra.size() + 16;
  for (const std::string* t : attachments) size += t->size();
  text.reserve(size);  // one allocation for the whole file text
  for (size_t i = 0; i < attachments.size(); ++i) {
    if (i > 0) text += ',';
    text += *attachments[i];
  }
  text.append("],\"extra\":").append(extra).append("}");
  return finish_text(std::move(text), record);
}

/// True for "<pid>.<seq>.tmp", the part of a temp-file name after "<id>.".
bool is_temp_suffix(std::string_view rest) {
  constexpr std::string_view kExt = ".tmp";
  if (rest.size() <= kExt.size() || rest.substr(rest.size() - kExt.size()) != kExt) return false;
  rest.remove_suffix(kExt.size());
  size_t dot = rest.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot + 1 == rest.size()) return false;
  auto digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  return digits(rest.substr(0, dot)) && digits(rest.substr(dot + 1));
}

/// A temp file that is deleted unless it was renamed into place.
class TempFile {
 public:
  explicit TempFile(const std::filesystem::path& dir, const std::string& container_id) {
    for (int attempt = 0; attempt < kTempNameAttempts; ++attempt) {
      path_ = dir / (container_id + "." + std::to_string(::getpid()) + "." +
                     std::to_string(temp_sequence++) + ".tmp");
      fd_ = UniqueFd(
          ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
      if (fd_.valid()) break;
      if (errno != EEXIST) throw_io("cannot create", path_, errno);
    }
    if (!fd_.valid()) throw_io("cannot create", path_, EEXIST);
    owned_ = true;
  }
  ~TempFile() {
    fd_.reset();
    if (owned_) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  /// Writes, closes and renames the file to `target` (no fsync: see cache.h).
  void commit(std::string_view data, const std::filesystem::path& target) {
    if (::fchmod(fd_.get(), 0600) != 0) throw_io("cannot chmod", path_, errno);
    write_all(fd_, data, path_);
    if (int err = fd_.close_checked()) throw_io("cannot close", path_, err);
    if (::rename(path_.c_str(), target.c_str()) != 0)
      throw_io("cannot rename " + path_.string() + " to", target, errno);
    owned_ = false;
  }

 private:
  std::filesystem::path path_;
  UniqueFd fd_;
  bool owned_ = false;
};

void unlink_if_present(const std::filesystem::path& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) throw_io("cannot remove", path, errno);
}

}  // namespace

void validate_container_id(std::string_view id) {
  if (is_valid_container_id(id)) return;
  std::string shown(id.substr(0, 64));
  if (id.size() > 64) shown += "...";
  throw cni::CniError(cni::ErrorCode::InvalidEnv,
                      "invalid container ID " +
                          Json(shown).dump(-1, ' ', false, Json::error_handler_t::replace) +
                          ": must match [A-Za-z0-9][A-Za-z0-9_.-]* and be at most " +
                          std::to_string(kMaxContainerIdLength) + " characters");
}

Json attachment_to_json(const AttachmentRecord& a) {
  return Json{{"name", a.name},
              {"ifname", a.ifname},
              {"config", a.config},
              {"result", a.result},
              {"clusterNetwork", a.cluster_network},
              {"extra", a.extra}};
}

Json record_to_json(const ContainerRecord& record) {
  Json attachments = Json::array();
  for (const AttachmentRecord& a : record.attachments) attachments.push_back(attachment_to_json(a));
  return Json{{"kind", kFormat},
              {"version", kFormatVersion},
              {"containerId", record.container_id},
              {"netns", record.netns},
              {"ifname", record.ifname},
              {"cniVersion", record.cni_version},
              {"attachments", std::move(attachments)},
              {"extra", record.extra}};
}

ContainerRecord record_from_json(const Json& j, const std::string& container_id,
                                 const std::string& source) {
  if (!j.is_object()) throw_corrupt(source, "not a JSON object");
  const Json& kind = member(j, "kind", "", source);
  const Json& version = member(j, "version", "", source);
  if (kind != kFormat || version != kFormatVersion) {
    throw_corrupt(source,
                  "unknown format " + kind.dump(-1, ' ', false, Json::error_handler_t::replace) +
                      " version " + version.dump(-1, ' ', false, Json::error_handler_t::replace));
  }
  ContainerRecord r;
  r.container_id = string_member(j, "containerId", "", source);
  if (r.container_id != container_id) throw_corrupt(source, "it belongs to another container ID");
  r.netns = string_member(j, "netns", "", source);
  r.ifname = string_member(j, "ifname", "", source);
  r.cni_version = string_member(j, "cniVersion", "", source);
  const Json& attachments = member(j, "attachments", "", source);
  if (!attachments.is_array()) throw_corrupt(source, "\"attachments\" is not an array");
  for (size_t i = 0; i < attachments.size(); ++i) {
    r.attachments.push_back(
        attachment_from_json(attachments[i], "attachments[" + std::to_string(i) + "]", source));
  }
  r.extra = object_member(j, "extra", "", source);
  return r;
}

// ---- FileCache ----------------------------------------------------------------------------------

/// FileCache's lock guard: the flock plus this thread's entry in the holder table.
class FileCache::Guard final : public LockGuard {
 public:
  Guard(FileCache& cache, std::string id, std::unique_ptr<FileLock> lock)
      : cache_(cache), id_(std::move(id)), lock_(std::move(lock)) {}
  ~Guard() override {
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

FileCache::FileCache(std::filesystem::path dir, std::chrono::milliseconds lock_timeout,
                     Sleeper& sleeper)
    : dir_(std::move(dir)), lock_timeout_(lock_timeout), sleeper_(sleeper) {}

std::filesystem::path FileCache::record_path(const std::string& container_id) const {
  return dir_ / (container_id + ".json");
}

std::filesystem::path FileCache::lock_path(const std::string& container_id) const {
  return dir_ / (container_id + ".lock");
}

std::optional<ContainerRecord> FileCache::load(const std::string& container_id) {
  validate_container_id(container_id);
  std::filesystem::path path = record_path(container_id);
  std::optional<std::string> text = read_bounded(path);
  if (!text) return std::nullopt;
  return record_from_json(parse_bounded(*text, path.string()), container_id, path.string());
}

std::string FileCache::serialise_reusing(const ContainerRecord& record) {
  check_storable(record);
  std::lock_guard saved_lock(saved_mu_);
  std::vector<SavedAttachment>& saved = saved_[record.container_id];
  if (saved.size() > record.attachments.size()) saved.resize(record.attachments.size());
  // attachment_to_json(a) compact, byte for byte, from its members' texts; the config and result
  // texts are reused from the last save when those strings did not change.
  auto encode = [&record](const AttachmentRecord& a, const SavedAttachment* before) {
    SavedAttachment s{a, {}, {}, {}};
    s.config_text = before != nullptr && before->record.config == a.config ? before->config_text
                                                                           : compact(Json(a.config), record);
    s.result_text = before != nullptr && before->record.result == a.result ? before->result_text
                                                                           : compact(Json(a.result), record);
    std::string extra = compact(a.extra, record);
    std::string name = compact(Json(a.name), record);
    std::string ifname = compact(Json(a.ifname), record);
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
  return assemble(record, texts);
}

void FileCache::save(const ContainerRecord& record) {
  validate_container_id(record.container_id);
  std::string text = serialise_reusing(record);
  std::filesystem::path temp_dir = dir_ / kTempDirName;
  ensure_dir(dir_);
  ensure_dir(temp_dir);
  TempFile temp(temp_dir, record.container_id);
  temp.commit(text, record_path(record.container_id));
}

void FileCache::remove(const std::string& container_id) {
  validate_container_id(container_id);
  {
    std::lock_guard saved_lock(saved_mu_);
    saved_.erase(container_id);
  }
  std::unique_ptr<FileLock> own_lock;
  if (!held_by_this_thread(container_id)) {
    struct stat st {};
    if (::stat(dir_.c_str(), &st) != 0 && errno == ENOENT) return;  // no cache at all
    own_lock = FileLock::acquire(lock_path(container_id), lock_timeout_, sleeper_);
  }
  unlink_if_present(record_path(container_id));
  remove_temp_files(container_id);
  unlink_if_present(lock_path(container_id));
}

std::vector<std::string> FileCache::list() {
  std::vector<std::string> ids;
  DIR* raw = ::opendir(dir_.c_str());
  if (raw == nullptr) {
    if (errno == ENOENT) return ids;
    throw_io("cannot list", dir_, errno);
  }
  std::unique_ptr<DIR, int (*)(DIR*)> dir(raw, ::closedir);
  constexpr std::string_view kExt = ".json";
  while (dirent* entry = ::readdir(dir.get())) {
    std::string_view name = entry->d_name;
    if (name.size() <= kExt.size() || name.substr(name.size() - kExt.size()) != kExt) continue;
    std::string_view id = name.substr(0, name.size() - kExt.size());
    if (is_valid_container_id(id)) ids.emplace_back(id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::unique_ptr<LockGuard> FileCache::lock(const std::string& container_id) {
  validate_container_id(container_id);
  if (held_by_this_thread(container_id)) {
    throw cni::CniError(cni::ErrorCode::Internal,
                        "container " + container_id + " is already locked by this thread");
  }
  ensure_dir(dir_);
  auto guard = std::make_unique<Guard>(
      *this, container_id, FileLock::acquire(lock_path(container_id), lock_timeout_, sleeper_));
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

// ---- MemoryCache --------------------------------------------------------------------------------

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

std::optional<ContainerRecord> MemoryCache::load(const std::string& container_id) {
  validate_container_id(container_id);
  std::lock_guard lock(mu_);
  if (corrupt_.count(container_id) != 0)
    throw_corrupt("memory:" + container_id, "marked corrupt by the test");
  auto it = records_.find(container_id);
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

void MemoryCache::save(const ContainerRecord& record) {
  validate_container_id(record.container_id);
  serialise(record);  // same checks (and failures) as the file cache
  std::lock_guard lock(mu_);
  corrupt_.erase(record.container_id);
  records_[record.container_id] = record;
}

void MemoryCache::remove(const std::string& container_id) {
  validate_container_id(container_id);
  std::lock_guard lock(mu_);
  corrupt_.erase(container_id);
  records_.erase(container_id);
}

std::vector<std::string> MemoryCache::list() {
  std::lock_guard lock(mu_);
  std::vector<std::string> ids;
  for (const auto& [id, record] : records_) ids.push_back(id);
  for (const std::string& id : corrupt_) {
    if (records_.count(id) == 0) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::unique_ptr<LockGuard> MemoryCache::lock(const std::string& container_id) {
  validate_container_id(container_id);
  std::unique_lock lock(mu_);
  auto held = holders_.find(container_id);
  if (held != holders_.end() && held->second == std::this_thread::get_id()) {
    throw cni::CniError(cni::ErrorCode::Internal,
                        "container " + container_id + " is already locked by this thread");
  }
  bool free =
      released_.wait_for(lock, lock_timeout_, [&] { return holders_.count(container_id) == 0; });
  if (!free) {
    throw cni::CniError(cni::ErrorCode::TryAgainLater,
                        "timed out after " + std::to_string(lock_timeout_.count()) +
                            " ms waiting for the lock of container " + container_id);
  }
  holders_[container_id] = std::this_thread::get_id();
  return std::make_unique<Guard>(*this, container_id);
}

void MemoryCache::corrupt(const std::string& container_id) {
  validate_container_id(container_id);
  std::lock_guard lock(mu_);
  corrupt_.insert(container_id);
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
