// Network namespaces: opening one by path, and entering it for a scope. `NetnsFile` owns an open
// namespace file and proves, before anyone calls setns() with it, that it really is a namespace
// (fstatfs says nsfs or procfs; the NS_GET_NSTYPE ioctl says "net" where the kernel supports it). A
// missing path raises the distinct `NetnsNotFound`, so DEL can treat a vanished pod namespace as
// success. `NetnsIdentity` (device and inode of the nsfs file) tells whether two paths, or one path
// at two times, name the same namespace. `NetnsGuard` moves the *calling thread* into a namespace and back; if it cannot move
// back it aborts the process, because continuing would silently configure the wrong namespace (the
// host).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "cni/error.h"
#include "util/unique_fd.h"

namespace manifold::netlink {

/// Raised when a namespace path does not exist (ENOENT). Code InvalidEnv; DEL treats it as success.
class NetnsNotFound : public cni::CniError {
 public:
  /// Creates the error for `path`.
  explicit NetnsNotFound(const std::string& path);
};

/// Raised when a path exists but is not a network namespace (a plain file, a mount namespace …).
class NotANetns : public cni::CniError {
 public:
  /// Creates the error for `path`, with `why` as details.
  NotANetns(const std::string& path, std::string why);
};

/// What identifies a network namespace for as long as it exists: the device and inode of its nsfs
/// file, the same through every path that names it (/proc/<pid>/ns/net, a bind mount).
struct NetnsIdentity {
  std::uint64_t dev = 0;  ///< st_dev of the nsfs file
  std::uint64_t ino = 0;  ///< st_ino of the nsfs file
  /// "dev:ino", for messages.
  std::string str() const;
  bool operator==(const NetnsIdentity&) const = default;
};

/// An open, validated network namespace file (O_RDONLY|O_CLOEXEC). Move-only; closes on
/// destruction.
class NetnsFile {
 public:
  /// Opens `path` and checks it is a network namespace. Throws NetnsNotFound when the path does not
  /// exist, NotANetns when it is something else, CniError(InvalidEnv) on any other failure (bad
  /// path syntax, permission, …).
  static NetnsFile open(const std::string& path);
  /// Like open(), but returns nullopt instead of throwing NetnsNotFound.
  static std::optional<NetnsFile> open_if_exists(const std::string& path);
  /// Opens the calling thread's current network namespace (/proc/thread-self/ns/net).
  static NetnsFile current();

  NetnsFile(NetnsFile&& other) noexcept = default;
  NetnsFile& operator=(NetnsFile&& other) noexcept = default;
  NetnsFile(const NetnsFile&) = delete;
  NetnsFile& operator=(const NetnsFile&) = delete;
  ~NetnsFile() = default;

  /// The open descriptor (owned; valid until destruction).
  int fd() const noexcept { return fd_.get(); }
  /// The path it was opened from.
  const std::string& path() const noexcept { return path_; }
  /// True when both files refer to the same namespace (same device and inode).
  bool same_namespace(const NetnsFile& other) const;
  /// The identity of the namespace it refers to. Throws CniError(InvalidEnv) when fstat fails.
  NetnsIdentity identity() const;

 private:
  NetnsFile(util::UniqueFd fd, std::string path) noexcept : fd_(std::move(fd)), path_(std::move(path)) {}
  util::UniqueFd fd_;
  std::string path_;
};

/// The identity of the network namespace at `path`, read through an open, validated file (so a
/// /proc/<pid>/ns/net path names the namespace that process is in now); nullopt when the path does
/// not exist. Throws NotANetns when it is something else, CniError(InvalidEnv) on other failures.
std::optional<NetnsIdentity> netns_identity(const std::string& path);

/// Moves the calling thread into a network namespace for the guard's lifetime, then back to the
/// namespace the thread was in before. Neither copyable nor movable: the thread that constructs it
/// must destroy it. Netlink sockets created inside the scope stay bound to the target namespace
/// after the scope ends; the rest of the thread's state is restored.
class NetnsGuard {
 public:
  /// Remembers the current namespace and enters `target`. Throws CniError(InvalidEnv) if either
  /// step fails (the thread is then still in its original namespace).
  explicit NetnsGuard(const NetnsFile& target);
  /// Returns to the remembered namespace; calls std::abort() if that is impossible.
  ~NetnsGuard();
  NetnsGuard(const NetnsGuard&) = delete;
  NetnsGuard& operator=(const NetnsGuard&) = delete;

 private:
  NetnsFile original_;
};

/// Runs `fn` inside `target` and returns its result; the thread's namespace is restored even when
/// `fn` throws.
template <class Fn>
decltype(auto) with_netns(const NetnsFile& target, Fn&& fn) {
  NetnsGuard guard(target);
  return std::forward<Fn>(fn)();
}

}  // namespace manifold::netlink
