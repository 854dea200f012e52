// Implementation of RouteSpec validation/formatting/JSON, the kernel matching rules, and the libnl
// route operations (RTM_GETROUTE dump, RTM_NEWROUTE with NLM_F_EXCL or NLM_F_APPEND, RTM_DELROUTE).
#include "netlink/route.h"

#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <climits>
#include <iterator>

#include "cni/error.h"
#include "netlink/convert.h"
#include "netlink/family.h"
#include "netlink/nl_socket.h"
#include "util/log.h"

namespace manifold::netlink {
namespace {

using cni::CniError;
using cni::ErrorCode;

[[noreturn]] void invalid(const RouteSpec& route, const std::string& why) {
  throw CniError(ErrorCode::InvalidConfig, "invalid route (" + to_string(route) + "): " + why);
}

// Checks that an address field holds an address of `family` (or derives it when family is 0).
void check_address_family(const RouteSpec& route, const std::optional<util::IpAddress>& ip, const char* field,
                          int& family) {
  if (!ip) return;
  if (family == 0) family = family_of(*ip);
  if (family_of(*ip) != family) {
    invalid(route, std::string(field) + " " + ip->str() + " is not an " + family_name(family) + " address");
  }
}

std::string proto_name(int protocol) {
  switch (protocol) {
    case kProtoUnspec:
      return "unspec";
    case 1:
      return "redirect";
    case kProtoKernel:
      return "kernel";
    case kProtoBoot:
      return "boot";
    case kProtoStatic:
      return "static";
    case 16:
      return "dhcp";
    default:
      return std::to_string(protocol);
  }
}

std::string scope_name(int scope) {
  switch (scope) {
    case kScopeUniverse:
      return "global";
    case kScopeLink:
      return "link";
    case kScopeHost:
      return "host";
    case 200:
      return "site";
    default:
      return std::to_string(scope);
  }
}

// Converts one dumped route into one RouteSpec per next hop; empty when RouteSpecs cannot describe
// it faithfully. An IPv6 multipath route is its next hops: the kernel keeps them as sibling routes
// (each added, deleted and matched on its own), and only dumps them as one message. An IPv4
// multipath route is one route with several next hops, which no RouteSpec describes.
std::vector<RouteSpec> from_nl_route(rtnl_route* route) {
  const int family = rtnl_route_get_family(route);
  const int nexthops = rtnl_route_get_nnexthops(route);
  if (!is_ip_family(family) || rtnl_route_get_type(route) != RTN_UNICAST) return {};
  if (rtnl_route_get_tos(route) != 0 || nexthops < 1 || (nexthops > 1 && family != AF_INET6)) return {};
  if (nl_addr* src = rtnl_route_get_src(route); src != nullptr && nl_addr_get_prefixlen(src) != 0) {
    return {};  // IPv6 source-specific route
  }
  RouteSpec common;
  common.family = family;
  const std::optional<util::IpPrefix> dst = detail::from_nl_addr(rtnl_route_get_dst(route));
  if (!dst) return {};
  if (dst->prefix_len != 0) common.dst = dst->masked();
  if (rtnl_route_get_table(route) > static_cast<uint32_t>(INT_MAX) ||
      rtnl_route_get_priority(route) > static_cast<uint32_t>(INT_MAX)) {
    return {};
  }
  common.table = static_cast<int>(rtnl_route_get_table(route));
  common.scope = rtnl_route_get_scope(route);
  common.protocol = rtnl_route_get_protocol(route);
  if (nl_addr* src = rtnl_route_get_pref_src(route); src != nullptr && nl_addr_get_len(src) != 0) {
    const std::optional<util::IpPrefix> ip = detail::from_nl_addr(src);
    if (!ip || family_of(ip->address) != family) return {};
    common.prefsrc = ip->address;
  }
  common.priority = static_cast<int>(rtnl_route_get_priority(route));
  std::vector<RouteSpec> out;
  for (int i = 0; i < nexthops; ++i) {
    rtnl_nexthop* nh = rtnl_route_nexthop_n(route, i);
    if (nh == nullptr) return {};
    RouteSpec spec = common;
    if (nl_addr* gw = rtnl_route_nh_get_gateway(nh); gw != nullptr && nl_addr_get_len(gw) != 0) {
      const std::optional<util::IpPrefix> ip = detail::from_nl_addr(gw);
      if (!ip || family_of(ip->address) != family) return {};
      spec.gw = ip->address;
    }
    spec.ifindex = rtnl_route_nh_get_ifindex(nh);
    out.push_back(std::move(spec));
  }
  return out;
}

// Builds the libnl route object for an add (`for_delete` false) or a delete pattern.
RouteHandle build_nl_route(const RouteSpec& r, bool for_delete) {
  RouteHandle route(rtnl_route_alloc());
  if (!route) throw CniError(ErrorCode::Internal, "netlink: out of memory building a route");
  rtnl_route_set_family(route.get(), static_cast<uint8_t>(r.family));
  rtnl_route_set_table(route.get(), static_cast<uint32_t>(r.table));
  rtnl_route_set_type(route.get(), RTN_UNICAST);

  NlAddrHandle dst = r.dst ? detail::to_nl_addr(*r.dst) : detail::default_nl_addr(r.family);
  int err = rtnl_route_set_dst(route.get(), dst.get());
  if (err < 0) throw CniError(ErrorCode::Internal, "netlink: cannot set route destination: " + nl_error_text(err));

  if (r.scope != kScopeAuto) {
    rtnl_route_set_scope(route.get(), static_cast<uint8_t>(r.scope));
  } else if (for_delete) {
    rtnl_route_set_scope(route.get(), RT_SCOPE_NOWHERE);  // the kernel's "any scope"
  }  // else: libnl derives it from the next hop, as `ip route add` does
  const int protocol = (!for_delete && r.protocol == kProtoUnspec) ? kProtoBoot : r.protocol;
  rtnl_route_set_protocol(route.get(), static_cast<uint8_t>(protocol));
  if (r.priority != 0) rtnl_route_set_priority(route.get(), static_cast<uint32_t>(r.priority));
  if (r.prefsrc) {
    NlAddrHandle src = detail::to_nl_addr(*r.prefsrc);
    err = rtnl_route_set_pref_src(route.get(), src.get());
    if (err < 0) throw CniError(ErrorCode::Internal, "netlink: cannot set route source: " + nl_error_text(err));
  }
  if (r.gw || r.ifindex != 0) {
    NexthopHandle nh(rtnl_route_nh_alloc());
    if (!nh) throw CniError(ErrorCode::Internal, "netlink: out of memory building a next hop");
    if (r.ifindex != 0) rtnl_route_nh_set_ifindex(nh.get(), r.ifindex);
    if (r.gw) {
      NlAddrHandle gw = detail::to_nl_addr(*r.gw);
      rtnl_route_nh_set_gateway(nh.get(), gw.get());  // takes its own reference
    }
    rtnl_route_add_nexthop(route.get(), nh.release());  // the route owns the next hop now
  }
  return route;
}

}  // namespace

std::string to_string(const RouteSpec& route) {
  std::string out = route.dst ? route.dst->str() : "default";
  if (route.gw) out += " via " + route.gw->str();
  if (route.ifindex != 0) out += " dev #" + std::to_string(route.ifindex);
  if (route.table != kMainTable) out += " table " + std::to_string(route.table);
  if (route.protocol != kProtoUnspec) out += " proto " + proto_name(route.protocol);
  if (route.scope != kScopeAuto && route.scope != kScopeUniverse) out += " scope " + scope_name(route.scope);
  if (route.prefsrc) out += " src " + route.prefsrc->str();
  if (route.priority != 0) out += " metric " + std::to_string(route.priority);
  return out;
}

RouteSpec normalize_route(const RouteSpec& route) {
  RouteSpec out = route;
  if (out.family != 0 && !is_ip_family(out.family)) invalid(route, "unsupported address " + family_name(out.family));
  int family = out.family;
  if (const std::optional<util::IpPrefix>& dst = route.dst) {
    if (family == 0) family = family_of(dst->address);
    if (family_of(dst->address) != family) invalid(route, "destination is not an " + family_name(family) + " prefix");
    if (!dst->is_masked()) invalid(route, "destination has host bits set (did you mean " + dst->network_str() + "?)");
    if (dst->prefix_len == 0) out.dst.reset();
  }
  check_address_family(route, route.gw, "gateway", family);
  check_address_family(route, route.prefsrc, "prefsrc", family);
  if (family == 0) invalid(route, "the address family is unknown (no destination, gateway or source)");
  out.family = family;
  if (out.ifindex < 0) invalid(route, "negative ifindex");
  if (out.table < 1) invalid(route, "table must be 1..2147483647");
  if (out.scope != kScopeAuto && (out.scope < 0 || out.scope > 254)) invalid(route, "scope must be 0..254");
  if (out.protocol < 0 || out.protocol > 255) invalid(route, "protocol must be 0..255");
  if (out.priority < 0) invalid(route, "negative metric");
  return out;
}

RouteSpec route_as_added(const RouteSpec& route) {
  RouteSpec out = route;
  if (out.family == AF_INET6) {
    out.scope = kScopeUniverse;
    if (out.priority == 0) out.priority = kIpv6DefaultMetric;
  } else if (out.scope == kScopeAuto) {
    out.scope = out.gw ? kScopeUniverse : kScopeLink;
  }
  if (out.protocol == kProtoUnspec) out.protocol = kProtoBoot;
  return out;
}

bool route_matches(const RouteSpec& pattern, const RouteSpec& candidate) {
  if (pattern.family != candidate.family || pattern.table != candidate.table || pattern.dst != candidate.dst) {
    return false;
  }
  if (pattern.gw && pattern.gw != candidate.gw) return false;
  if (pattern.ifindex != 0 && pattern.ifindex != candidate.ifindex) return false;
  if (pattern.prefsrc && pattern.prefsrc != candidate.prefsrc) return false;
  if (pattern.protocol != kProtoUnspec && pattern.protocol != candidate.protocol) return false;
  if (pattern.priority != 0 && pattern.priority != candidate.priority) return false;
  if (pattern.family == AF_INET && pattern.scope != kScopeAuto && pattern.scope != candidate.scope) return false;
  return true;
}

bool same_route_identity(const RouteSpec& a, const RouteSpec& b) {
  return a.family == b.family && a.table == b.table && a.dst == b.dst && a.priority == b.priority;
}

Json to_json(const RouteSpec& route) {
  Json j = Json::object();
  j["family"] = detail::family_to_json(route.family);
  j["dst"] = route.dst ? route.dst->str() : std::string();
  j["gw"] = route.gw ? route.gw->str() : std::string();
  j["ifindex"] = route.ifindex;
  j["table"] = route.table;
  j["scope"] = route.scope;
  j["protocol"] = route.protocol;
  j["prefsrc"] = route.prefsrc ? route.prefsrc->str() : std::string();
  j["priority"] = route.priority;
  return j;
}

RouteSpec route_from_json(const Json& json) {
  constexpr std::string_view what = "route";
  if (!json.is_object()) throw CniError(ErrorCode::Decoding, "route: expected a JSON object");
  RouteSpec r;
  r.family = detail::json_family(json, what);
  r.dst = detail::json_prefix(json, what, "dst");
  r.gw = detail::json_address(json, what, "gw");
  r.ifindex = detail::json_int(json, what, "ifindex", 0, INT_MAX, 0);
  r.table = detail::json_int(json, what, "table", 1, INT_MAX, kMainTable);
  r.scope = detail::json_int(json, what, "scope", kScopeAuto, 254, kScopeAuto);
  r.protocol = detail::json_int(json, what, "protocol", 0, 255, kProtoUnspec);
  r.prefsrc = detail::json_address(json, what, "prefsrc");
  r.priority = detail::json_int(json, what, "priority", 0, INT_MAX, 0);
  try {
    return normalize_route(r);
  } catch (const CniError& e) {
    throw CniError(ErrorCode::Decoding, e.msg(), e.details());
  }
}

std::vector<RouteSpec> list_routes(NlSocket& sock, int family, int table) {
  if (family != AF_UNSPEC && !is_ip_family(family)) {
    throw CniError(ErrorCode::InvalidConfig, "list routes: unsupported address " + family_name(family));
  }
  if (table < 0) throw CniError(ErrorCode::InvalidConfig, "list routes: invalid table " + std::to_string(table));
  std::vector<RouteSpec> out;
  for (int fam : {AF_INET, AF_INET6}) {
    if (family != AF_UNSPEC && family != fam) continue;
    // Not a cache: libnl names a route by family, tos, table, destination and metric only, so a
    // cache keeps one of several default routes of one metric on different interfaces.
    for (const ObjectHandle& obj : sock.dump_all(DumpKind::Routes, fam)) {
      auto* route = reinterpret_cast<rtnl_route*>(obj.get());
      if (table != kAllTables && rtnl_route_get_table(route) != static_cast<uint32_t>(table)) continue;
      std::vector<RouteSpec> specs = from_nl_route(route);
      if (specs.empty()) {
        util::log_debug("netlink: route in table ", rtnl_route_get_table(route),
                        " is not a unicast route of plain next hops; not listed");
        continue;
      }
      std::move(specs.begin(), specs.end(), std::back_inserter(out));
    }
  }
  return out;
}

AddOutcome add_route(NlSocket& sock, const RouteSpec& route, RouteAddMode mode) {
  const RouteSpec r = normalize_route(route);
  if (!r.gw && r.ifindex == 0) invalid(r, "a route needs a gateway or an interface");
  RouteHandle nl_route = build_nl_route(r, false);
  const int flags = mode == RouteAddMode::Exclusive ? NLM_F_EXCL : NLM_F_APPEND;
  const int err = sock.request([&](nl_sock* s) { return rtnl_route_add(s, nl_route.get(), flags); });
  if (err >= 0) return AddOutcome::Added;
  if (is_exists_error(err)) return AddOutcome::Exists;
  sock.fail("add route", to_string(r), err);
}

DeleteOutcome delete_route(NlSocket& sock, const RouteSpec& route) {
  const RouteSpec r = normalize_route(route);
  RouteHandle nl_route = build_nl_route(r, true);
  const int err = sock.request([&](nl_sock* s) { return rtnl_route_delete(s, nl_route.get(), 0); });
  if (err >= 0) return DeleteOutcome::Deleted;
  if (is_not_found_error(err)) return DeleteOutcome::NotFound;
  sock.fail("delete route", to_string(r), err);
}

std::set<int> route_tables_in_use(NlSocket& sock) {
  std::set<int> out;
  for (int fam : {AF_INET, AF_INET6}) {
    CacheHandle cache = sock.dump(DumpKind::Routes, fam);
    for (nl_object* obj = nl_cache_get_first(cache.get()); obj != nullptr; obj = nl_cache_get_next(obj)) {
      out.insert(static_cast<int>(rtnl_route_get_table(reinterpret_cast<rtnl_route*>(obj))));
    }
  }
  return out;
}

}  // namespace manifold::netlink
