// Implementation of the address-family helpers.
#include "netlink/family.h"

#include <sys/socket.h>

namespace manifold::netlink {

bool is_ip_family(int family) noexcept { return family == AF_INET || family == AF_INET6; }

std::string family_name(int family) {
  if (family == AF_INET) return "IPv4";
  if (family == AF_INET6) return "IPv6";
  return "family " + std::to_string(family);
}

int family_of(const util::IpAddress& ip) noexcept { return ip.family == 4 ? AF_INET : AF_INET6; }

}  // namespace manifold::netlink
