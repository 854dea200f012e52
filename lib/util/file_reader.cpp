// The bounded reader (POSIX) and the real and fake FileReader implementations. The real read opens
// with O_CLOEXEC, accepts only regular files and stops reading as soon as the size bound is exceeded.
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

FileRead failed(ReadFailure why, int error = 0) {
  FileRead r;
  r.failure = why;
  r.error = error;
  return r;
}

[[noreturn]] void throw_read_error(const std::string& path, const std::string& why, bool too_large = false) {
  if (too_large) throw FileTooLarge("cannot read " + path + ": " + why);
  throw IoError("cannot read " + path + ": " + why);
}

}  // namespace

std::string FileRead::reason(std::size_t max_bytes) const {
  switch (failure) {
    case ReadFailure::None:
      return "no error";
    case ReadFailure::Missing:
    case ReadFailure::System:
      return std::strerror(error);
    case ReadFailure::SymbolicLink:
      return "it is a symbolic link";
    case ReadFailure::NotRegular:
      return "not a regular file";
    case ReadFailure::TooLarge:
      return "file is larger than " + std::to_string(max_bytes) + " bytes";
  }
  return "unknown error";
}

FileRead try_read_file(const std::string& path, std::size_t max_bytes, bool follow_symlinks) {
  // open() would stop at a NUL byte and read another file than the one named.
  if (path.find('\0') != std::string::npos) return failed(ReadFailure::System, EINVAL);
  int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | (follow_symlinks ? 0 : O_NOFOLLOW);
  UniqueFd fd(::open(path.c_str(), flags));
  if (!fd.valid()) {
    if (errno == ENOENT) return failed(ReadFailure::Missing, ENOENT);
    if (errno == ELOOP && !follow_symlinks) return failed(ReadFailure::SymbolicLink);
    return failed(ReadFailure::System, errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return failed(ReadFailure::System, errno);
  if (!S_ISREG(st.st_mode)) return failed(ReadFailure::NotRegular);
  if (static_cast<unsigned long long>(st.st_size) > max_bytes) return failed(ReadFailure::TooLarge);

  FileRead out;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return failed(ReadFailure::System, errno);
    if (n == 0) break;
    // The file may grow after fstat; the bound holds for what is actually read.
    if (out.data.size() + static_cast<std::size_t>(n) > max_bytes) return failed(ReadFailure::TooLarge);
    out.data.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

std::string read_file_bounded(const std::string& path, std::size_t max_bytes) {
  FileRead r = try_read_file(path, max_bytes);
  if (!r.ok()) throw_read_error(path, r.reason(max_bytes), r.failure == ReadFailure::TooLarge);
  return std::move(r.data);
}

std::string RealFileReader::read(const std::string& path, std::size_t max_bytes) {
  return read_file_bounded(path, max_bytes);
}

std::string FakeFileReader::read(const std::string& path, std::size_t max_bytes) {
  reads_.push_back(path);
  auto it = files_.find(path);
  if (it == files_.end()) throw_read_error(path, std::strerror(ENOENT));
  if (it->second.size() > max_bytes) throw_read_error(path, failed(ReadFailure::TooLarge).reason(max_bytes), true);
  return it->second;
}

}  // namespace manifold::util
