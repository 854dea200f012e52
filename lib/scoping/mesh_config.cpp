// Merging and validation of the layered `mesh` configuration. Each layer is checked to be an object
// (or null), merged key by key, then every known key is read with a strict reader that throws
// CniError(InvalidConfig) naming `mesh.<key>` and the offending value. Hostile input is bounded:
// list lengths, string lengths and the echoed text in messages are all capped.
#include "scoping/mesh_config.h"

#include <algorithm>
#include <array>

#include "cni/error.h"
#include "scoping/config_layers.h"

namespace manifold::scoping {

using firewall::IptablesMode;
using firewall::Ipv6Mode;
using firewall::MeshConfig;
using firewall::PortRange;

namespace {

constexpr std::size_t kMaxListEntries = 256;  // per port or subnet list
constexpr std::size_t kMaxEntryText = 64;     // one port/CIDR/UID string
constexpr std::size_t kMaxListText = 4096;    // one comma-separated list string
constexpr std::size_t kMaxEchoedText = 64;    // how much of a bad value a message repeats
constexpr std::uint32_t kMaxId = 4294967294u; // (uid_t)-1 means "no change" to the kernel
constexpr int kMaxLockWaitSeconds = 600;

constexpr std::array<std::string_view, 18> kKnownKeys = {
    "enabled",
    "inboundPort",
    "outboundPort",
    "proxyUID",
    "proxyGID",
    "inboundPortsToIgnore",
    "outboundPortsToIgnore",
    "inboundSubnetsToIgnore",
    "outboundSubnetsToIgnore",
    "inboundSubnetsToIgnoreV4",
    "inboundSubnetsToIgnoreV6",
    "outboundSubnetsToIgnoreV4",
    "outboundSubnetsToIgnoreV6",
    "redirectInbound",
    "redirectOutbound",
    "iptablesMode",
    "ipv6",
    "lockWaitSeconds",
};

// Printable, bounded rendering of user text for an error message.
std::string echo(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, kMaxEchoedText)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (text.size() > kMaxEchoedText) out += "...";
  return out;
}

std::string echo_json(const Json& value) {
  if (value.is_string()) return "\"" + echo(std::string_view(value.get_ref<const std::string&>())) + "\"";
  return echo(std::string_view(value.dump(-1, ' ', false, Json::error_handler_t::replace)));
}

[[noreturn]] void bad_field(std::string_view key, const std::string& why) {
  cni::throw_invalid_config("invalid mesh." + std::string(key) + ": " + why);
}

// Parses 1-10 decimal digits into a value ≤ max; nullopt otherwise.
std::optional<std::uint64_t> parse_decimal(std::string_view text, std::uint64_t max) {
  if (text.empty() || text.size() > 10) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (value > max) return std::nullopt;
  return value;
}

bool read_bool(const Json& v, std::string_view key) {
  if (!v.is_boolean()) bad_field(key, echo_json(v) + " is not a boolean");
  return v.get<bool>();
}

std::uint16_t read_port(const Json& v, std::string_view key) {
  if (!v.is_number_integer()) bad_field(key, echo_json(v) + " is not a port number (1-65535)");
  const auto n = v.get<std::int64_t>();
  if (n < 1 || n > 65535) bad_field(key, echo_json(v) + " is not a port number (1-65535)");
  return static_cast<std::uint16_t>(n);
}

std::optional<std::uint32_t> read_id(const Json& v, std::string_view key) {
  if (v.is_null()) return std::nullopt;
  std::optional<std::uint64_t> id;
  if (v.is_number_integer()) {
    const auto n = v.get<std::int64_t>();
    if (n >= 0 && static_cast<std::uint64_t>(n) <= kMaxId) id = static_cast<std::uint64_t>(n);
  } else if (v.is_string()) {
    id = parse_decimal(v.get_ref<const std::string&>(), kMaxId);
  } else {
    bad_field(key, echo_json(v) + " is not a numeric ID");
  }
  if (!id) bad_field(key, echo_json(v) + " is not a numeric ID (0-4294967294; names are not accepted)");
  return static_cast<std::uint32_t>(*id);
}

int read_lock_wait(const Json& v, std::string_view key) {
  if (!v.is_number_integer()) bad_field(key, echo_json(v) + " is not a whole number of seconds");
  const auto n = v.get<std::int64_t>();
  if (n < 1 || n > kMaxLockWaitSeconds) bad_field(key, echo_json(v) + " is out of range (1-600)");
  return static_cast<int>(n);
}

IptablesMode read_iptables_mode(const Json& v, std::string_view key) {
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "auto") return IptablesMode::Auto;
    if (s == "legacy") return IptablesMode::Legacy;
    if (s == "nft") return IptablesMode::Nft;
  }
  bad_field(key, echo_json(v) + " is not one of \"auto\", \"legacy\", \"nft\"");
}

Ipv6Mode read_ipv6_mode(const Json& v, std::string_view key) {
  if (v.is_boolean()) return v.get<bool>() ? Ipv6Mode::Always : Ipv6Mode::Never;
  if (v.is_string() && v.get_ref<const std::string&>() == "auto") return Ipv6Mode::Auto;
  bad_field(key, echo_json(v) + " is not \"auto\", true or false");
}

// The entries of a list key: a JSON array, or one comma-separated string (annotation style).
std::vector<Json> list_entries(const Json& v, std::string_view key) {
  std::vector<Json> entries;
  if (v.is_array()) {
    if (v.size() > kMaxListEntries) bad_field(key, "more than 256 entries");
    entries.assign(v.begin(), v.end());
  } else if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s.size() > kMaxListText) bad_field(key, "list text longer than 4096 characters");
    std::size_t start = 0;
    while (start <= s.size()) {
      auto comma = s.find(',', start);
      if (comma == std::string::npos) comma = s.size();
      std::string item = s.substr(start, comma - start);
      item.erase(0, item.find_first_not_of(' '));
      item.erase(item.find_last_not_of(' ') + 1);
      if (!item.empty()) entries.emplace_back(item);
      start = comma + 1;
    }
    if (entries.size() > kMaxListEntries) bad_field(key, "more than 256 entries");
  } else {
    bad_field(key, echo_json(v) + " is not a list");
  }
  return entries;
}

std::vector<PortRange> read_ports(const Json& v, std::string_view key) {
  std::vector<PortRange> ports;
  for (const Json& e : list_entries(v, key)) {
    std::optional<PortRange> range;
    if (e.is_number_integer()) {
      const auto n = e.get<std::int64_t>();
      if (n >= 1 && n <= 65535) range = PortRange{static_cast<std::uint16_t>(n), static_cast<std::uint16_t>(n)};
    } else if (e.is_string()) {
      range = parse_port_range(e.get_ref<const std::string&>());
    }
    if (!range) bad_field(key, echo_json(e) + " is not a port (1-65535) or range N-M with N <= M");
    if (std::find(ports.begin(), ports.end(), *range) == ports.end()) ports.push_back(*range);
  }
  return ports;
}

// Appends the CIDRs of `v` to the family lists; `only` restricts the accepted family.
void read_subnets(const Json& v, std::string_view key, std::optional<int> only, std::vector<util::IpPrefix>& v4,
                  std::vector<util::IpPrefix>& v6) {
  for (const Json& e : list_entries(v, key)) {
    if (!e.is_string() || e.get_ref<const std::string&>().size() > kMaxEntryText)
      bad_field(key, echo_json(e) + " is not a CIDR");
    auto cidr = util::parse_cidr(e.get_ref<const std::string&>());
    if (!cidr) bad_field(key, echo_json(e) + " is not a CIDR");
    if (only && cidr->address.family != *only)
      bad_field(key, echo_json(e) + " is not an IPv" + std::to_string(*only) + " CIDR");
    auto& list = cidr->address.family == 4 ? v4 : v6;
    const bool seen = std::any_of(list.begin(), list.end(), [&](const util::IpPrefix& p) {
      return p.network_str() == cidr->network_str();
    });
    if (!seen) list.push_back(*cidr);
  }
}

}  // namespace

std::optional<PortRange> parse_port_range(std::string_view text) {
  if (text.size() > 11) return std::nullopt;
  const auto dash = text.find('-');
  auto first = parse_decimal(text.substr(0, dash), 65535);
  auto last = dash == std::string_view::npos ? first : parse_decimal(text.substr(dash + 1), 65535);
  if (!first || !last || *first < 1 || *first > *last) return std::nullopt;
  return PortRange{static_cast<std::uint16_t>(*first), static_cast<std::uint16_t>(*last)};
}


MeshConfig merge_mesh_layers(const Json& top, const Json& delegate, const Json& cni_args) {
  return parse_mesh_config(merge_config_layers("mesh", top, delegate, cni_args));
}

MeshConfig parse_mesh_config(const Json& mesh) {
  MeshConfig cfg;
  if (mesh.is_null()) return cfg;
  if (!mesh.is_object()) cni::throw_invalid_config("invalid mesh: not an object");
  for (const auto& [key, value] : mesh.items()) {
    if (std::find(kKnownKeys.begin(), kKnownKeys.end(), key) == kKnownKeys.end())
      bad_field(echo(key), "unknown key");
  }
  auto get = [&](std::string_view key) -> const Json* {
    auto it = mesh.find(std::string(key));
    return it == mesh.end() ? nullptr : &*it;
  };
  // Keys whose null means "default": skip them when null.
  auto set = [&](std::string_view key, auto&& read) {
    if (const Json* v = get(key); v && !v->is_null()) read(*v, key);
  };
  set("enabled", [&](const Json& v, auto k) { cfg.enabled = read_bool(v, k); });
  set("inboundPort", [&](const Json& v, auto k) { cfg.inbound_port = read_port(v, k); });
  set("outboundPort", [&](const Json& v, auto k) { cfg.outbound_port = read_port(v, k); });
  if (const Json* v = get("proxyUID")) cfg.proxy_uid = read_id(*v, "proxyUID");
  if (const Json* v = get("proxyGID")) cfg.proxy_gid = read_id(*v, "proxyGID");
  set("inboundPortsToIgnore", [&](const Json& v, auto k) { cfg.inbound_ports_to_ignore = read_ports(v, k); });
  set("outboundPortsToIgnore", [&](const Json& v, auto k) { cfg.outbound_ports_to_ignore = read_ports(v, k); });
  auto& in4 = cfg.inbound_subnets_to_ignore_v4;
  auto& in6 = cfg.inbound_subnets_to_ignore_v6;
  auto& out4 = cfg.outbound_subnets_to_ignore_v4;
  auto& out6 = cfg.outbound_subnets_to_ignore_v6;
  set("inboundSubnetsToIgnore", [&](const Json& v, auto k) { read_subnets(v, k, std::nullopt, in4, in6); });
  set("inboundSubnetsToIgnoreV4", [&](const Json& v, auto k) { read_subnets(v, k, 4, in4, in6); });
  set("inboundSubnetsToIgnoreV6", [&](const Json& v, auto k) { read_subnets(v, k, 6, in4, in6); });
  set("outboundSubnetsToIgnore", [&](const Json& v, auto k) { read_subnets(v, k, std::nullopt, out4, out6); });
  set("outboundSubnetsToIgnoreV4", [&](const Json& v, auto k) { read_subnets(v, k, 4, out4, out6); });
  set("outboundSubnetsToIgnoreV6", [&](const Json& v, auto k) { read_subnets(v, k, 6, out4, out6); });
  set("redirectInbound", [&](const Json& v, auto k) { cfg.redirect_inbound = read_bool(v, k); });
  set("redirectOutbound", [&](const Json& v, auto k) { cfg.redirect_outbound = read_bool(v, k); });
  set("iptablesMode", [&](const Json& v, auto k) { cfg.iptables_mode = read_iptables_mode(v, k); });
  set("ipv6", [&](const Json& v, auto k) { cfg.ipv6 = read_ipv6_mode(v, k); });
  set("lockWaitSeconds", [&](const Json& v, auto k) { cfg.lock_wait_seconds = read_lock_wait(v, k); });
  return cfg;
}


}  // namespace manifold::scoping
