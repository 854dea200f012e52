// Real (POSIX) and fake (in-memory) FileReader implementations. The real reader opens with
// O_CLOEXEC, accepts only regular files and stops reading as soon as the size bound is exceeded.
#include "util/file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"
#include "util/unique_fd.h"

namespace manifold::util {
namespace {

[[noreturn]] void throw_read_error(const std::string& path, const std::string& why) {
  throw IoError("cannot read " + path + ": " + why);
}

[[noreturn]] void throw_too_large(const std::string& path, std::size_t max_bytes) {
  throw_read_error(path, "file is larger than " + std::to_string(max_bytes) + " bytes");
}

}  // namespace

std::string RealFileReader::read(const std::string& path, std::size_t max_bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) throw_read_error(path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_read_error(path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw_read_error(path, "not a regular file");
  if (static_cast<std::size_t>(st.st_size) > max_bytes) throw_too_large(path, max_bytes);

  std::string out;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_read_error(path, std::strerror(errno));
    }
    if (n == 0) break;
    if (out.size() + static_cast<std::size_t>(n) > max_bytes) throw_too_large(path, max_bytes);
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

std::string FakeFileReader::read(const std::string& path, std::size_t max_bytes) {
  reads_.push_back(path);
  auto it = files_.find(path);
  if (it == files_.end()) throw_read_error(path, std::strerror(ENOENT));
  if (it->second.size() > max_bytes) throw_too_large(path, max_bytes);
  return it->second;
}

}  // namespace manifold::util
