// UniqueFd: the one owner type for file descriptors in manifold (pipes, lock files, netns files,
// temp files, log files). Move-only, closed on destruction, no implicit conversion to int.
#pragma once

#include <string_view>
#include <utility>

namespace manifold::util {

/// Owns one file descriptor.
class UniqueFd {
 public:
  UniqueFd() = default;
  /// Takes ownership of `fd` (may be -1).
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  /// Closes the current descriptor and takes `other`'s.
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  /// The descriptor, or -1.
  int get() const { return fd_; }
  /// True when a descriptor is owned.
  bool valid() const { return fd_ >= 0; }
  /// Closes the descriptor now (close errors ignored).
  void reset();
  /// Closes the current descriptor and takes ownership of `fd` (may be -1).
  void reset(int fd);
  /// Gives up ownership without closing and returns the descriptor (-1 when none was owned).
  int release() { return std::exchange(fd_, -1); }
  /// Closes the descriptor and returns close()'s errno (0 on success); for written files, where a
  /// failing close can mean lost data.
  int close_checked();

 private:
  int fd_ = -1;
};

/// Writes all of `data` to `fd`, retrying short writes and EINTR. Returns 0, or the errno of the
/// write that failed (EIO for a write that wrote nothing).
int write_all(int fd, std::string_view data);

}  // namespace manifold::util
