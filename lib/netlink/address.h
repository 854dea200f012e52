// Interface addresses as plain values, and listing them. CHECK uses this to verify that an
// attachment's IPs are still configured on its interface; network scoping uses it to find the
// addresses a per-interface routing table is built for.
#pragma once

#include <string>
#include <vector>

#include "util/ip.h"

namespace manifold::netlink {

class NlSocket;

/// One address configured on an interface.
struct AddressInfo {
  int family = 0;       ///< AF_INET or AF_INET6
  int ifindex = 0;      ///< interface it is configured on
  util::IpPrefix cidr;  ///< local address with prefix length: 192.0.2.5/24, 2001:db8::5/64

  /// Field-wise equality.
  friend bool operator==(const AddressInfo&, const AddressInfo&) = default;
};

/// One-line description: "192.0.2.5/24 dev #3".
std::string to_string(const AddressInfo& address);

/// Lists IPv4 and IPv6 addresses, of every interface (ifindex 0) or of one, ordered by ifindex,
/// family (IPv4 first), then kernel order. Throws CniError(Netlink).
std::vector<AddressInfo> list_addresses(NlSocket& sock, int ifindex = 0);

}  // namespace manifold::netlink
