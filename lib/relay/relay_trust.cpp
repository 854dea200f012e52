// Implementation of the agent socket's trust checks: lstat() of the socket file and SO_PEERCRED of
// the connection.
#include "relay/relay_trust.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace manifold::relay {

std::string OwnerTrust::check_socket(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return "";  // nothing there to distrust: connecting fails
  if (!S_ISSOCK(st.st_mode)) return path + " is not a socket";
  if (st.st_uid != uid_)
    return path + " is owned by uid " + std::to_string(st.st_uid) + ", not " + std::to_string(uid_);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) return path + " is writable by its group or others";
  return "";
}

std::string OwnerTrust::check_peer(int fd) {
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0)
    return std::string("its peer is unknown: ") + std::strerror(errno);
  if (peer.uid != uid_) return "its peer runs as uid " + std::to_string(peer.uid) + ", not " + std::to_string(uid_);
  return "";
}

}  // namespace manifold::relay
