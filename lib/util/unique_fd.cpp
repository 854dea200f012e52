// Implementation of UniqueFd and write_all.
#include "util/unique_fd.h"

#include <unistd.h>

#include <cerrno>

namespace manifold::util {

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void UniqueFd::reset() { reset(-1); }

void UniqueFd::reset(int fd) {
  if (fd_ >= 0 && fd_ != fd) ::close(fd_);
  fd_ = fd;
}

int UniqueFd::close_checked() {
  if (fd_ < 0) return 0;
  int rc = ::close(std::exchange(fd_, -1));
  return rc == 0 || errno == EINTR ? 0 : errno;
}

int write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

}  // namespace manifold::util
