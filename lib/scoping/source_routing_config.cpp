// Implementation of the `sourceRouting` configuration: the layered merge, the strict per-key
// validation with messages that repeat a bad value only in printable, bounded form, and the
// canonical object form.
#include "scoping/source_routing_config.h"

#include <algorithm>
#include <array>
#include <climits>
#include <string>
#include <string_view>

#include "cni/error.h"
#include "netlink/route.h"
#include "scoping/config_layers.h"
#include "util/quote.h"

namespace manifold::scoping {

namespace {

constexpr std::array<std::string_view, 5> kKnownKeys = {"enabled", "table", "tableBase",
                                                        "rulePriority", "gateways"};

std::string echo_json(const Json& value) {
  if (value.is_string()) return "\"" + util::printable(value.get_ref<const std::string&>()) + "\"";
  return util::printable(value.dump(-1, ' ', false, Json::error_handler_t::replace));
}

[[noreturn]] void bad_field(std::string_view key, const std::string& why) {
  cni::throw_invalid_config("invalid sourceRouting." + std::string(key) + ": " + why);
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

int read_table(const Json& v) {
  const int table = read_int(v, "table", 0, INT_MAX);
  if (table >= netlink::kDefaultTable && table <= netlink::kLocalTable)
    bad_field("table", std::to_string(table) +
                           " is a reserved table (253 default, 254 main, 255 local)");
  return table;
}

void read_gateways(const Json& v, SourceRoutingConfig& cfg) {
  if (!v.is_array() || v.size() > 2)
    bad_field("gateways", echo_json(v) + " is not a list of at most two IP addresses");
  for (const Json& gw : v) {
    const std::optional<util::IpAddress> ip =
        gw.is_string() ? util::parse_ip(gw.get_ref<const std::string&>()) : std::nullopt;
    if (!ip) bad_field("gateways", echo_json(gw) + " is not an IP address");
    std::optional<util::IpAddress>& slot = ip->family == 4 ? cfg.gateway_v4 : cfg.gateway_v6;
    if (slot) bad_field("gateways", "more than one " + ip->family_name() + " gateway");
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
      bad_field(util::printable(key), "unknown key");
  }
  auto get = [&](std::string_view key) -> const Json* {
    auto it = sr.find(std::string(key));
    return (it == sr.end() || it->is_null()) ? nullptr : &*it;
  };
  if (const Json* v = get("enabled")) {
    if (!v->is_boolean()) bad_field("enabled", echo_json(*v) + " is not a boolean");
    cfg.enabled = v->get<bool>();
  }
  if (const Json* v = get("table")) cfg.table = read_table(*v);
  if (const Json* v = get("tableBase")) cfg.table_base = read_int(*v, "tableBase", 1, INT_MAX);
  if (const Json* v = get("rulePriority"))
    cfg.rule_priority = read_int(*v, "rulePriority", 1, kMaxSourceRulePriority);
  if (const Json* v = get("gateways")) read_gateways(*v, cfg);
  return cfg;
}

}  // namespace manifold::scoping
