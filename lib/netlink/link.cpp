// Implementation of link listing/lookup through libnl and of the LinkInfo helpers.
#include "netlink/link.h"

#include <linux/if.h>
#include <linux/rtnetlink.h>
#include <netlink/errno.h>

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
  const std::string ifname(name);
  // RTM_GETLINK of one name: the kernel looks it up in a hash, where a dump would serialise every
  // link of the namespace (the ADD checks each new interface name, so a dump per attachment grew
  // with the attachments before it). Sent with NLM_F_ACK and read to the end: the link, then its
  // ACK; or one error. A missing name is ENODEV. Nothing is left unread on the socket, and libnl's
  // expected sequence number moves on (it counts only ACKs, errors and ends of dumps).
  nl_cache* raw = nullptr;
  const int alloc_err = rtnl_link_alloc_cache(nullptr, AF_UNSPEC, &raw);
  if (alloc_err < 0 || raw == nullptr)
    sock.fail("allocate cache for", "link " + ifname, alloc_err < 0 ? alloc_err : -NLE_NOMEM);
  CacheHandle cache(raw);
  MsgHandle msg(nlmsg_alloc_simple(RTM_GETLINK, 0));
  ifinfomsg hdr{};
  hdr.ifi_family = AF_UNSPEC;
  if (!msg || nlmsg_append(msg.get(), &hdr, sizeof hdr, NLMSG_ALIGNTO) < 0 ||
      nla_put_string(msg.get(), IFLA_IFNAME, ifname.c_str()) < 0 ||
      nla_put_u32(msg.get(), IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS) < 0)
    sock.fail("build a request for", "link " + ifname, -NLE_NOMEM);
  const int got = sock.request([&](nl_sock* s) {
    int err = nl_send_auto(s, msg.get());
    if (err >= 0) err = nl_cache_pickup(s, cache.get());
    if (err >= 0) err = nl_wait_for_ack(s);
    return err;
  });
  if (got < 0) {
    if (sock.last_kernel_errno() == ENODEV) return std::nullopt;
    sock.fail("get", "link " + ifname, got);
  }
  nl_object* obj = nl_cache_get_first(cache.get());
  if (obj == nullptr) sock.fail("get", "link " + ifname, -NLE_OBJ_NOTFOUND);
  LinkInfo link = to_link_info(reinterpret_cast<rtnl_link*>(obj));
  // The kernel also finds a link by an alternative name; the interface named `name` is not that.
  if (link.name != ifname) return std::nullopt;
  return link;
}

}  // namespace manifold::netlink
