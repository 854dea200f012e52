// Network interfaces (links) as plain values, and the two kernel queries manifold needs: list every
// link of a namespace, and look one up by name (the core asks "is this ifname still free?" before
// each delegate ADD, CHECK asks "does the attachment's interface still exist?"). Interface names
// are validated before they reach the kernel: 1–15 characters of [A-Za-z0-9_.-], not "." or "..".
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace manifold::netlink {

class NlSocket;

/// One network interface as the kernel reports it.
struct LinkInfo {
  int index = 0;     ///< ifindex
  std::string name;  ///< interface name
  std::string mac;   ///< hardware address "aa:bb:cc:dd:ee:ff", "" when the link has none
  int mtu = 0;       ///< MTU in bytes
  bool up = false;   ///< administratively up (IFF_UP)
  std::string kind;  ///< rtnl link kind ("veth", "macvlan", "bridge" …), "" for physical/loopback

  /// Field-wise equality.
  friend bool operator==(const LinkInfo&, const LinkInfo&) = default;
};

/// One-line description: "3: net1 (veth) mac 02:42:ac:11:00:02 mtu 1500 up".
std::string to_string(const LinkInfo& link);

/// Throws CniError(InvalidConfig) naming `name` unless util::is_valid_ifname(name).
void validate_ifname(std::string_view name);

/// Formats hardware-address bytes as lower-case colon-separated hex; "" for zero bytes.
std::string format_mac(const unsigned char* bytes, std::size_t size);

/// Lists every link of the socket's namespace, ordered by ifindex. Throws CniError(Netlink).
std::vector<LinkInfo> list_links(NlSocket& sock);

/// Looks a link up by name in a dump of the links; nullopt when no such link exists.
/// Throws CniError(InvalidConfig) for an invalid name, CniError(Netlink) on other failures.
std::optional<LinkInfo> find_link(NlSocket& sock, std::string_view name);

}  // namespace manifold::netlink
