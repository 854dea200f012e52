// Source routing: layered config with strict validation, the per-IP plan (table choice, copied
// routes, gateway default, rule), apply with self-rollback, idempotent remove (with or without a
// cached state), CHECK, and the strict state codec (the cache is untrusted input).
#include "scoping/source_routing.h"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <climits>
#include <set>
#include <string_view>

#include "scoping/config_layers.h"
#include "cni/error.h"
#include "netlink/convert.h"
#include "netlink/ip_prefix.h"
#include "util/log.h"

namespace manifold::scoping {

using namespace netlink;  // the layer these steps drive

namespace {

using cni::CniError;
using cni::ErrorCode;

constexpr std::array<std::string_view, 5> kKnownKeys = {"enabled", "table", "tableBase",
                                                        "rulePriority", "gateways"};
constexpr int kMaxRulePriority = 32765;     // main's rule is 32766: ours must come first
constexpr std::size_t kMaxEchoedText = 64;  // how much of a bad value a message repeats
constexpr std::size_t kMaxStateIps = 64;    // bounds of a cached state
constexpr std::size_t kMaxStateRoutes = 4096;

// Printable, bounded rendering of user text for an error message.
std::string echo(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, kMaxEchoedText)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (text.size() > kMaxEchoedText) out += "...";
  return out;
}

std::string echo_json(const Json& value) {
  if (value.is_string())
    return "\"" + echo(std::string_view(value.get_ref<const std::string&>())) + "\"";
  return echo(std::string_view(value.dump(-1, ' ', false, Json::error_handler_t::replace)));
}

[[noreturn]] void bad_field(std::string_view key, const std::string& why) {
  cni::throw_invalid_config("invalid sourceRouting." + std::string(key) + ": " + why);
}

[[noreturn]] void bad_state(const std::string& field, const std::string& why) {
  throw CniError(ErrorCode::Decoding,
                 "invalid cached source-routing state: " + field + " " + why);
}

int read_int(const Json& v, std::string_view key, long long lo, long long hi) {
  if (!v.is_number_integer())
    bad_field(key, echo_json(v) + " is not an integer (" + std::to_string(lo) + "-" +
                       std::to_string(hi) + ")");
  long long n = 0;
  if (v.is_number_unsigned()) {
    const auto u = v.get<unsigned long long>();
    n = u > static_cast<unsigned long long>(LLONG_MAX) ? LLONG_MAX : static_cast<long long>(u);
  } else {
    n = v.get<long long>();
  }
  if (n < lo || n > hi)
    bad_field(key, echo_json(v) + " is out of range (" + std::to_string(lo) + "-" +
                       std::to_string(hi) + ")");
  return static_cast<int>(n);
}

bool is_ipv6_link_local(const IpPrefix& ip) {
  return ip.family == AF_INET6 && ip.bytes[0] == 0xfe && (ip.bytes[1] & 0xc0) == 0x80;
}

// "192.0.2.5/32" / "2001:db8::5/128" for a bare or CIDR address.
IpPrefix host_prefix(const IpPrefix& ip) {
  IpPrefix host = ip;
  host.length = ip.max_length();
  return host;
}

bool contains_route(const std::vector<RouteSpec>& routes, const RouteSpec& route) {
  return std::find(routes.begin(), routes.end(), route) != routes.end();
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

std::string address_of(const RuleSpec& rule) {
  const std::optional<IpPrefix> p = parse_cidr(rule.src);
  return p ? p->address() : rule.src;
}

}  // namespace

// ---- config ----

Json SourceRoutingConfig::to_json() const {
  Json j = Json::object();
  j["enabled"] = enabled;
  j["table"] = table;
  j["tableBase"] = table_base;
  j["rulePriority"] = rule_priority;
  j["gateways"] = Json::array();
  if (!gateway_v4.empty()) j["gateways"].push_back(gateway_v4);
  if (!gateway_v6.empty()) j["gateways"].push_back(gateway_v6);
  return j;
}

SourceRoutingConfig merge_source_routing_layers(const Json& top, const Json& delegate,
                                                const Json& cni_args) {
  return parse_source_routing_config(merge_config_layers("sourceRouting", top, delegate, cni_args));
}

SourceRoutingConfig parse_source_routing_config(const Json& sr) {
  SourceRoutingConfig cfg;
  if (sr.is_null()) return cfg;
  if (!sr.is_object()) cni::throw_invalid_config("invalid sourceRouting: not an object");
  for (const auto& [key, value] : sr.items()) {
    if (std::find(kKnownKeys.begin(), kKnownKeys.end(), key) == kKnownKeys.end())
      bad_field(echo(key), "unknown key");
  }
  auto get = [&](std::string_view key) -> const Json* {
    auto it = sr.find(std::string(key));
    return (it == sr.end() || it->is_null()) ? nullptr : &*it;
  };
  if (const Json* v = get("enabled")) {
    if (!v->is_boolean()) bad_field("enabled", echo_json(*v) + " is not a boolean");
    cfg.enabled = v->get<bool>();
  }
  if (const Json* v = get("table")) {
    cfg.table = read_int(*v, "table", 0, INT_MAX);
    if (cfg.table >= kDefaultTable && cfg.table <= kLocalTable)
      bad_field("table", std::to_string(cfg.table) +
                             " is a reserved table (253 default, 254 main, 255 local)");
  }
  if (const Json* v = get("tableBase")) cfg.table_base = read_int(*v, "tableBase", 1, INT_MAX);
  if (const Json* v = get("rulePriority"))
    cfg.rule_priority = read_int(*v, "rulePriority", 1, kMaxRulePriority);
  if (const Json* v = get("gateways")) {
    if (!v->is_array() || v->size() > 2)
      bad_field("gateways", echo_json(*v) + " is not a list of at most two IP addresses");
    for (const Json& gw : *v) {
      const std::optional<IpPrefix> ip =
          gw.is_string() ? parse_ip(gw.get_ref<const std::string&>()) : std::nullopt;
      if (!ip) bad_field("gateways", echo_json(gw) + " is not an IP address");
      std::string& slot = ip->family == AF_INET ? cfg.gateway_v4 : cfg.gateway_v6;
      if (!slot.empty())
        bad_field("gateways", "more than one " + family_name(ip->family) + " gateway");
      slot = ip->address();
    }
  }
  return cfg;
}

// ---- plan ----

std::vector<std::string> describe(const SourceRoutingPlan& plan) {
  std::vector<std::string> lines;
  for (const SourceTablePlan& t : plan.tables) {
    lines.push_back("table " + std::to_string(t.table) + " for " + t.ip +
                    (t.reused ? " (reused)" : ""));
    for (const RouteSpec& r : t.stale) lines.push_back("delete stale route " + to_string(r));
    for (const RouteSpec& r : t.routes) lines.push_back("route " + to_string(r));
    lines.push_back("rule " + to_string(t.rule));
  }
  return lines;
}

SourceRoutingPlan plan_source_routing(NetOps& ops, const SourceRoutingConfig& cfg,
                                      const std::string& ifname,
                                      const std::vector<AttachmentAddress>& addresses) {
  const std::optional<LinkInfo> link = ops.find_link(ifname);
  if (!link)
    throw CniError(ErrorCode::Netlink, "source routing: interface " + ifname +
                                           " does not exist in " + ops.netns_path());
  SourceRoutingPlan plan;
  plan.ifname = ifname;
  plan.ifindex = link->index;
  plan.priority = cfg.rule_priority;
  plan.picked_tables = cfg.table == 0;

  const std::vector<RuleSpec> rules = ops.list_rules(AF_UNSPEC);
  std::vector<RouteSpec> main_routes;
  for (const RouteSpec& r : ops.list_routes(AF_UNSPEC, kMainTable))
    if (r.ifindex == link->index) main_routes.push_back(r);

  std::set<int> planned_tables;
  std::set<std::string> seen_ips;
  for (const AttachmentAddress& address : addresses) {
    const std::optional<IpPrefix> ip = parse_cidr(address.cidr);
    if (!ip)
      throw CniError(ErrorCode::InvalidConfig, "source routing: address \"" + echo(address.cidr) +
                                                   "\" of " + ifname + " is not an IP address");
    if (is_ipv6_link_local(*ip) || !seen_ips.insert(ip->address()).second) continue;
    const IpPrefix subnet = ip->masked();
    const std::string host = host_prefix(*ip).to_string();

    std::string gateway = ip->family == AF_INET ? cfg.gateway_v4 : cfg.gateway_v6;
    if (gateway.empty() && !address.gateway.empty()) {
      const std::optional<IpPrefix> gw = parse_ip(address.gateway);
      if (!gw || gw->family != ip->family)
        throw CniError(ErrorCode::InvalidConfig, "source routing: gateway \"" +
                                                     echo(address.gateway) + "\" of " +
                                                     address.cidr + " is not an " +
                                                     family_name(ip->family) + " address");
      gateway = gw->address();
    }

    SourceTablePlan t;
    t.ip = ip->address();
    // A rule of ours for this IP already exists (re-ADD): keep its table when tables are picked;
    // with a configured table, a rule pointing elsewhere is replaced.
    std::optional<RuleSpec> existing;
    for (const RuleSpec& r : rules)
      if (r.priority == cfg.rule_priority && r.family == ip->family && r.src == host) existing = r;
    if (cfg.table != 0) {
      t.table = cfg.table;
    } else if (existing && planned_tables.count(existing->table) == 0) {
      t.table = existing->table;
      t.reused = true;
    } else {
      int table = ops.find_free_table(cfg.table_base);
      while (planned_tables.count(table) != 0) {
        if (table == INT_MAX)
          throw CniError(ErrorCode::Netlink,
                         "source routing: no free routing table at or above " +
                             std::to_string(cfg.table_base));
        table = ops.find_free_table(table + 1);
      }
      t.table = table;
    }

    for (const RouteSpec& r : main_routes) {
      if (r.family != ip->family) continue;
      if (!r.prefsrc.empty()) {
        const std::optional<IpPrefix> src = parse_ip(r.prefsrc);
        if (!src || !subnet.contains(*src)) continue;
      }
      if (!r.gw.empty()) {
        const std::optional<IpPrefix> gw = parse_ip(r.gw);
        if (!gw || !(is_ipv6_link_local(*gw) || subnet.contains(*gw))) continue;
      }
      if (!gateway.empty() && r.dst.empty()) continue;  // replaced by "default via gateway"
      RouteSpec copy = r;
      copy.table = t.table;
      copy = route_as_added(normalize_route(copy));
      if (!contains_route(t.routes, copy)) t.routes.push_back(copy);
    }
    if (!gateway.empty()) {
      RouteSpec def;
      def.family = ip->family;
      def.gw = gateway;
      def.ifindex = link->index;
      def.table = t.table;
      t.routes.push_back(route_as_added(normalize_route(def)));
    }

    t.rule.family = ip->family;
    t.rule.src = host;
    t.rule.table = t.table;
    t.rule.priority = cfg.rule_priority;
    t.rule = normalize_rule(t.rule);

    if (t.reused) {
      for (const RouteSpec& r : ops.list_routes(AF_UNSPEC, t.table))
        if (!contains_route(t.routes, r)) t.stale.push_back(r);
    }
    planned_tables.insert(t.table);
    plan.tables.push_back(std::move(t));
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
        if (r.priority == t.rule.priority && r.src == t.rule.src && r.table != t.rule.table)
          (void)ops.delete_rule(r);
      }
      for (const RouteSpec& r : t.routes) {
        if (ops.add_route(r) == AddOutcome::Added) added_routes.push_back(r);
        if (!contains_route(state.routes, r)) state.routes.push_back(r);
      }
      if (ops.add_rule(t.rule) == AddOutcome::Added) added_rules.push_back(t.rule);
      state.rules.push_back(t.rule);
      state.ips.push_back(t.ip);
      if (std::find(state.tables.begin(), state.tables.end(), t.table) == state.tables.end())
        state.tables.push_back(t.table);
    }
  } catch (const CniError& e) {
    util::log_verbose("source routing for ", plan.ifname, " failed, undoing: ", e.msg());
    for (auto it = added_rules.rbegin(); it != added_rules.rend(); ++it)
      delete_quietly(ops, *it, "undo");
    for (auto it = added_routes.rbegin(); it != added_routes.rend(); ++it)
      delete_quietly(ops, *it, "undo");
    throw;
  }
  util::log_verbose("source routing for ", plan.ifname, ": ", state.rules.size(), " rule(s), ",
                    state.routes.size(), " table route(s)");
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
  std::set<std::string> hosts;
  for (const std::string& text : ips) {
    const std::optional<IpPrefix> ip = parse_cidr(text);
    if (ip) hosts.insert(host_prefix(*ip).to_string());
  }
  if (hosts.empty()) return;
  std::vector<int> tables;
  for (const RuleSpec& rule : ops.list_rules(AF_UNSPEC)) {
    if (rule.priority != priority || hosts.count(rule.src) == 0) continue;
    util::log_verbose("source routing: removing rule ", to_string(rule), " of ", ifname,
                      " found by its address");
    (void)ops.delete_rule(rule);
    if (std::find(tables.begin(), tables.end(), rule.table) == tables.end())
      tables.push_back(rule.table);
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
  std::set<std::string> our_sources;
  for (const RuleSpec& want : state.rules) {
    our_sources.insert(want.src);
    if (std::find(rules.begin(), rules.end(), want) == rules.end())
      diffs.push_back("source routing of " + state.ifname + ": rule \"" + to_string(want) +
                      "\" is missing");
  }
  for (const RuleSpec& have : rules) {
    if (have.priority == state.priority && our_sources.count(have.src) != 0 &&
        std::find(state.rules.begin(), state.rules.end(), have) == state.rules.end())
      diffs.push_back("source routing of " + state.ifname + ": unexpected rule \"" +
                      to_string(have) + "\" for " + address_of(have));
  }
  for (int table : state.tables) {
    const std::vector<RouteSpec> present = ops.list_routes(AF_UNSPEC, table);
    for (const RouteSpec& want : state.routes) {
      if (want.table != table || contains_route(present, want)) continue;
      const auto similar = std::find_if(present.begin(), present.end(), [&](const RouteSpec& r) {
        return same_route_identity(r, want);
      });
      if (similar != present.end()) {
        diffs.push_back("source routing of " + state.ifname + ": route \"" + to_string(want) +
                        "\" differs: found \"" + to_string(*similar) + "\"");
      } else {
        diffs.push_back("source routing of " + state.ifname + ": route \"" + to_string(want) +
                        "\" is missing");
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

// ---- state codec ----

Json SourceRoutingState::to_json() const {
  Json j = Json::object();
  j["ifname"] = ifname;
  j["priority"] = priority;
  j["pickedTables"] = picked_tables;
  j["ips"] = ips;
  j["tables"] = tables;
  j["rules"] = Json::array();
  for (const RuleSpec& r : rules) j["rules"].push_back(netlink::to_json(r));
  j["routes"] = Json::array();
  for (const RouteSpec& r : routes) j["routes"].push_back(netlink::to_json(r));
  return j;
}

SourceRoutingState SourceRoutingState::from_json(const Json& j) {
  if (!j.is_object()) bad_state("(top level)", "is not an object");
  SourceRoutingState s;
  const auto ifname = j.find("ifname");
  if (ifname == j.end() || !ifname->is_string() ||
      !is_valid_ifname(ifname->get_ref<const std::string&>()))
    bad_state("ifname", "is missing or not a valid interface name");
  s.ifname = ifname->get<std::string>();
  s.priority = detail::json_int(j, "source-routing state", "priority", 1, kMaxRulePriority,
                                std::nullopt);
  const auto picked = j.find("pickedTables");
  if (picked == j.end() || !picked->is_boolean()) bad_state("pickedTables", "is not a boolean");
  s.picked_tables = picked->get<bool>();

  auto list = [&](const char* key, std::size_t max) -> const Json& {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_array() || it->size() > max)
      bad_state(key, "is missing or not a list of at most " + std::to_string(max) + " entries");
    return *it;
  };
  for (const Json& ip : list("ips", kMaxStateIps)) {
    const std::optional<IpPrefix> p =
        ip.is_string() ? parse_ip(ip.get_ref<const std::string&>()) : std::nullopt;
    if (!p) bad_state("ips", "holds something other than an IP address");
    s.ips.push_back(p->address());
  }
  for (const Json& t : list("tables", kMaxStateIps)) {
    if (!t.is_number_integer() || t.get<long long>() < 1 || t.get<long long>() > INT_MAX ||
        (t.get<long long>() >= kDefaultTable && t.get<long long>() <= kLocalTable))
      bad_state("tables", "holds something other than a routing table ID");
    s.tables.push_back(t.get<int>());
  }
  auto our_table = [&](int table) {
    return std::find(s.tables.begin(), s.tables.end(), table) != s.tables.end();
  };
  for (const Json& r : list("rules", kMaxStateIps)) {
    RuleSpec rule = rule_from_json(r);
    if (rule.priority != s.priority || !our_table(rule.table) || rule.src.empty())
      bad_state("rules", "holds a rule that is not ours (priority, table or source)");
    s.rules.push_back(std::move(rule));
  }
  for (const Json& r : list("routes", kMaxStateRoutes)) {
    RouteSpec route = route_from_json(r);
    if (!our_table(route.table)) bad_state("routes", "holds a route outside our tables");
    s.routes.push_back(std::move(route));
  }
  return s;
}

}  // namespace manifold::scoping
