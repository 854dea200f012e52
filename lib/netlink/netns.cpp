// Implementation of NetnsFile (open + validate a namespace file, its identity) and NetnsGuard
// (setns in, setns back or abort).
#include "netlink/netns.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <utility>

#include "util/log.h"

namespace manifold::netlink {
namespace {

using cni::CniError;
using cni::ErrorCode;

std::string errno_text(int err) { return std::strerror(err); }

void validate_path_text(const std::string& path) {
  if (path.empty()) throw CniError(ErrorCode::InvalidEnv, "network namespace path is empty");
  if (path.size() >= PATH_MAX) {
    throw CniError(ErrorCode::InvalidEnv,
                   "network namespace path is too long (" + std::to_string(path.size()) + " bytes)");
  }
  if (path.find('\0') != std::string::npos) {
    throw CniError(ErrorCode::InvalidEnv, "network namespace path contains a NUL byte");
  }
  if (path.front() != '/') {
    throw CniError(ErrorCode::InvalidEnv, "network namespace path " + path + " is not absolute");
  }
}

// Checks that an open descriptor is a network namespace; throws NotANetns otherwise.
void validate_netns_fd(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    throw CniError(ErrorCode::InvalidEnv, "cannot stat network namespace " + path + ": " + errno_text(err));
  }
  if (S_ISDIR(st.st_mode)) throw NotANetns(path, "it is a directory");

  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) {
    const int err = errno;
    throw CniError(ErrorCode::InvalidEnv, "cannot statfs network namespace " + path + ": " + errno_text(err));
  }
  // Namespace files live on nsfs (kernel >= 3.19) or, on older kernels, on procfs.
  const auto magic = static_cast<unsigned long>(fs.f_type);
  if (magic != static_cast<unsigned long>(NSFS_MAGIC) && magic != static_cast<unsigned long>(PROC_SUPER_MAGIC)) {
    std::ostringstream why;
    why << "filesystem type 0x" << std::hex << magic << " is neither nsfs nor proc";
    throw NotANetns(path, why.str());
  }
  // Kernels >= 4.11 tell the namespace type; a mount or PID namespace must not pass as "net".
  const int type = ::ioctl(fd, NS_GET_NSTYPE);
  if (type >= 0 && type != CLONE_NEWNET) {
    throw NotANetns(path, "it is a namespace of another type (" + std::to_string(type) + ")");
  }
}

}  // namespace

NetnsNotFound::NetnsNotFound(const std::string& path)
    : CniError(ErrorCode::InvalidEnv, "network namespace " + path + " does not exist") {}

NotANetns::NotANetns(const std::string& path, std::string why)
    : CniError(ErrorCode::InvalidEnv, path + " is not a network namespace", std::move(why)) {}

NetnsFile NetnsFile::open(const std::string& path) {
  std::optional<NetnsFile> file = open_if_exists(path);
  if (!file) throw NetnsNotFound(path);
  return std::move(*file);
}

std::optional<NetnsFile> NetnsFile::open_if_exists(const std::string& path) {
  validate_path_text(path);
  util::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    const int err = errno;
    // ENOTDIR: a path component is not a directory, so the path cannot exist either.
    if (err == ENOENT || err == ENOTDIR) return std::nullopt;
    throw CniError(ErrorCode::InvalidEnv, "cannot open network namespace " + path + ": " + errno_text(err));
  }
  validate_netns_fd(fd.get(), path);
  return NetnsFile(std::move(fd), path);
}

NetnsFile NetnsFile::current() {
  std::string path = "/proc/thread-self/ns/net";
  util::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  int err = fd.get() < 0 ? errno : 0;
  if (err == ENOENT) {
    // Kernels before 3.17 have no /proc/thread-self.
    path = "/proc/self/task/" + std::to_string(::syscall(SYS_gettid)) + "/ns/net";
    fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    err = fd.get() < 0 ? errno : 0;
  }
  if (fd.get() < 0) {
    throw CniError(ErrorCode::InvalidEnv, "cannot open the current network namespace " + path + ": " + errno_text(err));
  }
  validate_netns_fd(fd.get(), path);
  return NetnsFile(std::move(fd), path);
}

bool NetnsFile::same_namespace(const NetnsFile& other) const {
  try {
    return identity() == other.identity();
  } catch (const CniError&) {
    return false;  // a file that cannot be examined is the same as nothing
  }
}

NetnsIdentity NetnsFile::identity() const {
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) {
    const int err = errno;
    throw CniError(ErrorCode::InvalidEnv, "cannot stat network namespace " + path_ + ": " + errno_text(err));
  }
  return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

std::string NetnsIdentity::str() const { return std::to_string(dev) + ":" + std::to_string(ino); }

std::optional<NetnsIdentity> netns_identity(const std::string& path) {
  std::optional<NetnsFile> file = NetnsFile::open_if_exists(path);
  if (!file) return std::nullopt;
  return file->identity();
}

NetnsGuard::NetnsGuard(const NetnsFile& target) : original_(NetnsFile::current()) {
  if (::setns(target.fd(), CLONE_NEWNET) != 0) {
    const int err = errno;
    throw CniError(ErrorCode::InvalidEnv, "cannot enter network namespace " + target.path() + ": " + errno_text(err));
  }
}

NetnsGuard::~NetnsGuard() {
  if (::setns(original_.fd(), CLONE_NEWNET) != 0) {
    const int err = errno;
    util::log_error("cannot return to the original network namespace ", original_.path(), ": ", errno_text(err),
                    "; aborting rather than continuing in the wrong namespace");
    std::abort();
  }
}

}  // namespace manifold::netlink
