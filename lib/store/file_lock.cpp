// FileLock: flock with a bounded, polled wait and the unlink-race check.
#include "store/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "cni/error.h"
#include "store/cache_files.h"

namespace manifold::store {

namespace {

/// True when `fd` is still the file linked at `path` (nobody removed or replaced it meanwhile).
bool still_linked(const UniqueFd& fd, const std::filesystem::path& path) {
  struct stat held {
  }, linked{};
  if (::fstat(fd.get(), &held) != 0) throw_io("cannot stat lock file", path, errno);
  if (::lstat(path.c_str(), &linked) != 0) {
    if (errno == ENOENT) return false;
    throw_io("cannot stat lock file", path, errno);
  }
  return held.st_dev == linked.st_dev && held.st_ino == linked.st_ino;
}

/// Opens (creating, 0600) the lock file. On a read-only filesystem an existing lock file is
/// opened read-only (flock needs no write access); nullopt when there is none and none can be made.
std::optional<UniqueFd> open_lock_file(const std::filesystem::path& path) {
  bool read_only = false;
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid() && errno == EROFS) {
    read_only = true;
    fd = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid() && errno == ENOENT) return std::nullopt;
  }
  if (!fd.valid()) throw_io("cannot open lock file", path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_io("cannot stat lock file", path, errno);
  if (!S_ISREG(st.st_mode)) {
    throw cni::CniError(cni::ErrorCode::Io, "lock file " + path.string() + " is not a regular file");
  }
  if (!read_only && (st.st_mode & 07777) != 0600 && ::fchmod(fd.get(), 0600) != 0) {
    throw_io("cannot chmod lock file", path, errno);
  }
  return fd;
}

}  // namespace

std::unique_ptr<FileLock> FileLock::acquire(const std::filesystem::path& path, std::chrono::milliseconds timeout,
                                            util::Sleeper& sleeper) {
  std::chrono::milliseconds waited{0};
  std::chrono::milliseconds backoff{1};
  for (;;) {
    std::optional<UniqueFd> opened = open_lock_file(path);
    // A read-only filesystem without a lock file: nobody can create or change anything under it,
    // so there is nothing to serialise (DEL must still run and release the delegates' resources).
    if (!opened) return std::unique_ptr<FileLock>(new FileLock(path, UniqueFd()));
    UniqueFd fd = std::move(*opened);
    while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno == EINTR) continue;
      if (errno != EWOULDBLOCK) throw_io("cannot lock", path, errno);
      if (waited >= timeout) {
        throw cni::CniError(cni::ErrorCode::TryAgainLater, "timed out after " + std::to_string(timeout.count()) +
                                                               " ms waiting for lock " + path.string() +
                                                               " (another call for this container is still running)");
      }
      std::chrono::milliseconds pause = std::min(backoff, timeout - waited);
      sleeper.sleep_for(pause);
      waited += pause;
      backoff = std::min(backoff * 2, kMaxBackoff);
    }
    if (still_linked(fd, path)) return std::unique_ptr<FileLock>(new FileLock(path, std::move(fd)));
    // The previous holder deleted the file after we opened it: lock a fresh one instead.
  }
}

void FileLock::unlink_file() {
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT) throw_io("cannot remove lock file", path_, errno);
}

}  // namespace manifold::store
