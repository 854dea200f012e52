// RAII ownership of libnl objects. libnl hands out reference-counted objects that must be released
// with a type-specific put/free call; these std::unique_ptr aliases make every such object owned by
// exactly one C++ value, so no code path (including exceptions) can leak or double-free one. They
// mirror the cleanup table libnl itself uses internally (socket → nl_socket_free, cache →
// nl_cache_put, route → rtnl_route_put, …). Only lib/netlink includes this header: libnl types
// never appear in the interfaces other modules use.
#pragma once

#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/route.h>
#include <netlink/route/rule.h>
#include <netlink/socket.h>

#include <memory>

namespace manifold::netlink {

/// A deleter calling the libnl release function `Free` on a non-null pointer.
template <auto Free>
struct NlDeleter {
  /// Releases the object.
  template <class T>
  void operator()(T* p) const noexcept {
    if (p != nullptr) Free(p);
  }
};

/// Owns a netlink socket (nl_socket_free).
using SocketHandle = std::unique_ptr<nl_sock, NlDeleter<&nl_socket_free>>;
/// Owns one reference to a cache of dumped objects (nl_cache_put).
using CacheHandle = std::unique_ptr<nl_cache, NlDeleter<&nl_cache_put>>;
/// Owns one reference to a link object (rtnl_link_put).
using LinkHandle = std::unique_ptr<rtnl_link, NlDeleter<&rtnl_link_put>>;
/// Owns one reference to an interface address object (rtnl_addr_put).
using IfAddrHandle = std::unique_ptr<rtnl_addr, NlDeleter<&rtnl_addr_put>>;
/// Owns one reference to a route object (rtnl_route_put).
using RouteHandle = std::unique_ptr<rtnl_route, NlDeleter<&rtnl_route_put>>;
/// Owns a next hop not yet attached to a route (rtnl_route_nh_free); release() it when a route
/// takes ownership through rtnl_route_add_nexthop.
using NexthopHandle = std::unique_ptr<rtnl_nexthop, NlDeleter<&rtnl_route_nh_free>>;
/// Owns one reference to a policy-routing rule object (rtnl_rule_put).
using RuleHandle = std::unique_ptr<rtnl_rule, NlDeleter<&rtnl_rule_put>>;
/// Owns one reference to an abstract address (nl_addr_put).
using NlAddrHandle = std::unique_ptr<nl_addr, NlDeleter<&nl_addr_put>>;
/// Owns one reference to any libnl object (nl_object_put).
using ObjectHandle = std::unique_ptr<nl_object, NlDeleter<&nl_object_put>>;
/// Owns one reference to a set of netlink callbacks (nl_cb_put).
using CallbacksHandle = std::unique_ptr<nl_cb, NlDeleter<&nl_cb_put>>;
/// Owns a netlink message (nlmsg_free).
using MsgHandle = std::unique_ptr<nl_msg, NlDeleter<&nlmsg_free>>;

}  // namespace manifold::netlink
