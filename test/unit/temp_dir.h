// Test helper: a temporary directory removed, with its contents, when the object goes away.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace manifold::test {

/// A fresh directory under $TMPDIR (or /tmp), deleted recursively on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "manifold-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data()) ? tmpl : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// The directory.
  const std::filesystem::path& path() const { return path_; }
  /// The directory as a string.
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace manifold::test
