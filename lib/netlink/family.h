// Address families as the kernel numbers them (AF_INET, AF_INET6), next to the IP version that
// util::IpAddress carries (4, 6): the two checks and the one conversion every netlink value and
// message needs, so that no caller compares the two numberings by hand.
#pragma once

#include <string>

#include "util/ip.h"

namespace manifold::netlink {

/// True for AF_INET and AF_INET6.
bool is_ip_family(int family) noexcept;

/// "IPv4", "IPv6" or "family <n>" for a kernel address family, for messages.
std::string family_name(int family);

/// The kernel address family of `ip`: AF_INET for IPv4, AF_INET6 for IPv6.
int family_of(const util::IpAddress& ip) noexcept;

}  // namespace manifold::netlink
