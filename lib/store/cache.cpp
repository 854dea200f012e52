// FileCache and MemoryCache, plus the record <-> JSON mapping, the entry file names and key
// validation. Configs and results are stored as JSON strings, so they come back byte for byte.
// Every file operation uses O_NOFOLLOW and checks its result; files are fchmod'ed to 0600 and
// created directories chmod'ed to 0700 so the umask cannot widen or narrow them. Temp files live in
// `<dir>/.tmp` (same filesystem, so rename stays atomic) and are named `<id>.<pid>.<seq>.tmp`,
// which lets remove() sweep leftovers of a crashed writer for that container without scanning the
// cache. A container's directory and lock file are removed together with its last entry.
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
constexpr int kFormatVersion = 2;
/// The format of the first layout's `<id>.json` files, still read.
constexpr int kLegacyFormatVersion = 1;
constexpr std::string_view kEntryExt = ".json";
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
                     ",\"network\":" + compact(Json(record.network), record) +
                     ",\"ifname\":" + compact(Json(record.ifname), record) +
                     ",\"netns\":" + compact(Json(record.netns), record) +
                     ",\"cniVersion\":" + compact(Json(record.cni_version), record) +
                     ",\"cniPath\":" + compact(Json(record.cni_path), record) + ",\"attachments\":[";
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

std::string EntryKey::str() const { return container_id + "/" + network + "/" + ifname; }

std::string entry_file_name(const std::string& network, const std::string& ifname) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string name;
  name.reserve(network.size() + ifname.size() + 8);
  for (unsigned char c : network) {
    if (is_id_char(static_cast<char>(c), true) || c == '_' || c == '-') {
      name += static_cast<char>(c);
    } else {
      name += '%';
      name += kHex[c >> 4];
      name += kHex[c & 0xF];
    }
  }
  return name + "@" + ifname + std::string(kEntryExt);
}

std::optional<std::pair<std::string, std::string>> parse_entry_file_name(std::string_view name) {
  if (name.size() <= kEntryExt.size() || name.substr(name.size() - kEntryExt.size()) != kEntryExt)
    return std::nullopt;
  name.remove_suffix(kEntryExt.size());
  size_t at = name.rfind('@');
  if (at == std::string_view::npos || at == 0) return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string network;
  for (size_t i = 0; i < at; ++i) {
    if (name[i] != '%') {
      network += name[i];
      continue;
    }
    if (i + 2 >= at || hex(name[i + 1]) < 0 || hex(name[i + 2]) < 0) return std::nullopt;
    network += static_cast<char>(hex(name[i + 1]) * 16 + hex(name[i + 2]));
    i += 2;
  }
  std::string ifname(name.substr(at + 1));
  if (entry_file_name(network, ifname) != std::string(name) + std::string(kEntryExt)) return std::nullopt;
  return std::make_pair(std::move(network), std::move(ifname));
}

void validate_entry_key(const EntryKey& key) {
  validate_container_id(key.container_id);
  if (key.legacy()) {
    if (!key.ifname.empty())
      throw cni::CniError(cni::ErrorCode::InvalidConfig, "a cache entry needs the network's name");
    return;
  }
  bool ifname_ok = !key.ifname.empty() && key.ifname.size() <= 15 && key.ifname != "." && key.ifname != "..";
  for (char c : key.ifname) ifname_ok = ifname_ok && (is_id_char(c, true) || c == '_' || c == '.' || c == '-');
  if (!ifname_ok)
    throw cni::CniError(cni::ErrorCode::InvalidEnv, "invalid interface name " +
                                                        Json(key.ifname.substr(0, 32)).dump(-1, ' ', false, Json::error_handler_t::replace) +
                                                        " for a cache entry");
  size_t encoded = entry_file_name(key.network, key.ifname).size() - key.ifname.size() - 1 - kEntryExt.size();
  if (encoded > kMaxEncodedNetworkLength)
    throw cni::CniError(cni::ErrorCode::InvalidConfig,
                        "network name of " + std::to_string(key.network.size()) +
                            " bytes is too long to be cached (at most " + std::to_string(kMaxEncodedNetworkLength) +
                            " bytes of [A-Za-z0-9_-], others count three)");
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
              {"network", record.network},
              {"ifname", record.ifname},
              {"netns", record.netns},
              {"cniVersion", record.cni_version},
              {"cniPath", record.cni_path},
              {"attachments", std::move(attachments)},
              {"extra", record.extra}};
}

ContainerRecord record_from_json(const Json& j, const EntryKey& key, const std::string& source) {
  if (!j.is_object()) throw_corrupt(source, "not a JSON object");
  const Json& kind = member(j, "kind", "", source);
  const Json& version = member(j, "version", "", source);
  const bool legacy = version == kLegacyFormatVersion;
  if (kind != kFormat || (version != kFormatVersion && !legacy)) {
    throw_corrupt(source,
                  "unknown format " + kind.dump(-1, ' ', false, Json::error_handler_t::replace) +
                      " version " + version.dump(-1, ' ', false, Json::error_handler_t::replace));
  }
  ContainerRecord r;
  r.container_id = string_member(j, "containerId", "", source);
  if (r.container_id != key.container_id) throw_corrupt(source, "it belongs to another container ID");
  if (!legacy) {
    r.network = string_member(j, "network", "", source);
    r.cni_path = string_member(j, "cniPath", "", source);
  }
  r.netns = string_member(j, "netns", "", source);
  r.ifname = string_member(j, "ifname", "", source);
  if (!key.legacy() && (r.network != key.network || r.ifname != key.ifname))
    throw_corrupt(source, "it belongs to another network or interface");
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

FileCache::FileCache(std::filesystem::path dir, std::chrono::milliseconds lock_timeout,
                     Sleeper& sleeper)
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
  std::optional<std::string> text = read_bounded(path);
  if (!text) return key.legacy() ? std::nullopt : load_legacy_for(key);
  return record_from_json(parse_bounded(*text, path.string()), key, path.string());
}

std::optional<ContainerRecord> FileCache::load_legacy_for(const EntryKey& key) {
  EntryKey legacy{key.container_id, "", ""};
  std::filesystem::path path = record_path(legacy);
  std::optional<std::string> text = read_bounded(path);
  if (!text) return std::nullopt;
  ContainerRecord record = record_from_json(parse_bounded(*text, path.string()), legacy, path.string());
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
  EntryKey key = record.key();
  validate_entry_key(key);
  if (key.legacy())
    throw cni::CniError(cni::ErrorCode::Internal, "cache entry of container " + record.container_id +
                                                      " has no network name and cannot be saved");
  std::string text = serialise_reusing(record);
  std::filesystem::path temp_dir = dir_ / kTempDirName;
  ensure_dir(dir_);
  ensure_dir(temp_dir);
  ensure_dir(dir_ / key.container_id);
  TempFile temp(temp_dir, record.container_id);
  temp.commit(text, record_path(key));
  // The entry now answers for its network: a first-layout entry it replaces is retired.
  if (load_legacy_for(key)) unlink_if_present(record_path({key.container_id, "", ""}));
}

void FileCache::remove(const EntryKey& key) {
  validate_entry_key(key);
  {
    std::lock_guard saved_lock(saved_mu_);
    saved_.erase(key);
  }
  std::unique_ptr<LockGuard> own_lock;
  if (!held_by_this_thread(key.container_id)) {
    struct stat st {};
    if (::stat(dir_.c_str(), &st) != 0 && errno == ENOENT) return;  // no cache at all
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

std::optional<ContainerRecord> MemoryCache::load(const EntryKey& key) {
  validate_entry_key(key);
  std::lock_guard lock(mu_);
  if (corrupt_.count(key) != 0) throw_corrupt("memory:" + key.str(), "marked corrupt by the test");
  auto it = records_.find(key);
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

void MemoryCache::save(const ContainerRecord& record) {
  validate_entry_key(record.key());
  if (record.key().legacy())
    throw cni::CniError(cni::ErrorCode::Internal, "cache entry of container " + record.container_id +
                                                      " has no network name and cannot be saved");
  serialise(record);  // same checks (and failures) as the file cache
  std::lock_guard lock(mu_);
  corrupt_.erase(record.key());
  records_[record.key()] = record;
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

void MemoryCache::corrupt(const EntryKey& key) {
  validate_entry_key(key);
  std::lock_guard lock(mu_);
  corrupt_.insert(key);
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
