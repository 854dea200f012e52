// The cached state of source routing (SourceRoutingState): its JSON form and the strict reader.
// The cache is untrusted input, so every field is checked for type, range and bounded size, and a
// rule or route that is not ours (other priority, other table) is refused before DEL or CHECK can
// act on it.
#include "scoping/source_routing.h"

#include <algorithm>
#include <climits>
#include <optional>
#include <string>

#include "cni/error.h"
#include "scoping/cached_state.h"
#include "netlink/convert.h"
#include "netlink/link.h"
#include "util/ifname.h"

namespace manifold::scoping {

using namespace netlink;  // the specs the state holds

namespace {

constexpr std::size_t kMaxStateIps = 64;  // bounds of a cached state
constexpr std::size_t kMaxStateRoutes = 4096;

}  // namespace

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
  if (!j.is_object()) throw_bad_cached_state("source-routing", "(top level)", "is not an object");
  SourceRoutingState s;
  const auto ifname = j.find("ifname");
  if (ifname == j.end() || !ifname->is_string() || !util::is_valid_ifname(ifname->get_ref<const std::string&>()))
    throw_bad_cached_state("source-routing", "ifname", "is missing or not a valid interface name");
  s.ifname = ifname->get<std::string>();
  s.priority = detail::json_int(j, "source-routing state", "priority", 1, kMaxSourceRulePriority, std::nullopt);
  const auto picked = j.find("pickedTables");
  if (picked == j.end() || !picked->is_boolean())
    throw_bad_cached_state("source-routing", "pickedTables", "is not a boolean");
  s.picked_tables = picked->get<bool>();

  auto list = [&](const char* key, std::size_t max) -> const Json& {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_array() || it->size() > max)
      throw_bad_cached_state("source-routing", key,
                             "is missing or not a list of at most " + std::to_string(max) + " entries");
    return *it;
  };
  for (const Json& ip : list("ips", kMaxStateIps)) {
    const std::optional<util::IpAddress> p =
        ip.is_string() ? util::parse_ip(ip.get_ref<const std::string&>()) : std::nullopt;
    if (!p) throw_bad_cached_state("source-routing", "ips", "holds something other than an IP address");
    s.ips.push_back(p->str());
  }
  for (const Json& t : list("tables", kMaxStateIps)) {
    if (!t.is_number_integer() || t.get<long long>() < 1 || t.get<long long>() > INT_MAX ||
        (t.get<long long>() >= kDefaultTable && t.get<long long>() <= kLocalTable))
      throw_bad_cached_state("source-routing", "tables", "holds something other than a routing table ID");
    s.tables.push_back(t.get<int>());
  }
  auto our_table = [&](int table) { return std::find(s.tables.begin(), s.tables.end(), table) != s.tables.end(); };
  for (const Json& r : list("rules", kMaxStateIps)) {
    RuleSpec rule = rule_from_json(r);
    if (rule.priority != s.priority || !our_table(rule.table) || !rule.src)
      throw_bad_cached_state("source-routing", "rules", "holds a rule that is not ours (priority, table or source)");
    s.rules.push_back(std::move(rule));
  }
  for (const Json& r : list("routes", kMaxStateRoutes)) {
    RouteSpec route = route_from_json(r);
    if (!our_table(route.table)) throw_bad_cached_state("source-routing", "routes", "holds a route outside our tables");
    s.routes.push_back(std::move(route));
  }
  return s;
}

}  // namespace manifold::scoping
