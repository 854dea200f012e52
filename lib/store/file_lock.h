// Exclusive per-container file locks for the on-disk cache. A lock is an flock(2) on a small lock
// file; the holder may delete that file (so that after DEL nothing of the container is left on
// disk), which is safe because every acquirer re-checks, after getting the flock, that the file it
// locked is still the one at the path, and starts over with a fresh file otherwise. flock has no
// timeout, so waiting polls with a capped exponential back-off through a Sleeper, which also makes
// the wait bound exact and testable. Also home of the small fd owner the store uses.
#pragma once

#include "util/clock.h"
#include "util/unique_fd.h"

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

/// Owns one file descriptor (util::UniqueFd).
using UniqueFd = util::UniqueFd;

/// An exclusive flock on a lock file, held until destruction.
class FileLock final : public LockGuard {
 public:
  /// Longest single pause between two attempts while the lock is busy.
  static constexpr std::chrono::milliseconds kMaxBackoff{50};

  /// Opens (creating, mode 0600) and locks `path`, retrying while another holder has it. Gives up
  /// once the pauses add up to `timeout` with CniError(TryAgainLater); other failures throw
  /// CniError(Io). On a read-only filesystem an existing lock file is locked through a read-only
  /// descriptor, and a missing one yields a lock that holds nothing (nobody can change anything
  /// there). `sleeper` is only used during the call.
  static std::unique_ptr<FileLock> acquire(const std::filesystem::path& path, std::chrono::milliseconds timeout,
                                           util::Sleeper& sleeper);

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
