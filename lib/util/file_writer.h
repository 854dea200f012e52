// The FileWriter interface: the small files the engine writes and removes outside its cache (the
// per-attachment device-info files, the stored TLS session). Writes are atomic (util/atomic_file.h)
// and create the parent directory when it is missing, so a reader never sees a partial file; a
// write also removes the temp files killed writers of the same path left behind long ago. Removal
// tolerates a file that is already gone. The fake keeps the files in a FakeFileReader, so what a
// test's engine writes, the same engine (and the test) reads back.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "util/file_reader.h"

namespace manifold::util {

/// Writes and removes whole files.
class FileWriter {
 public:
  virtual ~FileWriter() = default;
  /// Replaces `path` atomically with `data` and permissions `mode`, creating its parent directories
  /// when missing. Throws util::IoError naming the path.
  virtual void write(const std::string& path, std::string_view data, mode_t mode) = 0;
  /// Removes `path`; false when it did not exist. Throws util::IoError for any other failure.
  virtual bool remove(const std::string& path) = 0;
};

/// Writes to the real file system.
class RealFileWriter final : public FileWriter {
 public:
  /// How old a temp file next to a destination must be before write() treats it as a leftover.
  static constexpr std::int64_t kStaleTempSeconds = 600;
  /// create_directories of the parent, then write_file_atomic, then removes the temp files that
  /// killed writers of the same path left over kStaleTempSeconds ago (remove_stale_temp_files).
  void write(const std::string& path, std::string_view data, mode_t mode) override;
  /// unlink.
  bool remove(const std::string& path) override;
};

/// Writes into a FakeFileReader's in-memory files; records each file's mode.
class FakeFileWriter final : public FileWriter {
 public:
  /// Writes into `files`.
  explicit FakeFileWriter(FakeFileReader& files) : files_(files) {}
  /// Adds the file to the reader and records its mode.
  void write(const std::string& path, std::string_view data, mode_t mode) override;
  /// Removes the file from the reader.
  bool remove(const std::string& path) override;
  /// The files written and not removed since, with their modes.
  const std::map<std::string, mode_t>& written() const { return modes_; }

 private:
  FakeFileReader& files_;
  std::map<std::string, mode_t> modes_;
};

}  // namespace manifold::util
