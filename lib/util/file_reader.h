// The one bounded whole-file reader, and the FileReader interface over it. Every file manifold reads
// whole (kubeconfig, certificates, tokens, cache entries, network configs, install inputs) may be
// hostile or corrupt, so every read accepts regular files only and stops as soon as a size bound is
// exceeded. try_read_file reports why a read failed, so each caller can turn it into its own error
// (a cache file that is a symlink is corrupt, a missing one is absent); read_file_bounded throws
// util::IoError. Configuration inputs go through a FileReader, so their parsing can be unit-tested
// with in-memory files.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace manifold::util {

/// Why try_read_file failed.
enum class ReadFailure {
  None,          ///< the read succeeded
  Missing,       ///< the path does not exist (ENOENT)
  SymbolicLink,  ///< the path is a symbolic link and links were refused
  NotRegular,    ///< the path is a directory, device, FIFO or socket
  TooLarge,      ///< the file is larger than the bound
  System,        ///< open, fstat or read failed with `error`
};

/// The outcome of try_read_file.
struct FileRead {
  std::string data;                         ///< the contents; empty unless failure is None
  ReadFailure failure = ReadFailure::None;  ///< why the read failed
  int error = 0;                            ///< errno for Missing and System
  /// True when the read succeeded.
  bool ok() const { return failure == ReadFailure::None; }
  /// A short English reason ("No such file or directory", "not a regular file", "larger than N
  /// bytes"), for messages that name the path themselves.
  std::string reason(std::size_t max_bytes) const;
};

/// Reads the whole file `path` without throwing: open(O_RDONLY|O_CLOEXEC|O_NOCTTY, plus O_NOFOLLOW
/// unless `follow_symlinks`), regular files only, at most `max_bytes`.
FileRead try_read_file(const std::string& path, std::size_t max_bytes, bool follow_symlinks = true);

/// Reads the whole regular file `path`. Throws util::IoError naming the path (never the contents)
/// when it cannot be read, is not a regular file or is larger than `max_bytes`.
std::string read_file_bounded(const std::string& path, std::size_t max_bytes);

/// Default upper bound for one file read: 4 MiB (far above any kubeconfig, certificate or token).
inline constexpr std::size_t kMaxFileBytes = 4u << 20;

/// Reads whole files.
class FileReader {
 public:
  virtual ~FileReader() = default;
  /// Returns the contents of `path`. Throws util::IoError naming the path (never the contents) when
  /// the file cannot be opened or read, is not a regular file, or is larger than `max_bytes`.
  virtual std::string read(const std::string& path, std::size_t max_bytes = kMaxFileBytes) = 0;
};

/// Reads from the real file system.
class RealFileReader final : public FileReader {
 public:
  /// read_file_bounded.
  std::string read(const std::string& path, std::size_t max_bytes = kMaxFileBytes) override;
};

/// An in-memory file system for tests; records every path read.
class FakeFileReader final : public FileReader {
 public:
  /// Adds (or replaces) a file.
  void add(const std::string& path, std::string contents) { files_[path] = std::move(contents); }
  /// Removes a file, so reading it fails as a missing file would.
  void remove(const std::string& path) { files_.erase(path); }
  /// True when the file exists.
  bool contains(const std::string& path) const { return files_.count(path) > 0; }
  /// Every path passed to read(), in order, including failed reads.
  const std::vector<std::string>& reads() const { return reads_; }
  /// The added file's contents; a missing file fails like ENOENT.
  std::string read(const std::string& path, std::size_t max_bytes = kMaxFileBytes) override;

 private:
  std::map<std::string, std::string> files_;
  std::vector<std::string> reads_;
};

}  // namespace manifold::util
