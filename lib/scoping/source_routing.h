// Per-interface source routing for one attachment: for every IP of the attachment a routing table
// holding a COPY of the interface's main-table routes (plus "default via <gw>" when a gateway is
// known) and a rule "from <ip>/32|/128 lookup <table> priority <rulePriority>", so replies and
// source-bound traffic leave through the interface they belong to while the main table stays intact
// and unbound sockets keep routing by destination. Its configuration (`sourceRouting`, three
// layers) is read by scoping/source_routing_config.h.
//
// The work is split into a plan (read the namespace, decide tables and routes; reusing the table a
// rule of ours already points at, so a re-ADD changes nothing), an apply (adds what the plan says,
// undoing its own additions if a later step fails) and a state (what DEL and CHECK need, cached as
// JSON). Remove is idempotent, tolerates a vanished link, and can work without a state from the
// attachment's IPs (rules at our priority whose source is one of them). The main table is never
// changed by any of these functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "netlink/net_ops.h"
#include "scoping/source_routing_config.h"
#include "util/ip.h"
#include "util/json.h"

namespace manifold::scoping {

/// One IP of the attachment, as its delegate's result reports it.
struct AttachmentAddress {
  std::string cidr;     ///< address with prefix length, "192.168.10.5/24"
  std::string gateway;  ///< the result's gateway for it, "" = none
};

/// The table of one IP: the routes it must hold and the rule that selects it.
struct SourceTablePlan {
  util::IpAddress ip;                      ///< the address
  int table = 0;                           ///< the table ID
  bool reused = false;                     ///< a rule of ours already pointed at this table (re-ADD)
  std::vector<netlink::RouteSpec> routes;  ///< what the table must hold, in the kernel's as-added form
  std::vector<netlink::RouteSpec> stale;   ///< routes found in a reused picked table that are not wanted
  netlink::RuleSpec rule;                  ///< "from ip/32 lookup table priority P"
};

/// Everything apply_source_routing() will do for one attachment.
struct SourceRoutingPlan {
  std::string ifname;                   ///< the attachment's interface
  int ifindex = 0;                      ///< its index in the pod namespace
  int priority = 30000;                 ///< the rule priority
  bool picked_tables = true;            ///< tables were picked (exclusively ours), not configured
  std::vector<SourceTablePlan> tables;  ///< one per IP, in the order of the IPs
};

/// Human-readable lines of a plan, one per action, for logs and golden tests:
/// "table 1000 for 192.168.10.5", "route <to_string(route)>", "delete stale route <…>",
/// "rule <to_string(rule)>".
std::vector<std::string> describe(const SourceRoutingPlan& plan);

/// Plans source routing for `ifname` and its IPs (IPv6 link-local IPs are skipped). Reads the
/// interface, its main-table routes, our existing rules and the tables in use. Per IP: the routes
/// of the IP's family on the interface whose preferred source and gateway (if any) belong to the
/// IP's subnet (an IPv6 link-local gateway always does) are copied; when a gateway is known (config
/// `gateways` first, then the IP's gateway) "default via gw" replaces any copied default route.
/// Throws CniError(Netlink) when the interface does not exist, CniError(InvalidConfig) for a bad
/// address.
SourceRoutingPlan plan_source_routing(netlink::NetOps& ops, const SourceRoutingConfig& cfg, const std::string& ifname,
                                      const std::vector<AttachmentAddress>& addresses);

/// What source routing installed for one attachment, as cached for DEL and CHECK.
struct SourceRoutingState {
  std::string ifname;                      ///< the attachment's interface
  int priority = 30000;                    ///< our rule priority
  bool picked_tables = true;               ///< the tables were picked and are exclusively ours
  std::vector<std::string> ips;            ///< the bare IPs given rules, in order
  std::vector<int> tables;                 ///< the distinct tables used, in order
  std::vector<netlink::RuleSpec> rules;    ///< our rules, as listed by the kernel
  std::vector<netlink::RouteSpec> routes;  ///< our table routes, as listed by the kernel

  /// {"ifname","priority","pickedTables","ips","tables","rules":[…],"routes":[…]}
  Json to_json() const;
  /// Reads to_json()'s form strictly (the cache is untrusted input): types, ranges, bounded
  /// sizes, rules at `priority` only, routes only in `tables`. Throws CniError(Decoding).
  static SourceRoutingState from_json(const Json& j);

  /// Field-wise equality.
  friend bool operator==(const SourceRoutingState&, const SourceRoutingState&) = default;
};

/// Applies `plan`: deletes stale routes of reused tables, then per table adds its routes and then
/// its rule ("exists" is fine: a re-ADD). If a step fails, everything this call added is deleted
/// again (in reverse) before the error propagates. Returns the state to cache.
SourceRoutingState apply_source_routing(netlink::NetOps& ops, const SourceRoutingPlan& plan);

/// DEL with a state: deletes our rules and our table routes (and, for picked tables, whatever else
/// is left in them). NotFound is success, so it is idempotent and works when the link is gone.
void remove_source_routing(netlink::NetOps& ops, const SourceRoutingState& state);

/// DEL without a state: deletes every rule at `priority` whose source is one of `ips` (bare or
/// CIDR, host prefix taken), and the routes through `ifname` in the tables those rules pointed at.
/// Idempotent; a no-op when nothing matches.
void remove_source_routing_by_ips(netlink::NetOps& ops, const std::string& ifname, int priority,
                                  const std::vector<std::string>& ips);

/// CHECK: every difference between the namespace and `state`: a rule missing, a recorded route
/// missing or changed, and (for picked tables) a route in our table that we did not put there.
/// Empty when everything matches.
std::vector<std::string> check_source_routing(netlink::NetOps& ops, const SourceRoutingState& state);

}  // namespace manifold::scoping
