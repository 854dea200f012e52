// Implementation of the `sourceRouting` configuration: the layered merge, the strict per-key
// validation with messages that repeat a bad value only in printable, bounded form, and the
// canonical object form.
#include "scoping/source_routing_config.h"

#include <algorithm>
#include <array>
#include <climits>
#include <optional>
#include <string>
#include <string_view>

#include "cni/config_reader.h"
#include "cni/error.h"
#include "netlink/route.h"
#include "scoping/config_layers.h"

namespace manifold::scoping {

namespace {

constexpr std::array<std::string_view, 5> kSourceRoutingKeys = {"enabled", "table", "tableBase", "rulePriority",
                                                                "gateways"};

/// Refuses the kernel's reserved tables (253 default, 254 main, 255 local).
std::optional<int> checked_table(const cni::ConfigReader& r, std::optional<int> table) {
  if (table && *table >= netlink::kDefaultTable && *table <= netlink::kLocalTable) {
    r.fail("table", std::to_string(*table) + " is a reserved table (253 default, 254 main, 255 local)");
    return std::nullopt;
  }
  return table;
}

void read_gateways(const cni::ConfigReader& r, const Json& v, SourceRoutingConfig& cfg) {
  if (!v.is_array() || v.size() > 2)
    return r.fail("gateways", r.echo(v) + " is not a list of at most two IP addresses");
  for (const Json& gw : v) {
    const std::optional<util::IpAddress> ip =
        gw.is_string() ? util::parse_ip(gw.get_ref<const std::string&>()) : std::nullopt;
    if (!ip) return r.fail("gateways", r.echo(gw) + " is not an IP address");
    std::optional<util::IpAddress>& slot = ip->family == 4 ? cfg.gateway_v4 : cfg.gateway_v6;
    if (slot) return r.fail("gateways", "more than one " + ip->family_name() + " gateway");
    slot = *ip;
  }
}

}  // namespace

Json SourceRoutingConfig::to_json() const {
  Json j = Json::object();
  j["enabled"] = enabled;
  j["table"] = table;
  j["tableBase"] = table_base;
  j["rulePriority"] = rule_priority;
  j["gateways"] = Json::array();
  if (gateway_v4) j["gateways"].push_back(gateway_v4->str());
  if (gateway_v6) j["gateways"].push_back(gateway_v6->str());
  return j;
}

SourceRoutingConfig merge_source_routing_layers(const Json& top, const Json& delegate, const Json& cni_args) {
  return parse_source_routing_config(merge_config_layers("sourceRouting", top, delegate, cni_args));
}

SourceRoutingConfig parse_source_routing_config(const Json& sr) {
  SourceRoutingConfig cfg;
  cni::ProblemReport report;  // throws at the first problem
  const cni::ConfigReader r(sr, "$.sourceRouting", "sourceRouting", report);
  r.reject_unknown(kSourceRoutingKeys);
  if (auto v = r.read_bool("enabled")) cfg.enabled = *v;
  if (auto v = checked_table(r, r.read_int("table", 0, INT_MAX))) cfg.table = *v;
  if (auto v = r.read_int("tableBase", 1, INT_MAX)) cfg.table_base = *v;
  if (auto v = r.read_int("rulePriority", 1, kMaxSourceRulePriority)) cfg.rule_priority = *v;
  if (const Json* v = r.get("gateways")) read_gateways(r, *v, cfg);
  return cfg;
}

}  // namespace manifold::scoping
