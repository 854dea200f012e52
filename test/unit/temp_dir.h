// Test helper: a temporary directory removed, with its contents, when the object goes away, with
// small writers for the files tests put in it (plain files and executable /bin/sh scripts). Every
// unit test that needs scratch space on disk uses this one type.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace manifold::test {

/// A fresh directory under $TMPDIR (or /tmp), deleted recursively on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "manifold-test-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + tmpl);
    path_ = tmpl;
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

  /// Writes `contents` byte for byte to `name` in the directory and returns the file's path.
  std::string write(const std::string& name, const std::string& contents) const {
    std::filesystem::path p = path_ / name;
    std::ofstream(p, std::ios::binary) << contents;
    return p.string();
  }

  /// Writes a /bin/sh script with `body` to `name`, sets `mode` and returns the script's path.
  std::string script(const std::string& name, const std::string& body, mode_t mode = 0755) const {
    std::string p = write(name, "#!/bin/sh\n" + body + "\n");
    if (::chmod(p.c_str(), mode) != 0) throw std::runtime_error("chmod failed: " + p);
    return p;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace manifold::test
