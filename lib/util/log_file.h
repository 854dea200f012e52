// The log file sink with size-based rotation (`logFile` + `logOptions`: maxSize, maxBackups,
// maxAge, compress — the lumberjack semantics Multus documents, which actually take effect here),
// and the redaction of secrets in debug dumps. Every CNI call is a new process, so rotation works
// across processes: before each line the sink checks that the path still names the file it holds
// (another process may have rotated it) and whether the line would cross maxSize; the rename is done
// under an flock on the full file, so exactly one process rotates it. Backups are named
// `<stem>-<UTC yyyy-mm-ddThh-mm-ss.mmm><ext>[.gz]`. Logging never breaks a CNI call: a file that
// cannot be opened or written falls back to stderr, and rotation problems are noted on stderr and
// otherwise ignored. Compression uses zlib when built with MANIFOLD_HAVE_ZLIB, otherwise a `gzip`
// child process; both sit behind the Compressor interface. Compressing a full log (up to maxSize)
// must not lengthen the CNI call that happens to cross maxSize, so the sink hands it to a
// BackgroundRunner: in the plugin a detached process (double fork, new session, no inherited
// descriptors, so the runtime neither waits for it nor reads its output); in tests the work can run
// inline or be held for inspection.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/clock.h"
#include "util/json.h"
#include "util/log.h"
#include "util/unique_fd.h"

namespace manifold::util {

/// Writes a gzip-format copy of a file.
class Compressor {
 public:
  virtual ~Compressor() = default;
  /// Writes the gzip compression of the file `src` into the new file `dst` (mode 0600). Throws
  /// std::runtime_error describing the failure; the caller removes a partial `dst`.
  virtual void gzip_file(const std::string& src, const std::string& dst) = 0;
  /// What it uses ("zlib" or "gzip process"), for diagnostics.
  virtual std::string name() const = 0;
};

/// The compressor this build uses: zlib when compiled with MANIFOLD_HAVE_ZLIB, else `gzip -c`
/// run as a child process (found in /usr/bin, /bin, /usr/local/bin; no shell).
std::unique_ptr<Compressor> make_default_compressor();

/// The `gzip -c -n` child-process compressor (the default of builds without zlib).
std::unique_ptr<Compressor> make_gzip_process_compressor();

/// Runs work that must not delay the caller.
class BackgroundRunner {
 public:
  virtual ~BackgroundRunner() = default;
  /// Runs `work` (which must not throw) now or later, possibly in another process.
  virtual void run(std::function<void()> work) = 0;
};

/// Runs the work at once, on the calling thread.
class InlineRunner final : public BackgroundRunner {
 public:
  void run(std::function<void()> work) override { work(); }
};

/// Runs the work in a detached grandchild process (util::run_detached: the caller never waits for
/// it and no zombie is left). When fork fails the work runs inline (it still gets done).
class DetachedProcessRunner final : public BackgroundRunner {
 public:
  void run(std::function<void()> work) override;
};

/// Rotation settings of the file sink.
struct RotationPolicy {
  std::uint64_t max_size_bytes = 100ull << 20;  ///< rotate before a line would make the file larger
  int max_backups = 5;                          ///< backups kept; 0 keeps all (subject to max_age)
  int max_age_days = 5;                         ///< backups older than this are removed; 0: no limit
  bool compress = true;                         ///< gzip backups
};

/// The policy for `logOptions` values in Multus/lumberjack units: size in MB (0 means the 100 MB
/// default), backups, age in days, compress.
RotationPolicy rotation_from_log_options(int max_size_mb, int max_backups, int max_age_days, bool compress);

/// Appends log lines to a file and rotates it by size (safe across processes).
class FileLogSink final : public LogSink {
 public:
  /// Opens (creates, 0600) `path` for appending; check ok() afterwards. `clock` and `compressor`
  /// default to the real ones; `background` (where backups are compressed) defaults to inline.
  FileLogSink(std::string path, RotationPolicy policy, std::shared_ptr<const WallClock> clock = nullptr,
              std::shared_ptr<Compressor> compressor = nullptr, std::shared_ptr<BackgroundRunner> background = nullptr);
  /// Opens `path` with the default policy.
  explicit FileLogSink(const std::string& path);
  ~FileLogSink() override;
  FileLogSink(const FileLogSink&) = delete;
  FileLogSink& operator=(const FileLogSink&) = delete;

  /// True when the file is open.
  bool ok() const { return fd_.valid(); }
  void write_line(std::string_view line) override;

 private:
  void reopen();
  void rotate_if_needed(std::size_t incoming);
  void finish_backup(const std::string& backup);
  void prune_backups();

  std::string path_;
  RotationPolicy policy_;
  std::shared_ptr<const WallClock> clock_;
  std::shared_ptr<Compressor> compressor_;
  std::shared_ptr<BackgroundRunner> background_;
  UniqueFd fd_;
};

/// The backups of log file `path` that exist on disk, newest first (plain and .gz).
std::vector<std::string> list_log_backups(const std::string& path);

/// Opens a file sink for `path` with `policy` that compresses backups in a detached process, or
/// returns nullptr (after a note on stderr) when it cannot be opened, in which case the logger
/// keeps writing to stderr.
std::unique_ptr<LogSink> open_log_file(const std::string& path, const RotationPolicy& policy = RotationPolicy{});

/// True when a JSON key names a secret: any key containing token, password/passwd, secret,
/// credential, privatekey, apikey, authorization, bearer, passphrase or cookie; any key that is or
/// ends in "key"/"keys" (client-key, sharedKeys); and any key ending in "data" (client-key-data,
/// certificate-authority-data, kubeconfig data). Case-insensitive; '-' and '_' are ignored. Keys
/// ending in "file", "files", "path" or "dir" (tokenFile, client-key-file) name files, not
/// secrets, and are kept, as is "metadata".
bool is_secret_key(std::string_view key);

/// A copy of `value` with the value of every secret key, at any depth, replaced by "<redacted>".
/// String values that hold a JSON object (for example a NAD's spec.config) are redacted inside.
Json redact_secrets(const Json& value);

/// The compact JSON text of redact_secrets(value), for debug logs of delegate configs.
std::string redacted_dump(const Json& value);

}  // namespace manifold::util
