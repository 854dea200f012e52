// Merging and validation of the layered `mesh` configuration. Each layer is checked to be an object
// (or null), merged key by key, then every known key is read with the strict config reader
// (cni/config_reader.h), which throws CniError(InvalidConfig) naming `mesh.<key>` and the offending
// value. Hostile input is bounded: list lengths, string lengths and the echoed text in messages are
// all capped. The readers return nothing after reporting, so they also work in collect mode.
#include "scoping/mesh_config.h"

#include <algorithm>
#include <array>

#include "cni/config_reader.h"
#include "scoping/config_layers.h"

namespace manifold::scoping {

using firewall::IptablesMode;
using firewall::Ipv6Mode;
using firewall::MeshConfig;
using firewall::PortRange;

namespace {

constexpr std::size_t kMaxListEntries = 256;   // per port or subnet list
constexpr std::size_t kMaxEntryText = 64;      // one port/CIDR/UID string
constexpr std::size_t kMaxListText = 4096;     // one comma-separated list string
constexpr std::uint32_t kMaxId = 4294967294u;  // (uid_t)-1 means "no change" to the kernel
constexpr int kMaxLockWaitSeconds = 600;

constexpr std::array<std::string_view, 18> kMeshKeys = {
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

using cni::ConfigReader;

std::string echo_json(const Json& value) { return ConfigReader::echo(value); }

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

std::optional<std::uint16_t> read_port(const ConfigReader& r, std::string_view key) {
  const Json* v = r.get(key);
  if (!v) return std::nullopt;
  if (v->is_number_integer() && v->get<std::int64_t>() >= 1 && v->get<std::int64_t>() <= 65535)
    return static_cast<std::uint16_t>(v->get<std::int64_t>());
  r.fail(key, echo_json(*v) + " is not a port number (1-65535)");
  return std::nullopt;
}

// A numeric ID; an explicit null means "no exemption" and clears `out`.
void read_id(const ConfigReader& r, std::string_view key, std::optional<std::uint32_t>& out) {
  const Json* v = r.find(key);
  if (!v) return;
  if (v->is_null()) {
    out.reset();
    return;
  }
  std::optional<std::uint64_t> id;
  if (v->is_number_integer()) {
    const auto n = v->get<std::int64_t>();
    if (n >= 0 && static_cast<std::uint64_t>(n) <= kMaxId) id = static_cast<std::uint64_t>(n);
  } else if (v->is_string()) {
    id = parse_decimal(v->get_ref<const std::string&>(), kMaxId);
  } else {
    return r.fail(key, echo_json(*v) + " is not a numeric ID");
  }
  if (!id) return r.fail(key, echo_json(*v) + " is not a numeric ID (0-4294967294; names are not accepted)");
  out = static_cast<std::uint32_t>(*id);
}

std::optional<int> read_lock_wait(const ConfigReader& r, std::string_view key) {
  const Json* v = r.get(key);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) {
    r.fail(key, echo_json(*v) + " is not a whole number of seconds");
    return std::nullopt;
  }
  const auto n = v->get<std::int64_t>();
  if (n >= 1 && n <= kMaxLockWaitSeconds) return static_cast<int>(n);
  r.fail(key, echo_json(*v) + " is out of range (1-600)");
  return std::nullopt;
}

std::optional<IptablesMode> read_iptables_mode(const ConfigReader& r, std::string_view key) {
  const Json* v = r.get(key);
  if (!v) return std::nullopt;
  if (v->is_string()) {
    const auto& s = v->get_ref<const std::string&>();
    if (s == "auto") return IptablesMode::Auto;
    if (s == "legacy") return IptablesMode::Legacy;
    if (s == "nft") return IptablesMode::Nft;
  }
  r.fail(key, echo_json(*v) + " is not one of \"auto\", \"legacy\", \"nft\"");
  return std::nullopt;
}

std::optional<Ipv6Mode> read_ipv6_mode(const ConfigReader& r, std::string_view key) {
  const Json* v = r.get(key);
  if (!v) return std::nullopt;
  if (v->is_boolean()) return v->get<bool>() ? Ipv6Mode::Always : Ipv6Mode::Never;
  if (v->is_string() && v->get_ref<const std::string&>() == "auto") return Ipv6Mode::Auto;
  r.fail(key, echo_json(*v) + " is not \"auto\", true or false");
  return std::nullopt;
}

// Splits an annotation-style list text on commas, trimming spaces; empty items are dropped.
std::vector<Json> split_list_text(const std::string& s) {
  std::vector<Json> entries;
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
  return entries;
}

// The entries of a list key: a JSON array, or one comma-separated string (annotation style).
std::optional<std::vector<Json>> list_entries(const ConfigReader& r, std::string_view key) {
  const Json* v = r.get(key);
  if (!v) return std::nullopt;
  std::vector<Json> entries;
  if (v->is_array()) {
    entries.assign(v->begin(), v->end());
  } else if (!v->is_string()) {
    r.fail(key, echo_json(*v) + " is not a list");
    return std::nullopt;
  } else if (v->get_ref<const std::string&>().size() > kMaxListText) {
    r.fail(key, "list text longer than 4096 characters");
    return std::nullopt;
  } else {
    entries = split_list_text(v->get_ref<const std::string&>());
  }
  if (entries.size() <= kMaxListEntries) return entries;
  r.fail(key, "more than 256 entries");
  return std::nullopt;
}

std::optional<std::vector<PortRange>> read_ports(const ConfigReader& r, std::string_view key) {
  auto entries = list_entries(r, key);
  if (!entries) return std::nullopt;
  std::vector<PortRange> ports;
  for (const Json& e : *entries) {
    std::optional<PortRange> range;
    if (e.is_number_integer()) {
      const auto n = e.get<std::int64_t>();
      if (n >= 1 && n <= 65535) range = PortRange{static_cast<std::uint16_t>(n), static_cast<std::uint16_t>(n)};
    } else if (e.is_string()) {
      range = parse_port_range(e.get_ref<const std::string&>());
    }
    if (!range) {
      r.fail(key, echo_json(e) + " is not a port (1-65535) or range N-M with N <= M");
      return std::nullopt;
    }
    if (std::find(ports.begin(), ports.end(), *range) == ports.end()) ports.push_back(*range);
  }
  return ports;
}

// Appends the CIDRs of `key` to the family lists; `only` restricts the accepted family.
void read_subnets(const ConfigReader& r, std::string_view key, std::optional<int> only, std::vector<util::IpPrefix>& v4,
                  std::vector<util::IpPrefix>& v6) {
  auto entries = list_entries(r, key);
  if (!entries) return;
  for (const Json& e : *entries) {
    std::optional<util::IpPrefix> cidr;
    if (e.is_string() && e.get_ref<const std::string&>().size() <= kMaxEntryText)
      cidr = util::parse_cidr(e.get_ref<const std::string&>());
    if (!cidr) return r.fail(key, echo_json(e) + " is not a CIDR");
    if (only && cidr->address.family != *only)
      return r.fail(key, echo_json(e) + " is not an IPv" + std::to_string(*only) + " CIDR");
    auto& list = cidr->address.family == 4 ? v4 : v6;
    const bool seen = std::any_of(list.begin(), list.end(),
                                  [&](const util::IpPrefix& p) { return p.network_str() == cidr->network_str(); });
    if (!seen) list.push_back(*cidr);
  }
}

template <class T>
void assign(T& field, std::optional<T> value) {
  if (value) field = std::move(*value);
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
  cni::ProblemReport first_error;  // throws CniError(InvalidConfig) at the first bad field
  const ConfigReader r(mesh, "$.mesh", "mesh", first_error);
  r.reject_unknown(kMeshKeys);
  assign(cfg.enabled, r.read_bool("enabled"));
  assign(cfg.inbound_port, read_port(r, "inboundPort"));
  assign(cfg.outbound_port, read_port(r, "outboundPort"));
  read_id(r, "proxyUID", cfg.proxy_uid);
  read_id(r, "proxyGID", cfg.proxy_gid);
  assign(cfg.inbound_ports_to_ignore, read_ports(r, "inboundPortsToIgnore"));
  assign(cfg.outbound_ports_to_ignore, read_ports(r, "outboundPortsToIgnore"));
  auto& in4 = cfg.inbound_subnets_to_ignore_v4;
  auto& in6 = cfg.inbound_subnets_to_ignore_v6;
  auto& out4 = cfg.outbound_subnets_to_ignore_v4;
  auto& out6 = cfg.outbound_subnets_to_ignore_v6;
  read_subnets(r, "inboundSubnetsToIgnore", std::nullopt, in4, in6);
  read_subnets(r, "inboundSubnetsToIgnoreV4", 4, in4, in6);
  read_subnets(r, "inboundSubnetsToIgnoreV6", 6, in4, in6);
  read_subnets(r, "outboundSubnetsToIgnore", std::nullopt, out4, out6);
  read_subnets(r, "outboundSubnetsToIgnoreV4", 4, out4, out6);
  read_subnets(r, "outboundSubnetsToIgnoreV6", 6, out4, out6);
  assign(cfg.redirect_inbound, r.read_bool("redirectInbound"));
  assign(cfg.redirect_outbound, r.read_bool("redirectOutbound"));
  assign(cfg.iptables_mode, read_iptables_mode(r, "iptablesMode"));
  assign(cfg.ipv6, read_ipv6_mode(r, "ipv6"));
  assign(cfg.lock_wait_seconds, read_lock_wait(r, "lockWaitSeconds"));
  return cfg;
}

}  // namespace manifold::scoping
