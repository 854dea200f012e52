// The file primitives of FileCache: directories created 0700 whatever the umask, whole writes, a
// bounded read that refuses links and non-regular files, and a temp file in the cache's own temp
// directory that is renamed into place or removed. Every operation uses O_NOFOLLOW and checks its
// result; failures are CniError(Io) naming the path (CniError(Decoding) for a file that cannot be a
// cache file).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "util/unique_fd.h"

namespace manifold::store {

/// Throws CniError(Io) "<what> <path>: <strerror(err)>".
[[noreturn]] void throw_io(const std::string& what, const std::filesystem::path& path, int err);

/// Creates `dir` and any missing parents with mode 0700 (exactly; the umask is overridden).
void ensure_dir(const std::filesystem::path& dir);

/// Writes all of `data` to `fd`; CniError(Io) naming `path` on failure.
void write_all(const util::UniqueFd& fd, std::string_view data, const std::filesystem::path& path);

/// Reads a whole regular file of at most `max_bytes`; nullopt when it does not exist.
std::optional<std::string> read_bounded(const std::filesystem::path& path, std::size_t max_bytes);

/// Unlinks `path`; a missing file is fine.
void unlink_if_present(const std::filesystem::path& path);

/// True for "<pid>.<seq>.tmp", the part of a temp-file name after "<id>.".
bool is_temp_suffix(std::string_view rest);

/// A temp file `<dir>/<container>.<pid>.<seq>.tmp` (0600) that is deleted unless it was renamed
/// into place.
class TempFile {
 public:
  /// Creates the file in `dir`. When `dir` does not exist, calls `make_dir` (which creates it or
  /// throws) and tries once more: a save that finds its directories costs no call to check them.
  TempFile(const std::filesystem::path& dir, const std::string& container_id, const std::function<void()>& make_dir);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  /// Writes, closes and renames the file to `target` (no fsync: see cache.h). When the target's
  /// directory does not exist, calls `make_target_dir` and renames once more.
  void commit(std::string_view data, const std::filesystem::path& target, const std::function<void()>& make_target_dir);

 private:
  std::filesystem::path path_;
  util::UniqueFd fd_;
  bool owned_ = false;
};

}  // namespace manifold::store
