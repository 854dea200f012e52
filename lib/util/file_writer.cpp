// Implementation of the real and fake file writers.
#include "util/file_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "util/atomic_file.h"
#include "util/error.h"

namespace manifold::util {

void RealFileWriter::write(const std::string& path, std::string_view data, mode_t mode) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  if (!dir.empty()) {  // on a fresh node the whole chain may be missing
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw IoError("cannot create directory " + dir + ": " + ec.message());
  }
  write_file_atomic(path, data, mode);
  remove_stale_temp_files(path, kStaleTempSeconds);
}

bool RealFileWriter::remove(const std::string& path) {
  if (::unlink(path.c_str()) == 0) return true;
  if (errno == ENOENT) return false;
  throw IoError("cannot remove " + path + ": " + std::strerror(errno));
}

void FakeFileWriter::write(const std::string& path, std::string_view data, mode_t mode) {
  files_.add(path, std::string(data));
  modes_[path] = mode;
}

bool FakeFileWriter::remove(const std::string& path) {
  const bool had = modes_.erase(path) > 0 || files_.contains(path);
  files_.remove(path);
  return had;
}

}  // namespace manifold::util
