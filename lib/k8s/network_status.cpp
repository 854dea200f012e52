// network-status rendering. Entries are built as ordered JSON following Multus's rules, then
// printed by a small writer that reproduces Go's encoding/json output (HTML-safe string escaping,
// invalid UTF-8 replaced, Go's float format) with MarshalIndent's layout, so the annotation is
// byte-identical to what Multus writes for the same results.
#include "k8s/network_status.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>

#include "cni/error.h"
#include "util/ip.h"

namespace manifold::k8s {
namespace {

constexpr const char* kIndent = "    ";
constexpr int kMaxRenderDepth = 64;

// ---- Go encoding/json writer ------------------------------------------------------------------

/// Length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates), or 0.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  auto cont = [&](std::size_t k) { return k < s.size() && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80; };
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const unsigned char c1 = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
  if (c >= 0xC2 && c <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(i + 1) || !cont(i + 2)) return 0;
    if (c == 0xE0 && c1 < 0xA0) return 0;  // overlong
    if (c == 0xED && c1 > 0x9F) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    if (c == 0xF0 && c1 < 0x90) return 0;  // overlong
    if (c == 0xF4 && c1 > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

void write_go_string(std::string& out, std::string_view s) {
  static const char* hex = "0123456789abcdef";
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            out += "\\u00";
            out += hex[c >> 4];
            out += hex[c & 0xF];
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    const std::size_t n = utf8_length(s, i);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    // U+2028 and U+2029 are E2 80 A8 / E2 80 A9.
    if (n == 3 && c == 0xE2 && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
        (static_cast<unsigned char>(s[i + 2]) == 0xA8 || static_cast<unsigned char>(s[i + 2]) == 0xA9)) {
      out += static_cast<unsigned char>(s[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029";
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  out += '"';
}

void write_go_float(std::string& out, double d) {
  if (!std::isfinite(d)) {  // Go refuses to marshal these; nlohmann writes null, so do we.
    out += "null";
    return;
  }
  char buf[64];
  const double abs = std::fabs(d);
  const bool exp = abs != 0 && (abs < 1e-6 || abs >= 1e21);
  auto res = std::to_chars(buf, buf + sizeof buf, d, exp ? std::chars_format::scientific : std::chars_format::fixed);
  std::string text(buf, res.ptr);
  if (exp) {  // Go writes e-7, not e-07.
    const std::size_t n = text.size();
    if (n >= 4 && text[n - 4] == 'e' && text[n - 3] == '-' && text[n - 2] == '0') text.erase(n - 2, 1);
  }
  out += text;
}

void newline(std::string& out, int depth) {
  out += '\n';
  for (int i = 0; i < depth; ++i) out += kIndent;
}

void write_go_value(std::string& out, const Json& v, int depth) {
  if (depth > kMaxRenderDepth) {
    throw cni::CniError(cni::ErrorCode::Internal, "network-status: value nested too deeply to render");
  }
  switch (v.type()) {
    case Json::value_t::object: {
      if (v.empty()) {
        out += "{}";
        return;
      }
      out += '{';
      bool first = true;
      for (const auto& [key, value] : v.items()) {
        if (!first) out += ',';
        first = false;
        newline(out, depth + 1);
        write_go_string(out, key);
        out += ": ";
        write_go_value(out, value, depth + 1);
      }
      newline(out, depth);
      out += '}';
      return;
    }
    case Json::value_t::array: {
      if (v.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      bool first = true;
      for (const Json& item : v) {
        if (!first) out += ',';
        first = false;
        newline(out, depth + 1);
        write_go_value(out, item, depth + 1);
      }
      newline(out, depth);
      out += ']';
      return;
    }
    case Json::value_t::string: write_go_string(out, v.get_ref<const std::string&>()); return;
    case Json::value_t::boolean: out += v.get<bool>() ? "true" : "false"; return;
    case Json::value_t::number_integer: out += std::to_string(v.get<int64_t>()); return;
    case Json::value_t::number_unsigned: out += std::to_string(v.get<uint64_t>()); return;
    case Json::value_t::number_float: write_go_float(out, v.get<double>()); return;
    default: out += "null"; return;  // null, discarded, binary
  }
}

// ---- device-info decoding ---------------------------------------------------------------------

bool key_matches(std::string_view key, std::string_view field) {
  return key.size() == field.size() &&
         std::equal(key.begin(), key.end(), field.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         });
}

/// Decodes an object of string fields in `fields` order, as Go decodes into a struct of
/// `omitempty` strings. Returns false on a wrong type.
bool decode_string_struct(const Json& in, const std::vector<std::string_view>& fields, Json& out) {
  if (!in.is_object()) return false;
  std::vector<std::string> values(fields.size());
  for (const auto& [key, value] : in.items()) {
    for (std::size_t f = 0; f < fields.size(); ++f) {
      if (!key_matches(key, fields[f])) continue;
      if (value.is_null()) break;
      if (!value.is_string()) return false;
      values[f] = value.get<std::string>();
      break;
    }
  }
  out = Json::object();
  for (std::size_t f = 0; f < fields.size(); ++f) {
    if (!values[f].empty()) out[std::string(fields[f])] = values[f];
  }
  return true;
}

/// Multus reads the device-info file into the NAD client's DeviceInfo struct; this reproduces the
/// result: known fields only, struct order, empty strings omitted. Null when it does not decode.
Json normalize_device_info(const Json& in) {
  if (in.is_null() || !in.is_object()) return nullptr;
  static const std::vector<std::string_view> kTop = {"type", "version"};
  static const std::vector<std::pair<std::string_view, std::vector<std::string_view>>> kNested = {
      {"pci", {"pci-address", "vhost-net", "rdma-device", "pf-pci-address", "representor-device"}},
      {"vdpa", {"parent-device", "driver", "path", "pci-address", "pf-pci-address", "representor-device"}},
      {"vhost-user", {"mode", "path"}},
      {"memif", {"role", "path", "mode"}},
  };
  Json top_in = Json::object();
  std::vector<Json> nested(kNested.size());
  for (const auto& [key, value] : in.items()) {
    for (std::string_view f : kTop) {
      if (key_matches(key, f)) top_in[std::string(f)] = value;
    }
    for (std::size_t n = 0; n < kNested.size(); ++n) {
      if (!key_matches(key, kNested[n].first)) continue;
      if (value.is_null()) {
        nested[n] = nullptr;
      } else if (!decode_string_struct(value, kNested[n].second, nested[n])) {
        return nullptr;
      }
    }
  }
  Json out;
  if (!decode_string_struct(top_in, kTop, out)) return nullptr;
  for (std::size_t n = 0; n < kNested.size(); ++n) {
    if (!nested[n].is_null()) out[std::string(kNested[n].first)] = nested[n];
  }
  return out;
}

// ---- entries ----------------------------------------------------------------------------------

Json dns_json(const StatusDns& dns) {
  Json out = Json::object();
  if (!dns.nameservers.empty()) out["nameservers"] = dns.nameservers;
  if (!dns.domain.empty()) out["domain"] = dns.domain;
  if (!dns.search.empty()) out["search"] = dns.search;
  if (!dns.options.empty()) out["options"] = dns.options;
  return out;
}

/// One entry in the making; turned into JSON in Multus's field order by to_json().
struct Entry {
  std::string interface;
  std::vector<std::string> ips;
  std::string mac;
  int mtu = 0;
  bool is_default = false;
};

bool is_reserved_key(const std::string& key) {
  static const std::array<const char*, 9> kKeys = {"name", "interface", "ips",         "mac",    "mtu",
                                                    "default", "dns",   "device-info", "gateway"};
  return std::any_of(kKeys.begin(), kKeys.end(), [&](const char* k) { return key == k; });
}

Json to_json(const Entry& e, const StatusInput& in, const Json& device_info, const std::vector<std::string>& gateways) {
  Json out = Json::object();
  out["name"] = in.name;
  if (!e.interface.empty()) out["interface"] = e.interface;
  if (!e.ips.empty()) out["ips"] = e.ips;
  if (!e.mac.empty()) out["mac"] = e.mac;
  if (e.mtu != 0) out["mtu"] = e.mtu;
  if (e.is_default) out["default"] = true;
  out["dns"] = dns_json(in.dns);
  if (!device_info.is_null()) out["device-info"] = device_info;
  if (!gateways.empty()) out["gateway"] = gateways;
  if (in.extra_fields.is_object()) {
    for (const auto& [key, value] : in.extra_fields.items()) {
      if (!is_reserved_key(key)) out[key] = value;
    }
  } else if (!in.extra_fields.is_null()) {
    throw cni::CniError(cni::ErrorCode::Internal,
                        "network-status: extra fields of " + in.name + " are not a JSON object");
  }
  return out;
}

/// Multus's CreateNetworkStatuses for one attachment.
std::vector<Entry> entries_for(const StatusInput& in) {
  std::vector<Entry> entries;
  if (in.interfaces.empty()) return entries;

  if (in.interfaces.size() == 1) {  // CreateNetworkStatus: one entry, every IP.
    Entry e;
    const StatusInterface& iface = in.interfaces.front();
    if (!iface.sandbox.empty()) {
      e.interface = iface.name;
      e.mac = iface.mac;
      e.mtu = iface.mtu;
    }
    for (const StatusIp& ip : in.ips) e.ips.push_back(go_ip_string(ip.address));
    e.is_default = in.is_default;
    entries.push_back(std::move(e));
    return entries;
  }

  int gateway_index = -1;  // interface of the first IP that has both a gateway and an index
  if (in.is_default) {
    for (const StatusIp& ip : in.ips) {
      if (!ip.gateway.empty() && ip.interface) {
        gateway_index = *ip.interface;
        break;
      }
    }
  }
  std::map<int, std::size_t> by_result_index;
  bool default_set = false;
  for (std::size_t i = 0; i < in.interfaces.size(); ++i) {
    const StatusInterface& iface = in.interfaces[i];
    if (iface.sandbox.empty()) continue;
    Entry e;
    e.interface = iface.name;
    e.mac = iface.mac;
    e.mtu = iface.mtu;
    if (in.is_default && !default_set &&
        (static_cast<int>(i) == gateway_index || gateway_index == -1)) {
      e.is_default = true;
      default_set = true;
    }
    by_result_index[static_cast<int>(i)] = entries.size();
    entries.push_back(std::move(e));
  }
  for (const StatusIp& ip : in.ips) {
    if (ip.interface) {
      auto it = by_result_index.find(*ip.interface);
      if (it != by_result_index.end()) entries[it->second].ips.push_back(go_ip_string(ip.address));
    } else if (!entries.empty()) {
      entries.back().ips.push_back(go_ip_string(ip.address));
    }
  }
  return entries;
}

}  // namespace

std::string go_ip_string(const std::string& text) {
  const std::string bare = text.substr(0, text.find('/'));
  if (bare.empty() || bare.size() > 64 || bare.find('\0') != std::string::npos) return bare;
  std::array<unsigned char, 16> b{};
  char buf[INET6_ADDRSTRLEN];
  if (inet_pton(AF_INET, bare.c_str(), b.data()) == 1) {
    return inet_ntop(AF_INET, b.data(), buf, sizeof buf) ? std::string(buf) : bare;
  }
  if (inet_pton(AF_INET6, bare.c_str(), b.data()) != 1) return bare;
  const bool v4_mapped = std::all_of(b.begin(), b.begin() + 10, [](unsigned char c) { return c == 0; }) &&
                         b[10] == 0xff && b[11] == 0xff;
  if (v4_mapped) return inet_ntop(AF_INET, b.data() + 12, buf, sizeof buf) ? std::string(buf) : bare;
  // RFC 5952: the longest run (first on ties) of at least two zero groups becomes "::".
  std::array<unsigned, 8> group{};
  for (int g = 0; g < 8; ++g) group[g] = (b[2 * g] << 8) | b[2 * g + 1];
  int best_start = -1, best_len = 0;
  for (int g = 0; g < 8;) {
    if (group[g] != 0) {
      ++g;
      continue;
    }
    int end = g;
    while (end < 8 && group[end] == 0) ++end;
    if (end - g > best_len) {
      best_start = g;
      best_len = end - g;
    }
    g = end;
  }
  if (best_len < 2) best_start = -1;
  std::string out;
  for (int g = 0; g < 8; ++g) {
    if (g == best_start) {
      out += "::";
      g += best_len - 1;
      continue;
    }
    if (!out.empty() && out.back() != ':') out += ':';
    char hex[8];
    std::snprintf(hex, sizeof hex, "%x", group[g]);
    out += hex;
  }
  return out;
}

std::vector<std::string> installed_default_gateways(const std::vector<StatusRoute>& routes,
                                                    const std::vector<StatusIp>& ips) {
  auto family_of_prefix = [](const std::string& cidr) {
    auto p = util::parse_cidr(cidr);
    return p ? p->address.family : 0;
  };
  std::vector<std::string> out;
  for (const StatusRoute& route : routes) {
    if (!util::is_default_route_dst(route.dst)) continue;
    std::optional<util::IpAddress> gw = util::parse_ip(route.gw);
    if (!gw) {
      const int family = family_of_prefix(route.dst);
      for (const StatusIp& ip : ips) {
        auto candidate = util::parse_ip(ip.gateway);
        if (candidate && candidate->family == family && family_of_prefix(ip.address) == family) {
          gw = candidate;
          break;
        }
      }
    }
    if (!gw) continue;
    std::string text = gw->str();
    if (std::find(out.begin(), out.end(), text) == out.end()) out.push_back(std::move(text));
  }
  return out;
}

std::string go_marshal_indent(const Json& value) {
  std::string out;
  write_go_value(out, value, 0);
  return out;
}

std::string render_network_status(const std::vector<StatusInput>& attachments) {
  std::string out = "[";
  bool first = true;
  for (const StatusInput& in : attachments) {
    const Json device_info = normalize_device_info(in.device_info);
    std::vector<std::string> gateways;
    gateways.reserve(in.gateways.size());
    for (const std::string& gw : in.gateways) gateways.push_back(go_ip_string(gw));
    for (const Entry& e : entries_for(in)) {
      if (!first) out += ',';
      first = false;
      out += go_marshal_indent(to_json(e, in, device_info, gateways));
    }
  }
  out += ']';
  return out;
}

}  // namespace manifold::k8s
