// Routes as plain values, their validation and canonical form, the kernel's matching rules restated
// as pure functions (so the fake behaves like the kernel), and the libnl operations: list a table,
// add with NLM_F_EXCL ("exists" is an outcome, not an error), delete tolerating "not found", and
// collect every table ID in use. Network scoping builds its per-interface tables from these; the
// default-route feature deletes and adds main-table default routes with them.
//
// A RouteSpec describes one single-path unicast route. Listing reports only such routes: multipath,
// source-specific (IPv6 "from"), TOS-keyed and non-unicast routes (local, broadcast, blackhole …)
// are left out because a RouteSpec cannot describe them faithfully; route_tables_in_use() still
// sees them.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "netlink/error.h"
#include "util/ip.h"
#include "util/json.h"

namespace manifold::netlink {

class NlSocket;

// ---- constants (values from <linux/rtnetlink.h>, restated so users need no kernel headers) ----
/// The main routing table (RT_TABLE_MAIN).
inline constexpr int kMainTable = 254;
/// The local table (RT_TABLE_LOCAL), kernel-managed.
inline constexpr int kLocalTable = 255;
/// The "default" table (RT_TABLE_DEFAULT), consulted after main.
inline constexpr int kDefaultTable = 253;
/// list_routes(): every table.
inline constexpr int kAllTables = 0;
/// RouteSpec::scope "automatic": on add derived as `ip route` does (link without a gateway,
/// universe with one); on delete any scope matches.
inline constexpr int kScopeAuto = -1;
/// RT_SCOPE_UNIVERSE: a route via a gateway. IPv6 routes always report this scope.
inline constexpr int kScopeUniverse = 0;
/// RT_SCOPE_LINK: a directly connected destination.
inline constexpr int kScopeLink = 253;
/// RT_SCOPE_HOST: a local address.
inline constexpr int kScopeHost = 254;
/// RouteSpec::protocol unspecified: on add "boot" (as `ip route add`), on delete any protocol.
inline constexpr int kProtoUnspec = 0;
/// RTPROT_KERNEL: routes the kernel adds for interface addresses.
inline constexpr int kProtoKernel = 2;
/// RTPROT_BOOT: the default for routes added by tools.
inline constexpr int kProtoBoot = 3;
/// RTPROT_STATIC.
inline constexpr int kProtoStatic = 4;
/// Metric the kernel gives an IPv6 route added with metric 0 (IP6_RT_PRIO_USER).
inline constexpr int kIpv6DefaultMetric = 1024;

/// How an add treats routes of the same identity (family, table, destination, metric).
enum class RouteAddMode {
  Exclusive,  ///< NLM_F_EXCL: Exists when any route of the same identity is there
  Append,     ///< NLM_F_APPEND: added beside routes of the same identity through other next hops
              ///< (IPv6: as a multipath sibling); Exists only when this very route is there
};

/// One single-path unicast route.
struct RouteSpec {
  int family = 0;                          ///< AF_INET / AF_INET6; 0 = derive from dst, gw or prefsrc
  std::optional<util::IpPrefix> dst;       ///< destination network 10.1.0.0/16; nullopt = default
  std::optional<util::IpAddress> gw;       ///< gateway address; nullopt = none (directly connected)
  int ifindex = 0;                         ///< output interface; 0 = none (resolved from gw by the kernel)
  int table = kMainTable;                  ///< routing table ID, 1..2^31-1
  int scope = kScopeAuto;                  ///< RT_SCOPE_* or kScopeAuto
  int protocol = kProtoUnspec;             ///< RTPROT_* or kProtoUnspec
  std::optional<util::IpAddress> prefsrc;  ///< preferred source address; nullopt = none
  int priority = 0;                        ///< metric; 0 = kernel default on add (IPv6 1024), any on delete

  /// Field-wise equality.
  friend bool operator==(const RouteSpec&, const RouteSpec&) = default;
};

/// `ip route`-like text: "default via 10.0.0.1 dev #3 table 1000 proto boot scope link src … metric
/// 5".
std::string to_string(const RouteSpec& route);

/// Validates `route` and returns its canonical form: family derived or checked against every
/// address, dst free of host bits (a /0 destination becomes nullopt, the default route), numeric
/// fields in range. Throws CniError(InvalidConfig) naming the offending field.
RouteSpec normalize_route(const RouteSpec& route);

/// The route the kernel reports after adding the normalized `route`: automatic scope resolved
/// (IPv6: always universe), unspecified protocol → boot, IPv6 metric 0 → 1024.
RouteSpec route_as_added(const RouteSpec& route);

/// True when deleting the normalized `pattern` would remove the listed route `candidate`:
/// family, table and dst must be equal; gw, ifindex, prefsrc, protocol, priority and scope only
/// when the pattern sets them (scope is ignored for IPv6, as the kernel does).
bool route_matches(const RouteSpec& pattern, const RouteSpec& candidate);

/// True when two routes as added share the kernel's identity (family, table, dst, metric), so the
/// second add with NLM_F_EXCL reports "exists".
bool same_route_identity(const RouteSpec& a, const RouteSpec& b);

/// Canonical JSON:
/// {"family":4|6,"dst","gw","ifindex","table","scope","protocol","prefsrc","priority"}.
Json to_json(const RouteSpec& route);

/// Parses to_json() output strictly (types, ranges, unknown family); throws CniError(Decoding).
RouteSpec route_from_json(const Json& json);

/// Lists the unicast routes, one RouteSpec per next hop of an IPv6 multipath route, of `table` (kAllTables: every table) for `family`
/// (AF_INET, AF_INET6, or AF_UNSPEC for both), in kernel order. Throws CniError(Netlink).
std::vector<RouteSpec> list_routes(NlSocket& sock, int family, int table);

/// Adds a route (see RouteAddMode). Needs a gateway or an interface. Throws
/// CniError(InvalidConfig/Netlink).
[[nodiscard]] AddOutcome add_route(NlSocket& sock, const RouteSpec& route, RouteAddMode mode);

/// Deletes the first route matching `route` (see route_matches). NotFound when there is none or
/// its interface is gone. Throws CniError(InvalidConfig/Netlink).
[[nodiscard]] DeleteOutcome delete_route(NlSocket& sock, const RouteSpec& route);

/// Every table ID holding at least one route of any type, IPv4 or IPv6.
std::set<int> route_tables_in_use(NlSocket& sock);

}  // namespace manifold::netlink
