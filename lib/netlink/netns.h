// Network namespaces: opening one by path, and entering it for a scope. `NetnsFile` owns an open
// namespace file and proves, before anyone calls setns() with it, that it really is a namespace
// (fstatfs says nsfs or procfs; the NS_GET_NSTYPE ioctl says "net" where the kernel supports it). A
// missing path raises the distinct `NetnsNotFound`, so DEL can treat a vanished pod namespace as
// success. `NetnsGuard` moves the *calling thread* into a namespace and back; if it cannot move
// back it aborts the process, because continuing would silently configure the wrong namespace (the
// host).
#pragma once

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

 private:
  NetnsFile(util::UniqueFd fd, std::string path) noexcept : fd_(std::move(fd)), path_(std::move(path)) {}
  util::UniqueFd fd_;
  std::string path_;
};

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
