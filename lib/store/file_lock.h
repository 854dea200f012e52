// Exclusive per-container file locks for the on-disk cache. A lock is an flock(2) on a small lock
// file; the holder may delete that file (so that after DEL nothing of the container is left on
// disk), which is safe because every acquirer re-checks, after getting the flock, that the file it
// locked is still the one at the path, and starts over with a fresh file otherwise. flock has no
// timeout, so waiting polls with a capped exponential back-off through a Sleeper, which also makes
// the wait bound exact and testable. Also home of the small fd owner the store uses.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <utility>

namespace manifold::store {

/// A held lock; releasing it is the destructor's job.
class LockGuard {
 public:
  virtual ~LockGuard() = default;
};

/// Pauses the calling thread. Abstract so lock waits cost no real time in tests.
class Sleeper {
 public:
  virtual ~Sleeper() = default;
  /// Sleeps for `duration`.
  virtual void sleep_for(std::chrono::milliseconds duration) = 0;
};

/// The real Sleeper (std::this_thread::sleep_for).
class RealSleeper final : public Sleeper {
 public:
  /// Sleeps for `duration`.
  void sleep_for(std::chrono::milliseconds duration) override;
};

/// Owns one file descriptor (move-only, closed on destruction, no implicit int conversion).
class UniqueFd {
 public:
  UniqueFd() = default;
  /// Takes ownership of `fd` (may be -1).
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
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
  /// Closes the descriptor and returns close()'s errno (0 on success); for written files, where a
  /// failing close can mean lost data.
  int close_checked();

 private:
  int fd_ = -1;
};

/// An exclusive flock on a lock file, held until destruction.
class FileLock final : public LockGuard {
 public:
  /// Longest single pause between two attempts while the lock is busy.
  static constexpr std::chrono::milliseconds kMaxBackoff{50};

  /// Opens (creating, mode 0600) and locks `path`, retrying while another holder has it. Gives up
  /// once the pauses add up to `timeout` with CniError(TryAgainLater); other failures throw
  /// CniError(Io). `sleeper` is only used during the call.
  static std::unique_ptr<FileLock> acquire(const std::filesystem::path& path,
                                           std::chrono::milliseconds timeout, Sleeper& sleeper);

  /// Deletes the lock file while still holding the lock (ENOENT is fine); waiters then retry with
  /// a fresh file. Throws CniError(Io) on other errors.
  void unlink_file();
  /// The lock file's path.
  const std::filesystem::path& path() const { return path_; }

 private:
  FileLock(std::filesystem::path path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  std::filesystem::path path_;
  UniqueFd fd_;
};

}  // namespace manifold::store
