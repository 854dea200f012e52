// A connected NETLINK_ROUTE socket and the dumps manifold needs (links, addresses, routes, rules).
// (The file is named nl_socket.h, not socket.h: lib/ is on the include path before libnl's headers,
// so a lib/netlink/socket.h would shadow libnl's own <netlink/socket.h>. For the same reason no
// file in this folder may share a name with a header of /usr/include/libnl3/netlink.)
//
// IMPORTANT: a netlink socket is bound to the network namespace that was current for the creating
// thread *when the socket was created*, and keeps operating on that namespace for its whole life,
// whatever the thread does later. To act on a pod's namespace, construct NlSocket while a
// NetnsGuard for that namespace is active (RealNetOps does exactly this); a socket created before
// entering the namespace would silently read and modify the host's routing instead.
//
// Dumps are restarted when the kernel flags them inconsistent (NLM_F_DUMP_INTR: the table changed
// while it was being dumped), but only a bounded number of times, so a namespace whose tables churn
// constantly produces an error instead of a hang.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "netlink/handles.h"

namespace manifold::netlink {

/// The object types NlSocket::dump can fetch.
enum class DumpKind { Links, Addresses, Routes, Rules };

/// Calls `attempt` until it returns something other than -NLE_DUMP_INTR, at most `max_attempts`
/// times, and returns the last result (so -NLE_DUMP_INTR when every attempt was interrupted).
int retry_interrupted_dump(int max_attempts, const std::function<int()>& attempt);

/// An owned, connected NETLINK_ROUTE socket (close-on-exec), bound to the creating thread's current
/// network namespace.
class NlSocket {
 public:
  /// How many times a dump is tried before an inconsistent result becomes an error.
  static constexpr int kMaxDumpAttempts = 5;

  /// Allocates and connects the socket in the calling thread's current netns. `context` (e.g.
  /// "netns /run/netns/x") is attached as details to every error raised through this socket.
  /// Throws CniError(Netlink) on failure.
  explicit NlSocket(std::string context = {});

  /// The libnl socket, for the operations in link/address/route/rule.cpp. Prefer request(), which
  /// also records the kernel's errno for error messages.
  nl_sock* get() const noexcept { return sock_.get(); }

  /// Runs one libnl request/answer exchange `call(get())` and returns its result, remembering the
  /// errno of the kernel's error answer (libnl folds many errnos into "Unspecific failure").
  int request(const std::function<int(nl_sock*)>& call);
  /// The errno the kernel answered the last request() with; 0 when it did not answer an error.
  int last_kernel_errno() const noexcept { return *kernel_errno_; }
  /// The context given at construction.
  const std::string& context() const noexcept { return context_; }

  /// Dumps every object of `kind` for `family` (AF_UNSPEC, AF_INET, AF_INET6) into a new cache,
  /// retrying interrupted dumps up to kMaxDumpAttempts times. Throws CniError(Netlink).
  CacheHandle dump(DumpKind kind, int family);
  /// Dumps every object of `kind` for `family` as the kernel sent them, one per message, without
  /// a cache's merging of objects libnl deems identical (routes of one destination and metric).
  /// Retries as dump() does. Throws CniError(Netlink).
  std::vector<ObjectHandle> dump_all(DumpKind kind, int family);

  /// Throws netlink_error(operation, object, nl_error, context(), last_kernel_errno()).
  [[noreturn]] void fail(std::string_view operation, std::string_view object, int nl_error) const;

 private:
  // Throws for a dump that failed or stayed interrupted after every attempt.
  void finish_dump(int result, const std::string& what) const;

  SocketHandle sock_;
  std::string context_;
  // Written by libnl's error callback; on the heap so its address survives moves of the socket.
  std::unique_ptr<int> kernel_errno_ = std::make_unique<int>(0);
};

}  // namespace manifold::netlink
