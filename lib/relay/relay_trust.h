// Whom a CNI invocation trusts with its API requests on the agent's socket. The requests (a pod's
// status, its events) and the answers the invocation acts on must come from the node agent, which
// runs as root: so the socket file must be a socket owned by root that nobody else may write, and
// the process that accepted the connection must run as root (SO_PEERCRED, which a file swapped
// between the two checks cannot fake). Anything else, and the invocation goes to the API server
// directly. Behind an interface so tests can trust their own uid.
#pragma once

#include <sys/types.h>

#include <string>

namespace manifold::relay {

/// Decides whether the agent's socket and the peer on it may be trusted.
class AgentTrust {
 public:
  virtual ~AgentTrust() = default;
  /// Why the socket file at `path` is not to be trusted ("" when it is); checked before connecting.
  virtual std::string check_socket(const std::string& path) = 0;
  /// Why the peer on the connected Unix socket `fd` is not to be trusted ("" when it is); checked
  /// before anything is sent.
  virtual std::string check_peer(int fd) = 0;
};

/// Trusts only uid `uid` (root in production): a socket file it owns, writable by nobody else, and
/// a peer process running as it.
class OwnerTrust final : public AgentTrust {
 public:
  /// Trusts `uid`.
  explicit OwnerTrust(uid_t uid = 0) : uid_(uid) {}
  /// lstat(): a socket, owned by the uid, no group or other write permission ("" when there is no
  /// file: connecting then fails).
  std::string check_socket(const std::string& path) override;
  /// SO_PEERCRED: the peer runs as the uid.
  std::string check_peer(int fd) override;

 private:
  uid_t uid_;
};

}  // namespace manifold::relay
