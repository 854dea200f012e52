// Whole-file reads behind an interface. Configuration inputs that live in files (kubeconfig,
// certificates, service-account tokens) are read through a FileReader, so their parsing and
// validation can be unit-tested with in-memory files, and every read is bounded in size because the
// files may be hostile or corrupt.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace manifold::util {

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
  /// open(O_RDONLY|O_CLOEXEC) + read, regular files only.
  std::string read(const std::string& path, std::size_t max_bytes = kMaxFileBytes) override;
};

/// An in-memory file system for tests; records every path read.
class FakeFileReader final : public FileReader {
 public:
  /// Adds (or replaces) a file.
  void add(const std::string& path, std::string contents) { files_[path] = std::move(contents); }
  /// Removes a file, so reading it fails as a missing file would.
  void remove(const std::string& path) { files_.erase(path); }
  /// Every path passed to read(), in order, including failed reads.
  const std::vector<std::string>& reads() const { return reads_; }
  /// The added file's contents; a missing file fails like ENOENT.
  std::string read(const std::string& path, std::size_t max_bytes = kMaxFileBytes) override;

 private:
  std::map<std::string, std::string> files_;
  std::vector<std::string> reads_;
};

}  // namespace manifold::util
