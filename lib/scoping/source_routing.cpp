// Source routing: the per-IP plan (table choice, copied routes, gateway default, rule), apply with
// self-rollback, idempotent remove (with or without a cached state) and CHECK. The state codec is
// in source_routing_state.cpp, the configuration in source_routing_config.cpp.
#include "scoping/source_routing.h"

#include <sys/socket.h>

#include <algorithm>
#include <climits>
#include <set>
#include <string_view>

#include "cni/error.h"
#include "netlink/family.h"
#include "util/log.h"
#include "util/quote.h"

namespace manifold::scoping {

using namespace netlink;  // the layer these steps drive

namespace {

using cni::CniError;
using cni::ErrorCode;

bool contains_route(const std::vector<RouteSpec>& routes, const RouteSpec& route) {
  return std::find(routes.begin(), routes.end(), route) != routes.end();
}

template <class T>
bool contains(const std::vector<T>& values, const T& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// Deletes a route or rule, logging instead of throwing: used while undoing and on DEL of leftovers.
template <class Spec>
void delete_quietly(NetOps& ops, const Spec& spec, std::string_view why) {
  try {
    DeleteOutcome outcome;
    if constexpr (std::is_same_v<Spec, RouteSpec>) {
      outcome = ops.delete_route(spec);
    } else {
      outcome = ops.delete_rule(spec);
    }
    (void)outcome;
  } catch (const CniError& e) {
    util::log_error("source routing: ", why, " of ", to_string(spec), " failed: ", e.msg());
  }
}

std::string address_of(const RuleSpec& rule) { return rule.src ? rule.src->address.str() : std::string(); }

// What plan_source_routing() reads from the namespace once, shared by the per-IP steps.
struct PlanInputs {
  const SourceRoutingConfig& cfg;
  int ifindex = 0;                     // the attachment's interface
  std::vector<RuleSpec> rules;         // every rule, to find ours
  std::vector<RouteSpec> main_routes;  // the main-table routes through the interface
  std::set<int> planned_tables;        // tables given to earlier IPs of this plan
};

// The gateway of the table of `ip`: the configured one of its family first, then the result's.
std::optional<util::IpAddress> table_gateway(const SourceRoutingConfig& cfg, const util::IpPrefix& ip,
                                             const AttachmentAddress& address) {
  if (const std::optional<util::IpAddress>& configured = cfg.gateway(ip.address.family)) return configured;
  if (address.gateway.empty()) return std::nullopt;
  const std::optional<util::IpAddress> gw = util::parse_ip(address.gateway);
  if (!gw || gw->family != ip.address.family)
    throw CniError(ErrorCode::InvalidConfig, "source routing: gateway \"" + util::printable(address.gateway) +
                                                 "\" of " + address.cidr + " is not an " + ip.address.family_name() +
                                                 " address");
  return gw;
}

// The table of the IP whose host prefix is `host`. A rule of ours for it already exists (re-ADD):
// keep its table when tables are picked; with a configured table, a rule pointing elsewhere is
// replaced. Otherwise the first free table no earlier IP of the plan took.
int choose_table(NetOps& ops, const PlanInputs& in, const util::IpPrefix& host, bool& reused) {
  const SourceRoutingConfig& cfg = in.cfg;
  if (cfg.table != 0) return cfg.table;
  std::optional<RuleSpec> existing;
  for (const RuleSpec& r : in.rules)
    if (r.priority == cfg.rule_priority && r.family == family_of(host.address) && r.src == host) existing = r;
  if (existing && in.planned_tables.count(existing->table) == 0) {
    reused = true;
    return existing->table;
  }
  int table = ops.find_free_table(cfg.table_base);
  while (in.planned_tables.count(table) != 0) {
    if (table == INT_MAX)
      throw CniError(ErrorCode::Netlink,
                     "source routing: no free routing table at or above " + std::to_string(cfg.table_base));
    table = ops.find_free_table(table + 1);
  }
  return table;
}

// The routes of `table` for `ip`: the interface's main-table routes of its family whose preferred
// source and gateway (if any) lie in its subnet (an IPv6 link-local gateway always does), and
// "default via gateway" in place of a copied default route when a gateway is known.
std::vector<RouteSpec> table_routes(const PlanInputs& in, const util::IpPrefix& ip,
                                    const std::optional<util::IpAddress>& gateway, int table) {
  const util::IpPrefix subnet = ip.masked();
  std::vector<RouteSpec> routes;
  for (const RouteSpec& r : in.main_routes) {
    if (r.family != family_of(ip.address)) continue;
    if (r.prefsrc && !subnet.contains(*r.prefsrc)) continue;
    if (r.gw && !(r.gw->is_ipv6_link_local() || subnet.contains(*r.gw))) continue;
    if (gateway && !r.dst) continue;  // replaced by "default via gateway"
    RouteSpec copy = r;
    copy.table = table;
    copy = route_as_added(normalize_route(copy));
    if (!contains_route(routes, copy)) routes.push_back(copy);
  }
  if (gateway) {
    RouteSpec def;
    def.family = family_of(ip.address);
    def.gw = gateway;
    def.ifindex = in.ifindex;
    def.table = table;
    routes.push_back(route_as_added(normalize_route(def)));
  }
  return routes;
}

// The plan of one IP: its table, the routes it must hold (and, when reused, what must go), the rule.
SourceTablePlan plan_table(NetOps& ops, PlanInputs& in, const util::IpPrefix& ip,
                           const std::optional<util::IpAddress>& gateway) {
  SourceTablePlan t;
  t.ip = ip.address;
  const util::IpPrefix host = util::IpPrefix::host(ip.address);
  t.table = choose_table(ops, in, host, t.reused);
  t.routes = table_routes(in, ip, gateway, t.table);
  t.rule.family = family_of(ip.address);
  t.rule.src = host;
  t.rule.table = t.table;
  t.rule.priority = in.cfg.rule_priority;
  t.rule = normalize_rule(t.rule);
  if (t.reused) {
    for (const RouteSpec& r : ops.list_routes(AF_UNSPEC, t.table))
      if (!contains_route(t.routes, r)) t.stale.push_back(r);
  }
  in.planned_tables.insert(t.table);
  return t;
}

}  // namespace

// ---- plan ----

std::vector<std::string> describe(const SourceRoutingPlan& plan) {
  std::vector<std::string> lines;
  for (const SourceTablePlan& t : plan.tables) {
    lines.push_back("table " + std::to_string(t.table) + " for " + t.ip.str() + (t.reused ? " (reused)" : ""));
    for (const RouteSpec& r : t.stale) lines.push_back("delete stale route " + to_string(r));
    for (const RouteSpec& r : t.routes) lines.push_back("route " + to_string(r));
    lines.push_back("rule " + to_string(t.rule));
  }
  return lines;
}

SourceRoutingPlan plan_source_routing(NetOps& ops, const SourceRoutingConfig& cfg, const std::string& ifname,
                                      const std::vector<AttachmentAddress>& addresses) {
  const std::optional<LinkInfo> link = ops.find_link(ifname);
  if (!link)
    throw CniError(ErrorCode::Netlink,
                   "source routing: interface " + ifname + " does not exist in " + ops.netns_path());
  SourceRoutingPlan plan;
  plan.ifname = ifname;
  plan.ifindex = link->index;
  plan.priority = cfg.rule_priority;
  plan.picked_tables = cfg.table == 0;

  PlanInputs in{cfg, link->index, ops.list_rules(AF_UNSPEC), {}, {}};
  for (const RouteSpec& r : ops.list_routes(AF_UNSPEC, kMainTable))
    if (r.ifindex == link->index) in.main_routes.push_back(r);

  std::vector<util::IpAddress> seen_ips;
  for (const AttachmentAddress& address : addresses) {
    const std::optional<util::IpPrefix> ip = util::parse_ip_or_cidr(address.cidr);
    if (!ip)
      throw CniError(ErrorCode::InvalidConfig, "source routing: address \"" + util::printable(address.cidr) + "\" of " +
                                                   ifname + " is not an IP address");
    if (ip->address.is_ipv6_link_local() || contains(seen_ips, ip->address)) continue;
    seen_ips.push_back(ip->address);
    const std::optional<util::IpAddress> gateway = table_gateway(cfg, *ip, address);
    plan.tables.push_back(plan_table(ops, in, *ip, gateway));
  }
  return plan;
}

// ---- apply / remove / check ----

SourceRoutingState apply_source_routing(NetOps& ops, const SourceRoutingPlan& plan) {
  SourceRoutingState state;
  state.ifname = plan.ifname;
  state.priority = plan.priority;
  state.picked_tables = plan.picked_tables;

  std::vector<RouteSpec> added_routes;
  std::vector<RuleSpec> added_rules;
  try {
    for (const SourceTablePlan& t : plan.tables) {
      for (const RouteSpec& r : t.stale) (void)ops.delete_route(r);
      // A rule of ours for this IP that points at another table (the configured table changed).
      for (const RuleSpec& r : ops.list_rules(t.rule.family)) {
        if (r.priority == t.rule.priority && r.src == t.rule.src && r.table != t.rule.table) (void)ops.delete_rule(r);
      }
      for (const RouteSpec& r : t.routes) {
        if (ops.add_route(r) == AddOutcome::Added) added_routes.push_back(r);
        if (!contains_route(state.routes, r)) state.routes.push_back(r);
      }
      if (ops.add_rule(t.rule) == AddOutcome::Added) added_rules.push_back(t.rule);
      state.rules.push_back(t.rule);
      state.ips.push_back(t.ip.str());
      if (std::find(state.tables.begin(), state.tables.end(), t.table) == state.tables.end())
        state.tables.push_back(t.table);
    }
  } catch (const CniError& e) {
    util::log_verbose("source routing for ", plan.ifname, " failed, undoing: ", e.msg());
    for (auto it = added_rules.rbegin(); it != added_rules.rend(); ++it) delete_quietly(ops, *it, "undo");
    for (auto it = added_routes.rbegin(); it != added_routes.rend(); ++it) delete_quietly(ops, *it, "undo");
    throw;
  }
  util::log_verbose("source routing for ", plan.ifname, ": ", state.rules.size(), " rule(s), ", state.routes.size(),
                    " table route(s)");
  return state;
}

void remove_source_routing(NetOps& ops, const SourceRoutingState& state) {
  for (const RuleSpec& rule : state.rules) (void)ops.delete_rule(rule);
  for (const RouteSpec& route : state.routes) (void)ops.delete_route(route);
  if (!state.picked_tables) return;
  // A picked table is ours alone: nothing may be left in it.
  for (int table : state.tables)
    for (const RouteSpec& route : ops.list_routes(AF_UNSPEC, table)) (void)ops.delete_route(route);
}

void remove_source_routing_by_ips(NetOps& ops, const std::string& ifname, int priority,
                                  const std::vector<std::string>& ips) {
  std::vector<util::IpPrefix> hosts;
  for (const std::string& text : ips) {
    const std::optional<util::IpPrefix> ip = util::parse_ip_or_cidr(text);
    if (ip) hosts.push_back(util::IpPrefix::host(ip->address));
  }
  if (hosts.empty()) return;
  std::vector<int> tables;
  for (const RuleSpec& rule : ops.list_rules(AF_UNSPEC)) {
    if (rule.priority != priority || !rule.src || !contains(hosts, *rule.src)) continue;
    util::log_verbose("source routing: removing rule ", to_string(rule), " of ", ifname, " found by its address");
    (void)ops.delete_rule(rule);
    if (std::find(tables.begin(), tables.end(), rule.table) == tables.end()) tables.push_back(rule.table);
  }
  const std::optional<LinkInfo> link = ops.find_link(ifname);
  if (!link) return;  // its routes went with it
  for (int table : tables)
    for (const RouteSpec& route : ops.list_routes(AF_UNSPEC, table))
      if (route.ifindex == link->index) (void)ops.delete_route(route);
}

std::vector<std::string> check_source_routing(NetOps& ops, const SourceRoutingState& state) {
  std::vector<std::string> diffs;
  const std::vector<RuleSpec> rules = ops.list_rules(AF_UNSPEC);
  std::vector<std::optional<util::IpPrefix>> our_sources;
  for (const RuleSpec& want : state.rules) {
    our_sources.push_back(want.src);
    if (std::find(rules.begin(), rules.end(), want) == rules.end())
      diffs.push_back("source routing of " + state.ifname + ": rule \"" + to_string(want) + "\" is missing");
  }
  for (const RuleSpec& have : rules) {
    if (have.priority == state.priority && contains(our_sources, have.src) &&
        std::find(state.rules.begin(), state.rules.end(), have) == state.rules.end())
      diffs.push_back("source routing of " + state.ifname + ": unexpected rule \"" + to_string(have) + "\" for " +
                      address_of(have));
  }
  for (int table : state.tables) {
    const std::vector<RouteSpec> present = ops.list_routes(AF_UNSPEC, table);
    for (const RouteSpec& want : state.routes) {
      if (want.table != table || contains_route(present, want)) continue;
      const auto similar = std::find_if(present.begin(), present.end(),
                                        [&](const RouteSpec& r) { return same_route_identity(r, want); });
      if (similar != present.end()) {
        diffs.push_back("source routing of " + state.ifname + ": route \"" + to_string(want) + "\" differs: found \"" +
                        to_string(*similar) + "\"");
      } else {
        diffs.push_back("source routing of " + state.ifname + ": route \"" + to_string(want) + "\" is missing");
      }
    }
    if (!state.picked_tables) continue;
    for (const RouteSpec& have : present) {
      const bool similar = std::any_of(state.routes.begin(), state.routes.end(),
                                       [&](const RouteSpec& r) { return same_route_identity(r, have); });
      if (!contains_route(state.routes, have) && !similar)
        diffs.push_back("source routing of " + state.ifname + ": table " + std::to_string(table) +
                        " holds an unexpected route \"" + to_string(have) + "\"");
    }
  }
  return diffs;
}

}  // namespace manifold::scoping
