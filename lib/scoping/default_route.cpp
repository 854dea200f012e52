// The default-route selection: request validation, apply with undo, CHECK, and the pure rewrite of
// an attachment's CNI result.
#include "scoping/default_route.h"

#include <sys/socket.h>

#include <algorithm>
#include <map>
#include <optional>

#include "cni/error.h"
#include "netlink/family.h"
#include "netlink/link.h"
#include "util/ip.h"
#include "util/log.h"
#include "util/quote.h"
#include "util/ifname.h"

namespace manifold::scoping {

using namespace netlink;  // the layer these steps drive

namespace {

using cni::CniError;
using cni::ErrorCode;

// The family (AF_INET/AF_INET6) of a result route's default destination, or 0 when the route is
// not a default route.
int default_route_family(const cni::Route& route) {
  if (!util::is_default_route_dst(route.dst)) return 0;
  const std::optional<util::IpPrefix> dst = util::parse_cidr(route.dst);
  if (!dst) return 0;
  return family_of(dst->address);
}

LinkInfo require_link(NetOps& ops, const std::string& ifname) {
  const std::optional<LinkInfo> link = ops.find_link(ifname);
  if (!link)
    throw CniError(ErrorCode::Netlink, "default route: interface " + ifname + " does not exist in " + ops.netns_path());
  return *link;
}

}  // namespace

std::vector<DefaultRouteRequest> plan_default_routes(const DefaultRouteSelections& selections) {
  std::vector<DefaultRouteRequest> requests;
  std::map<int, std::string> chosen;  // family → ifname that asked for it
  for (const auto& [ifname, gateways] : selections) {
    if (gateways.empty()) continue;
    if (!util::is_valid_ifname(ifname))
      cni::throw_invalid_config("invalid default-route: interface name \"" + util::printable(ifname) +
                                "\" must be 1-15 characters of [A-Za-z0-9_.-]");
    std::map<int, bool> in_element;
    for (const std::string& text : gateways) {
      const std::optional<util::IpAddress> gw = util::parse_ip(text);
      if (!gw)
        cni::throw_invalid_config("invalid default-route of " + ifname + ": \"" + util::printable(text) +
                                  "\" is not an IP address");
      const int family = family_of(*gw);
      if (in_element[family])
        cni::throw_invalid_config("invalid default-route of " + ifname + ": more than one " + family_name(family) +
                                  " gateway (ECMP default routes are not supported)");
      in_element[family] = true;
      if (const auto it = chosen.find(family); it != chosen.end())
        cni::throw_invalid_config("invalid default-route: both " + it->second + " and " + ifname + " ask for the " +
                                  family_name(family) + " default route; only one network may");
      chosen[family] = ifname;
      requests.push_back(DefaultRouteRequest{ifname, family, *gw});
    }
  }
  return requests;
}

std::vector<DefaultRouteRequest> no_default_route_requests(const std::string& ifname, const std::vector<int>& families,
                                                           const std::vector<DefaultRouteRequest>& gateways) {
  std::vector<DefaultRouteRequest> out;
  for (int family : families) {
    bool decided = std::any_of(gateways.begin(), gateways.end(),
                               [family](const DefaultRouteRequest& r) { return r.family == family; });
    if (!decided) out.push_back(DefaultRouteRequest{ifname, family, std::nullopt});
  }
  return out;
}

RouteSpec wanted_default_route(const DefaultRouteRequest& request, int ifindex) {
  RouteSpec route;
  route.family = request.family;
  route.gw = request.gateway;
  route.ifindex = ifindex;
  return route_as_added(normalize_route(route));
}

std::vector<DefaultRouteChange> apply_default_routes(NetOps& ops, const std::vector<DefaultRouteRequest>& requests) {
  std::vector<DefaultRouteChange> changes;
  try {
    for (const DefaultRouteRequest& request : requests) {
      DefaultRouteChange change;
      change.request = request;
      std::optional<RouteSpec> wanted;
      if (!request.none()) {
        change.ifindex = require_link(ops, request.ifname).index;
        wanted = wanted_default_route(request, change.ifindex);
      }
      changes.push_back(change);
      DefaultRouteChange& current = changes.back();
      for (const RouteSpec& route : ops.list_routes(request.family, kMainTable)) {
        if (route.dst || route == wanted) continue;
        if (ops.delete_route(route) == DeleteOutcome::Deleted) current.removed.push_back(route);
      }
      if (wanted) current.added = ops.add_route(*wanted) == AddOutcome::Added;
      util::log_verbose("default route: ", family_name(request.family),
                        request.none() ? " none (asked by " + request.ifname + ")"
                                       : " default via " + request.gateway->str() + " on " + request.ifname,
                        " (", current.removed.size(), " other default route(s) removed)");
    }
  } catch (const CniError& e) {
    util::log_verbose("default route selection failed, undoing: ", e.msg());
    undo_default_routes(ops, changes);
    throw;
  }
  return changes;
}

void undo_default_routes(NetOps& ops, const std::vector<DefaultRouteChange>& changes) {
  for (auto it = changes.rbegin(); it != changes.rend(); ++it) {
    try {
      if (it->added) (void)ops.delete_route(wanted_default_route(it->request, it->ifindex));
      // Appended: the routes removed may share one identity (default routes of one metric on
      // several interfaces, an IPv6 multipath default), which an exclusive add would refuse.
      for (const RouteSpec& route : it->removed) (void)ops.add_route(route, RouteAddMode::Append);
    } catch (const CniError& e) {
      util::log_error("default route: undoing the ", family_name(it->request.family), " change on ", it->request.ifname,
                      " failed: ", e.msg());
    }
  }
}

std::vector<std::string> check_default_route(NetOps& ops, const DefaultRouteRequest& request) {
  std::vector<std::string> diffs;
  if (request.none()) {
    for (const RouteSpec& route : ops.list_routes(request.family, kMainTable))
      if (!route.dst)
        diffs.push_back("no " + family_name(request.family) + " default route (asked by " + request.ifname +
                        "): unexpected default route \"" + to_string(route) + "\" in main");
    return diffs;
  }
  const std::string what =
      family_name(request.family) + " default route via " + request.gateway->str() + " on " + request.ifname;
  const std::optional<LinkInfo> link = ops.find_link(request.ifname);
  if (!link) {
    diffs.push_back(what + ": the interface is missing");
    return diffs;
  }
  bool found = false;
  for (const RouteSpec& route : ops.list_routes(request.family, kMainTable)) {
    if (route.dst) continue;
    if (!found && route.ifindex == link->index && route.gw == request.gateway) {
      found = true;
      continue;
    }
    diffs.push_back(what + ": unexpected default route \"" + to_string(route) + "\" in main");
  }
  if (!found) diffs.push_back(what + ": missing from the main table");
  return diffs;
}

void rewrite_default_routes(cni::Result& result, const std::string& ifname,
                            const std::vector<DefaultRouteRequest>& requests) {
  for (const DefaultRouteRequest& request : requests) {
    std::erase_if(result.routes,
                  [&](const cni::Route& route) { return default_route_family(route) == request.family; });
    if (request.none() || request.ifname != ifname) continue;
    cni::Route route;
    route.dst = request.family == AF_INET ? "0.0.0.0/0" : "::/0";
    route.gw = request.gateway->str();
    result.routes.push_back(route);
  }
}

}  // namespace manifold::scoping
