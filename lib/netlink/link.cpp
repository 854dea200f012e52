// Implementation of link listing/lookup through libnl and of the LinkInfo helpers.
#include "netlink/link.h"

#include <linux/if.h>

#include <algorithm>

#include "cni/error.h"
#include "netlink/error.h"
#include "netlink/nl_socket.h"
#include "util/ifname.h"

namespace manifold::netlink {
namespace {

LinkInfo to_link_info(rtnl_link* link) {
  LinkInfo out;
  out.index = rtnl_link_get_ifindex(link);
  if (const char* name = rtnl_link_get_name(link)) out.name = name;
  if (nl_addr* addr = rtnl_link_get_addr(link)) {
    out.mac = format_mac(static_cast<const unsigned char*>(nl_addr_get_binary_addr(addr)), nl_addr_get_len(addr));
  }
  out.mtu = static_cast<int>(rtnl_link_get_mtu(link));
  out.up = (rtnl_link_get_flags(link) & IFF_UP) != 0;
  if (const char* kind = rtnl_link_get_type(link)) out.kind = kind;
  return out;
}

}  // namespace

std::string to_string(const LinkInfo& link) {
  std::string out = std::to_string(link.index) + ": " + link.name;
  if (!link.kind.empty()) out += " (" + link.kind + ")";
  if (!link.mac.empty()) out += " mac " + link.mac;
  out += " mtu " + std::to_string(link.mtu);
  out += link.up ? " up" : " down";
  return out;
}

void validate_ifname(std::string_view name) {
  if (util::is_valid_ifname(name)) return;
  std::string shown(name.substr(0, 64));
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  throw cni::CniError(
      cni::ErrorCode::InvalidConfig,
      "invalid interface name \"" + shown + "\": must be 1-15 characters of [A-Za-z0-9_.-] and not \".\" or \"..\"");
}

std::string format_mac(const unsigned char* bytes, std::size_t size) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  if (bytes == nullptr) return out;
  for (std::size_t i = 0; i < size; ++i) {
    if (i != 0) out += ':';
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 0x0F];
  }
  return out;
}

std::vector<LinkInfo> list_links(NlSocket& sock) {
  CacheHandle cache = sock.dump(DumpKind::Links, AF_UNSPEC);
  std::vector<LinkInfo> out;
  for (nl_object* obj = nl_cache_get_first(cache.get()); obj != nullptr; obj = nl_cache_get_next(obj)) {
    out.push_back(to_link_info(reinterpret_cast<rtnl_link*>(obj)));
  }
  std::sort(out.begin(), out.end(), [](const LinkInfo& a, const LinkInfo& b) { return a.index < b.index; });
  return out;
}

std::optional<LinkInfo> find_link(NlSocket& sock, std::string_view name) {
  validate_ifname(name);
  // A dump, not RTM_GETLINK of one name: libnl's rtnl_link_get_kernel ignores an error while it
  // waits for the request's ACK, and an ACK left unread on the socket ends the next dump early (an
  // empty address or rule list that is not empty). A dump ends with NLMSG_DONE and leaves nothing.
  for (LinkInfo& link : list_links(sock))
    if (link.name == name) return std::move(link);
  return std::nullopt;
}

}  // namespace manifold::netlink
