// Implementation of address listing through libnl: one RTM_GETADDR dump, converted to AddressInfo.
#include "netlink/address.h"

#include <algorithm>

#include "netlink/convert.h"
#include "netlink/family.h"
#include "netlink/nl_socket.h"
#include "util/log.h"

namespace manifold::netlink {

std::string to_string(const AddressInfo& address) {
  return address.cidr.str() + " dev #" + std::to_string(address.ifindex);
}

std::vector<AddressInfo> list_addresses(NlSocket& sock, int ifindex) {
  CacheHandle cache = sock.dump(DumpKind::Addresses, AF_UNSPEC);
  std::vector<AddressInfo> out;
  for (nl_object* obj = nl_cache_get_first(cache.get()); obj != nullptr; obj = nl_cache_get_next(obj)) {
    auto* addr = reinterpret_cast<rtnl_addr*>(obj);
    const int family = rtnl_addr_get_family(addr);
    const int index = rtnl_addr_get_ifindex(addr);
    if (!is_ip_family(family) || (ifindex != 0 && index != ifindex)) continue;
    nl_addr* local = rtnl_addr_get_local(addr);
    if (local == nullptr) continue;
    const std::optional<util::IpPrefix> prefix =
        detail::prefix_from_bytes(family, nl_addr_get_binary_addr(local), nl_addr_get_len(local),
                                  static_cast<int>(rtnl_addr_get_prefixlen(addr)));
    if (!prefix || nl_addr_get_len(local) == 0) {
      util::log_debug("netlink: skipping malformed ", family_name(family), " address on ifindex ", index);
      continue;
    }
    out.push_back(AddressInfo{family, index, *prefix});
  }
  std::stable_sort(out.begin(), out.end(), [](const AddressInfo& a, const AddressInfo& b) {
    if (a.ifindex != b.ifindex) return a.ifindex < b.ifindex;
    return a.family < b.family;
  });
  return out;
}

}  // namespace manifold::netlink
