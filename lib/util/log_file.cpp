// Implementation of the rotating log file sink (cross-process rotation under flock, timestamped
// backups, gzip in the background, pruning by count and age) and secret redaction. The two
// compressors are in log_file_compress.cpp.
#include "util/log_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <utility>

#include "util/child_process.h"
#include "util/unique_fd.h"

namespace manifold::util {

namespace fs = std::filesystem;
using std::chrono::system_clock;

namespace {

void note_stderr(const std::string& text) {
  std::string line = rfc3339_now() + " [error] " + text + "\n";
  (void)!::write(STDERR_FILENO, line.data(), line.size());
}

int open_append(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
}

// Holds an flock for its lifetime.
class FlockGuard {
 public:
  explicit FlockGuard(int fd) : fd_(fd) {
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {}
  }
  ~FlockGuard() { (void)::flock(fd_, LOCK_UN); }
  FlockGuard(const FlockGuard&) = delete;
  FlockGuard& operator=(const FlockGuard&) = delete;

 private:
  int fd_;
};

// Splits "/dir/name.ext" into the backup prefix "/dir/name-" and the extension ".ext".
struct BackupPattern {
  fs::path dir;
  std::string prefix;  // file-name prefix, "name-"
  std::string ext;     // ".log" or ""
};

BackupPattern backup_pattern(const std::string& path) {
  fs::path p(path);
  BackupPattern b;
  b.dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  b.ext = p.extension().string();
  b.prefix = p.stem().string() + "-";
  return b;
}

// "2026-11-29T17-51-32.123" for a UTC time point.
std::string backup_stamp(system_clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  int milli = static_cast<int>(ms % 1000);
  if (milli < 0) milli += 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d-%02d-%02d.%03d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, milli);
  return buf;
}

// Parses a stamp made by backup_stamp; false when `s` is not one.
bool parse_stamp(std::string_view s, system_clock::time_point& out) {
  if (s.size() != 23) return false;
  static constexpr std::string_view shape = "dddd-dd-ddTdd-dd-dd.ddd";
  for (size_t i = 0; i < s.size(); ++i) {
    if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i]) return false;
  }
  auto num = [&](size_t pos, size_t len) {
    int v = 0;
    for (size_t i = pos; i < pos + len; ++i) v = v * 10 + (s[i] - '0');
    return v;
  };
  std::tm tm{};
  tm.tm_year = num(0, 4) - 1900;
  tm.tm_mon = num(5, 2) - 1;
  tm.tm_mday = num(8, 2);
  tm.tm_hour = num(11, 2);
  tm.tm_min = num(14, 2);
  tm.tm_sec = num(17, 2);
  std::time_t secs = timegm(&tm);
  out = system_clock::from_time_t(secs) + std::chrono::milliseconds(num(20, 3));
  return true;
}

struct Backup {
  std::string path;
  system_clock::time_point time;
};

std::vector<Backup> find_backups(const std::string& log_path) {
  auto pat = backup_pattern(log_path);
  std::vector<Backup> out;
  std::error_code ec;
  for (fs::directory_iterator it(pat.dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.rfind(pat.prefix, 0) != 0) continue;
    std::string_view rest(name);
    rest.remove_prefix(pat.prefix.size());
    if (rest.size() >= 3 && rest.substr(rest.size() - 3) == ".gz") rest.remove_suffix(3);
    if (rest.size() < pat.ext.size() || rest.substr(rest.size() - pat.ext.size()) != pat.ext) continue;
    rest.remove_suffix(pat.ext.size());
    system_clock::time_point t;
    if (!parse_stamp(rest, t)) continue;
    out.push_back({it->path().string(), t});
  }
  std::sort(out.begin(), out.end(),
            [](const Backup& a, const Backup& b) { return a.time != b.time ? a.time > b.time : a.path > b.path; });
  return out;
}

// The secret-key rule of is_secret_key, on a lower-cased key without '-' and '_'.
bool secret_normalized(const std::string& k) {
  auto ends_with = [&](std::string_view s) {
    return k.size() >= s.size() && k.compare(k.size() - s.size(), s.size(), s) == 0;
  };
  auto contains = [&](std::string_view s) { return k.find(s) != std::string::npos; };
  if (ends_with("file") || ends_with("path") || ends_with("files") || ends_with("dir") || k == "metadata") return false;
  for (std::string_view s : {"token", "password", "passwd", "secret", "credential", "privatekey", "apikey",
                             "authorization", "bearer", "passphrase", "cookie"})
    if (contains(s)) return true;
  return ends_with("key") || ends_with("keys") || ends_with("data");
}

Json redact_value(const Json& v, int depth) {
  if (depth > 64) return "<redacted>";
  if (v.is_object()) {
    Json out = Json::object();
    for (auto it = v.begin(); it != v.end(); ++it) {
      out[it.key()] =
          (is_secret_key(it.key()) && !it.value().is_null()) ? Json("<redacted>") : redact_value(it.value(), depth + 1);
    }
    return out;
  }
  if (v.is_array()) {
    Json out = Json::array();
    for (const auto& e : v) out.push_back(redact_value(e, depth + 1));
    return out;
  }
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    auto first = s.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && s[first] == '{') {
      Json inner = Json::parse(s, nullptr, false);
      if (!inner.is_discarded() && inner.is_object()) return redact_value(inner, depth + 1).dump();
    }
  }
  return v;
}

}  // namespace

RotationPolicy rotation_from_log_options(int max_size_mb, int max_backups, int max_age_days, bool compress) {
  RotationPolicy p;
  p.max_size_bytes = static_cast<std::uint64_t>(max_size_mb > 0 ? max_size_mb : 100) << 20;
  p.max_backups = std::max(0, max_backups);
  p.max_age_days = std::max(0, max_age_days);
  p.compress = compress;
  return p;
}

void DetachedProcessRunner::run(std::function<void()> work) {
  if (!run_detached(work)) work();  // without a process the work still gets done, inline
}

FileLogSink::FileLogSink(std::string path, RotationPolicy policy, std::shared_ptr<const WallClock> clock,
                         std::shared_ptr<Compressor> compressor, std::shared_ptr<BackgroundRunner> background)
    : path_(std::move(path)),
      policy_(policy),
      clock_(clock ? std::move(clock) : std::make_shared<SystemWallClock>()),
      compressor_(std::move(compressor)),
      background_(background ? std::move(background) : std::make_shared<InlineRunner>()) {
  fd_.reset(open_append(path_));
}

FileLogSink::FileLogSink(const std::string& path) : FileLogSink(path, RotationPolicy{}) {}

FileLogSink::~FileLogSink() = default;

void FileLogSink::reopen() {
  UniqueFd fd(open_append(path_));
  if (!fd.valid()) note_stderr("cannot reopen logFile " + path_ + ": " + std::strerror(errno) + "; logging to stderr");
  fd_ = std::move(fd);
}

void FileLogSink::rotate_if_needed(std::size_t incoming) {
  struct stat held {
  }, named{};
  if (::fstat(fd_.get(), &held) != 0) return;
  // The path may have been rotated (or removed) by another process since we opened it.
  if (::stat(path_.c_str(), &named) != 0 || named.st_ino != held.st_ino || named.st_dev != held.st_dev) {
    reopen();
    if (!fd_.valid() || ::fstat(fd_.get(), &held) != 0) return;
  }
  auto size = static_cast<std::uint64_t>(held.st_size);
  if (size == 0 || size + incoming <= policy_.max_size_bytes) return;

  std::string backup;
  UniqueFd old_fd;
  bool rotated_elsewhere = false;
  {
    FlockGuard lock(fd_.get());
    // Re-check under the lock: another process may have rotated while we waited.
    if (::stat(path_.c_str(), &named) != 0 || named.st_ino != held.st_ino || named.st_dev != held.st_dev) {
      rotated_elsewhere = true;
    } else {
      auto pat = backup_pattern(path_);
      // Backup names must sort by rotation order, even when the clock repeats or steps back.
      auto t = clock_->now();
      auto existing = find_backups(path_);
      if (!existing.empty() && existing.front().time >= t) t = existing.front().time + std::chrono::milliseconds(1);
      for (int i = 0; i < 1000 && backup.empty(); ++i, t += std::chrono::milliseconds(1)) {
        std::string candidate = (pat.dir / (pat.prefix + backup_stamp(t) + pat.ext)).string();
        std::error_code ec;
        if (!fs::exists(candidate, ec) && !fs::exists(candidate + ".gz", ec)) backup = candidate;
      }
      if (backup.empty()) {
        note_stderr("cannot rotate logFile " + path_ + ": no free backup name");
        return;
      }
      if (::rename(path_.c_str(), backup.c_str()) != 0) {
        note_stderr("cannot rotate logFile " + path_ + ": " + std::strerror(errno));
        return;
      }
      // The new file exists before the lock on the old one is released, so a process waiting for
      // the lock finds the path renamed and reopens it.
      UniqueFd fresh(open_append(path_));
      if (!fresh.valid()) note_stderr("cannot create logFile " + path_ + " after rotation: " + std::strerror(errno));
      old_fd = std::exchange(fd_, std::move(fresh));
    }
  }
  if (rotated_elsewhere) {
    reopen();
    return;
  }
  old_fd.reset();
  prune_backups();
  finish_backup(backup);
}

void FileLogSink::finish_backup(const std::string& backup) {
  if (!policy_.compress) return;
  if (!compressor_) compressor_ = make_default_compressor();
  background_->run([backup, compressor = compressor_] {
    std::string tmp = backup + ".gz.tmp";
    std::error_code ec;
    fs::remove(tmp, ec);
    try {
      compressor->gzip_file(backup, tmp);
      if (::rename(tmp.c_str(), (backup + ".gz").c_str()) != 0)
        throw std::runtime_error(std::string("cannot rename ") + tmp + ": " + std::strerror(errno));
      ::unlink(backup.c_str());
    } catch (const std::exception& e) {
      fs::remove(tmp, ec);
      note_stderr("cannot compress log backup " + backup + " (" + compressor->name() + "): " + e.what());
    }
  });
}

void FileLogSink::prune_backups() {
  auto backups = find_backups(path_);
  auto now = clock_->now();
  auto max_age = std::chrono::hours(24) * policy_.max_age_days;
  for (size_t i = 0; i < backups.size(); ++i) {
    bool too_many = policy_.max_backups > 0 && i >= static_cast<size_t>(policy_.max_backups);
    bool too_old = policy_.max_age_days > 0 && now - backups[i].time > max_age;
    if (too_many || too_old) ::unlink(backups[i].path.c_str());
  }
}

void FileLogSink::write_line(std::string_view line) {
  if (fd_.valid() && policy_.max_size_bytes > 0) rotate_if_needed(line.size());
  if (!fd_.valid() || write_all(fd_.get(), line) != 0) {
    // Disk full or the file went away: continue on stderr rather than lose lines or fail.
    (void)!::write(STDERR_FILENO, line.data(), line.size());
  }
}

std::vector<std::string> list_log_backups(const std::string& path) {
  std::vector<std::string> out;
  for (auto& b : find_backups(path)) out.push_back(std::move(b.path));
  return out;
}

std::unique_ptr<LogSink> open_log_file(const std::string& path, const RotationPolicy& policy) {
  auto sink = std::make_unique<FileLogSink>(path, policy, nullptr, nullptr, std::make_shared<DetachedProcessRunner>());
  if (sink->ok()) return sink;
  note_stderr("cannot open logFile " + path + ": " + std::strerror(errno) + "; logging to stderr");
  return nullptr;
}

bool is_secret_key(std::string_view key) {
  std::string k;
  k.reserve(key.size());
  for (char c : key) {
    if (c == '-' || c == '_') continue;
    k.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
  }
  return secret_normalized(k);
}

Json redact_secrets(const Json& value) { return redact_value(value, 0); }

std::string redacted_dump(const Json& value) {
  return redact_secrets(value).dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace manifold::util
