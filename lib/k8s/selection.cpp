// Parser and validator of the NPWG network selection annotations. The comma form follows Multus's
// item grammar and messages; the JSON form decodes like Go's encoding/json into Multus's selection
// element (keys matched exactly, else case-insensitively; unknown keys ignored; null = absent) and
// is then validated as Multus does (MAC, GUID, IPs, default-route), plus manifold's own checks:
// non-empty Kubernetes-valid names, strict interface names, port and bandwidth ranges, and size,
// element-count and nesting bounds so hostile annotations are rejected quickly.
#include "k8s/selection.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <limits>

#include "cni/error.h"

namespace manifold::k8s {
namespace {

constexpr std::string_view kAnnotationPrefix = "parsePodNetworkAnnotation: ";
constexpr std::string_view kObjectNamePrefix = "parsePodNetworkAnnotation: parsePodNetworkObjectName: ";
constexpr std::string_view kJsonPrefix =
    "parsePodNetworkAnnotation: failed to parse pod Network Attachment Selection Annotation JSON "
    "format: ";
constexpr int kMaxJsonDepth = 32;
constexpr std::size_t kMaxNamespaceLength = 63;
constexpr std::size_t kMaxNameLength = 253;
constexpr std::size_t kMaxQuotedLength = 64;

[[noreturn]] void fail(const std::string& msg) {
  throw cni::CniError(cni::ErrorCode::InvalidConfig, sanitize_utf8(msg));
}

bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_ascii_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ascii_space(s.back())) s.remove_suffix(1);
  return s;
}

/// Length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates), or 0.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  auto cont = [&](std::size_t k) { return k < s.size() && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80; };
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const unsigned char c1 = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(i + 1) || !cont(i + 2) || (c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F)) return 0;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3) || (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F)) {
      return 0;
    }
    return 4;
  }
  return 0;
}

/// Shortens untrusted text quoted in an error message (never inside a UTF-8 sequence).
std::string shown(std::string_view s) {
  if (s.size() <= kMaxQuotedLength) return std::string(s);
  std::size_t cut = kMaxQuotedLength;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return std::string(s.substr(0, cut)) + "...";
}

/// Quotes like Go's %q for the texts we quote (ASCII escapes; UTF-8 kept).
std::string go_quote(std::string_view raw) {
  std::size_t cut = std::min(raw.size(), kMaxQuotedLength);
  while (cut < raw.size() && cut > 0 && (static_cast<unsigned char>(raw[cut]) & 0xC0) == 0x80) --cut;
  std::string_view s = raw.substr(0, cut);
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\a': out += "\\a"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\v': out += "\\v"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\x";
          out += hex[c >> 4];
          out += hex[c & 0xf];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  if (raw.size() > kMaxQuotedLength) out += "...";
  return out;
}

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$` (DNS-1123 label characters, no length bound).
bool matches_dns_label(std::string_view s) {
  if (s.empty() || !is_lower_alnum(s.front()) || !is_lower_alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return is_lower_alnum(c) || c == '-'; });
}

/// A DNS-1123 subdomain: labels joined by '.', at most 253 characters.
bool is_dns_subdomain(std::string_view s) {
  if (s.empty() || s.size() > kMaxNameLength) return false;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = s.find('.', start);
    if (!matches_dns_label(s.substr(start, dot == std::string_view::npos ? dot : dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// Parses an IP like Go's net.ParseIP; returns the family (AF_INET/AF_INET6) or 0.
int ip_family(std::string_view text) {
  if (text.empty() || text.size() > 64 || text.find('\0') != std::string_view::npos) return 0;
  std::string z(text);
  unsigned char buf[16];
  if (inet_pton(AF_INET, z.c_str(), buf) == 1) return AF_INET;
  if (inet_pton(AF_INET6, z.c_str(), buf) == 1) return AF_INET6;
  return 0;
}

// ---- comma form -------------------------------------------------------------------------------

SelectionElement parse_comma_item(std::string_view item, std::size_t index) {
  std::string_view ns;
  std::string_view rest = item;
  std::size_t slashes = std::count(item.begin(), item.end(), '/');
  if (slashes > 1) fail(std::string(kObjectNamePrefix) + "Invalid network object (failed at '/')");
  if (slashes == 1) {
    std::size_t slash = item.find('/');
    ns = trim(item.substr(0, slash));
    rest = item.substr(slash + 1);
  }
  std::string_view name = rest;
  std::string_view ifname;
  std::size_t ats = std::count(rest.begin(), rest.end(), '@');
  if (ats > 1) fail(std::string(kObjectNamePrefix) + "Invalid network object (failed at '@')");
  if (ats == 1) {
    std::size_t at = rest.find('@');
    name = rest.substr(0, at);
    ifname = trim(rest.substr(at + 1));
  }
  name = trim(name);

  for (std::string_view part : {ns, name}) {
    if (!part.empty() && !matches_dns_label(part)) {
      fail(std::string(kObjectNamePrefix) +
           "Failed to parse: one or more items did not match comma-delimited format (must consist of "
           "lower case alphanumeric characters). Must start and end with an alphanumeric character), "
           "mismatch @ '" + shown(part) + "'");
    }
  }
  if (!ifname.empty() &&
      (ifname.size() > 15 || ifname.find_first_of(" \t\n\v\f\r/") != std::string_view::npos)) {
    fail(std::string(kObjectNamePrefix) +
         "Failed to parse interface name: must be less than 15 chars and not contain '/' or spaces. "
         "interface name '" + shown(ifname) + "'");
  }
  // manifold's own checks.
  if (name.empty()) {
    fail(std::string(kAnnotationPrefix) + "item " + std::to_string(index + 1) +
         " has an empty network name");
  }
  SelectionElement e;
  e.namespace_ = std::string(ns);
  e.name = std::string(name);
  e.interface = std::string(ifname);
  return e;
}

std::vector<SelectionElement> parse_comma_form(std::string_view value) {
  std::size_t items = std::count(value.begin(), value.end(), ',') + 1;
  if (items > kMaxSelectionElements) {
    fail(std::string(kAnnotationPrefix) + "too many networks (" + std::to_string(items) +
         " items, at most " + std::to_string(kMaxSelectionElements) + " allowed)");
  }
  std::vector<SelectionElement> out;
  out.reserve(items);
  std::size_t start = 0;
  for (std::size_t index = 0;; ++index) {
    std::size_t comma = value.find(',', start);
    std::string_view item = value.substr(start, comma == std::string_view::npos ? comma : comma - start);
    out.push_back(parse_comma_item(trim(item), index));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

// ---- JSON form --------------------------------------------------------------------------------

/// Go's encoding/json field matching: exact, else ASCII case-insensitive.
bool key_matches(std::string_view key, std::string_view field) {
  return key.size() == field.size() &&
         std::equal(key.begin(), key.end(), field.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         });
}

[[noreturn]] void fail_field(std::size_t index, std::string_view field, const std::string& what) {
  fail(std::string(kJsonPrefix) + "element " + std::to_string(index + 1) + ": \"" + std::string(field) +
       "\" " + what);
}

std::string decode_string(const Json& v, std::size_t index, std::string_view field) {
  if (v.is_null()) return {};
  if (!v.is_string()) fail_field(index, field, "must be a string, not " + std::string(v.type_name()));
  return v.get<std::string>();
}

std::vector<std::string> decode_string_list(const Json& v, std::size_t index, std::string_view field) {
  std::vector<std::string> out;
  if (v.is_null()) return out;
  if (!v.is_array()) fail_field(index, field, "must be a list of strings, not " + std::string(v.type_name()));
  for (const Json& item : v) {
    if (!item.is_string()) fail_field(index, field, "must be a list of strings");
    out.push_back(item.get<std::string>());
  }
  return out;
}

int64_t decode_int(const Json& v, std::size_t index, std::string_view field) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) fail_field(index, field, "is out of range");
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  fail_field(index, field, "must be an integer, not " + std::string(v.is_number() ? "a fraction" : v.type_name()));
}

int decode_port(const Json& v, std::size_t index, std::string_view field) {
  int64_t port = v.is_null() ? 0 : decode_int(v, index, field);
  if (port < 1 || port > 65535) fail_field(index, field, "must be a port number between 1 and 65535");
  return static_cast<int>(port);
}

PortMapping decode_port_mapping(const Json& v, std::size_t index) {
  if (!v.is_object()) fail_field(index, "portMappings", "entries must be objects");
  PortMapping pm;
  Json host_port, container_port;
  for (const auto& [key, value] : v.items()) {
    if (key_matches(key, "hostPort")) host_port = value;
    else if (key_matches(key, "containerPort")) container_port = value;
    else if (key_matches(key, "protocol")) pm.protocol = decode_string(value, index, "portMappings.protocol");
    else if (key_matches(key, "hostIP")) pm.host_ip = decode_string(value, index, "portMappings.hostIP");
  }
  pm.host_port = decode_port(host_port, index, "portMappings.hostPort");
  pm.container_port = decode_port(container_port, index, "portMappings.containerPort");
  if (!pm.protocol.empty()) {
    std::string lower = pm.protocol;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower != "tcp" && lower != "udp" && lower != "sctp") {
      fail_field(index, "portMappings.protocol", "must be tcp, udp or sctp, not '" + shown(pm.protocol) + "'");
    }
  }
  if (!pm.host_ip.empty() && ip_family(pm.host_ip) == 0) {
    fail_field(index, "portMappings.hostIP", "is not an IP address: '" + shown(pm.host_ip) + "'");
  }
  return pm;
}

Bandwidth decode_bandwidth(const Json& v, std::size_t index) {
  if (!v.is_object()) fail_field(index, "bandwidth", "must be an object, not " + std::string(v.type_name()));
  Bandwidth bw;
  auto field = [&](const Json& value, std::string_view name) -> std::optional<int64_t> {
    if (value.is_null()) return std::nullopt;
    int64_t n = decode_int(value, index, name);
    if (n < 0) fail_field(index, name, "must not be negative");
    return n;
  };
  for (const auto& [key, value] : v.items()) {
    if (key_matches(key, "ingressRate")) bw.ingress_rate = field(value, "bandwidth.ingressRate");
    else if (key_matches(key, "ingressBurst")) bw.ingress_burst = field(value, "bandwidth.ingressBurst");
    else if (key_matches(key, "egressRate")) bw.egress_rate = field(value, "bandwidth.egressRate");
    else if (key_matches(key, "egressBurst")) bw.egress_burst = field(value, "bandwidth.egressBurst");
  }
  return bw;
}

/// Decodes one element like Go's json.Unmarshal into Multus's NetworkSelectionElement.
SelectionElement decode_element(const Json& v, std::size_t index, std::string& deprecated_interface) {
  if (!v.is_object()) {
    fail(std::string(kJsonPrefix) + "element " + std::to_string(index + 1) + " must be an object, not " +
         v.type_name());
  }
  SelectionElement e;
  for (const auto& [key, value] : v.items()) {
    if (key_matches(key, "name")) {
      e.name = decode_string(value, index, "name");
    } else if (key_matches(key, "namespace")) {
      e.namespace_ = decode_string(value, index, "namespace");
    } else if (key_matches(key, "ips")) {
      e.ips = decode_string_list(value, index, "ips");
    } else if (key_matches(key, "mac")) {
      e.mac = decode_string(value, index, "mac");
    } else if (key_matches(key, "infiniband-guid")) {
      e.infiniband_guid = decode_string(value, index, "infiniband-guid");
    } else if (key_matches(key, "interface")) {
      e.interface = decode_string(value, index, "interface");
    } else if (key_matches(key, "interfaceRequest")) {
      deprecated_interface = decode_string(value, index, "interfaceRequest");
    } else if (key_matches(key, "portMappings")) {
      e.port_mappings.clear();
      if (value.is_null()) continue;
      if (!value.is_array()) fail_field(index, "portMappings", "must be a list, not " + std::string(value.type_name()));
      for (const Json& pm : value) e.port_mappings.push_back(decode_port_mapping(pm, index));
    } else if (key_matches(key, "bandwidth")) {
      e.bandwidth.reset();
      if (!value.is_null()) e.bandwidth = decode_bandwidth(value, index);
    } else if (key_matches(key, "deviceID")) {
      e.device_id = decode_string(value, index, "deviceID");
    } else if (key_matches(key, "cni-args")) {
      if (!value.is_null() && !value.is_object()) {
        fail_field(index, "cni-args", "must be an object, not " + std::string(value.type_name()));
      }
      e.cni_args = value;
    } else if (key_matches(key, "default-route")) {
      e.default_route.clear();
      e.has_default_route = !value.is_null();
      if (value.is_null()) continue;
      if (!value.is_array()) fail_field(index, "default-route", "must be a list of IP addresses");
      for (const Json& gw : value) {
        if (!gw.is_string()) fail_field(index, "default-route", "must be a list of IP addresses");
        const std::string& text = gw.get_ref<const std::string&>();
        if (ip_family(text) == 0) fail(std::string(kJsonPrefix) + "invalid IP address: " + shown(text));
        e.default_route.push_back(text);
      }
    } else if (key_matches(key, "ipam-claim-reference")) {
      e.ipam_claim_reference = decode_string(value, index, "ipam-claim-reference");
    }
  }
  return e;
}

std::vector<SelectionElement> parse_json_form(std::string_view value) {
  Json doc;
  try {
    doc = Json::parse(value, [](int depth, Json::parse_event_t, Json&) {
      if (depth > kMaxJsonDepth) {
        fail(std::string(kJsonPrefix) + "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
      }
      return true;
    });
  } catch (const nlohmann::json::exception& e) {
    fail(std::string(kJsonPrefix) + e.what());
  }
  if (!doc.is_array()) {
    fail(std::string(kJsonPrefix) + "expected a JSON list of network selection elements, not a JSON " +
         doc.type_name());
  }
  if (doc.size() > kMaxSelectionElements) {
    fail(std::string(kAnnotationPrefix) + "too many networks (" + std::to_string(doc.size()) +
         " elements, at most " + std::to_string(kMaxSelectionElements) + " allowed)");
  }
  std::vector<SelectionElement> out;
  out.reserve(doc.size());
  for (std::size_t i = 0; i < doc.size(); ++i) {
    std::string deprecated_interface;
    SelectionElement e = decode_element(doc[i], i, deprecated_interface);
    // Multus's post-decode checks, in its order.
    if (!e.mac.empty() && !is_valid_hardware_address(e.mac)) {
      fail(std::string(kAnnotationPrefix) + "failed to mac: address " + shown(e.mac) + ": invalid MAC address");
    }
    if (!e.infiniband_guid.empty() && !is_valid_hardware_address(e.infiniband_guid)) {
      fail(std::string(kAnnotationPrefix) + "failed to validate infiniband GUID: address " +
           shown(e.infiniband_guid) + ": invalid MAC address");
    }
    for (const std::string& ip : e.ips) {
      if (ip.find('/') != std::string::npos) {
        if (!is_valid_cidr(ip)) {
          fail("failed to parse CIDR " + go_quote(ip) + ": invalid CIDR address: " + shown(ip));
        }
      } else if (ip_family(ip) == 0) {
        fail("failed to parse IP address " + go_quote(ip));
      }
    }
    if (!deprecated_interface.empty() && e.interface.empty()) e.interface = deprecated_interface;
    // manifold's own checks.
    if (e.name.empty()) {
      fail(std::string(kAnnotationPrefix) + "element " + std::to_string(i + 1) + " has an empty network name");
    }
    if (!is_dns_subdomain(e.name)) {
      fail(std::string(kAnnotationPrefix) + "invalid network name '" + shown(e.name) +
           "': must be a DNS-1123 subdomain (lower case alphanumerics, '-' and '.', at most 253 characters)");
    }
    out.push_back(std::move(e));
  }
  return out;
}

/// Checks shared by both forms after namespace defaulting.
void finish(std::vector<SelectionElement>& elements, const std::string& default_namespace) {
  for (SelectionElement& e : elements) {
    if (e.namespace_.empty()) e.namespace_ = default_namespace;
    if (e.namespace_.empty()) {
      fail(std::string(kAnnotationPrefix) + "network '" + shown(e.name) + "' has no namespace");
    }
    if (e.namespace_.size() > kMaxNamespaceLength || !matches_dns_label(e.namespace_)) {
      fail(std::string(kAnnotationPrefix) + "invalid namespace '" + shown(e.namespace_) + "' for network '" +
           shown(e.name) + "': must be a DNS-1123 label (lower case alphanumerics and '-', at most 63 characters)");
    }
    if (e.name.size() > kMaxNameLength) {
      fail(std::string(kAnnotationPrefix) + "network name '" + shown(e.name) + "' is longer than 253 characters");
    }
    if (!e.interface.empty() && !is_valid_interface_name(e.interface)) {
      fail(std::string(kAnnotationPrefix) + "invalid interface name '" + shown(e.interface) + "' for network " +
           e.namespace_ + "/" + e.name + ": must be 1-15 characters of [A-Za-z0-9_.-]");
    }
  }
}

std::vector<SelectionElement> parse_selection(std::string_view value, const std::string& default_namespace,
                                              std::string_view annotation) {
  if (value.size() > kMaxAnnotationBytes) {
    fail(std::string(kAnnotationPrefix) + "the " + std::string(annotation) + " annotation is too large (" +
         std::to_string(value.size()) + " bytes, at most " + std::to_string(kMaxAnnotationBytes) + " allowed)");
  }
  if (trim(value).empty()) return {};
  std::vector<SelectionElement> out =
      value.find_first_of("[{\"") != std::string_view::npos ? parse_json_form(value) : parse_comma_form(value);
  finish(out, default_namespace);
  return out;
}

}  // namespace

std::vector<SelectionElement> parse_networks_annotation(std::string_view value,
                                                        const std::string& default_namespace) {
  return parse_selection(value, default_namespace, kNetworksAnnotation);
}

SelectionElement parse_default_network_annotation(std::string_view value, const std::string& multus_namespace) {
  std::vector<SelectionElement> elements;
  try {
    elements = parse_selection(value, multus_namespace, kDefaultNetworkAnnotation);
  } catch (const cni::CniError& e) {
    fail("tryLoadK8sPodDefaultNetwork: failed to parse CRD object: " + e.msg());
  }
  if (elements.size() > 1) {
    fail("tryLoadK8sPodDefaultNetwork: more than one default network is specified: " + shown(value));
  }
  if (elements.empty()) {
    fail("tryLoadK8sPodDefaultNetwork: no default network is specified in the " +
         std::string(kDefaultNetworkAnnotation) + " annotation");
  }
  return std::move(elements.front());
}

Json runtime_config_for(const SelectionElement& element) {
  Json rc = Json::object();
  if (!element.port_mappings.empty()) {
    Json list = Json::array();
    for (const PortMapping& pm : element.port_mappings) {
      Json entry = {{"hostPort", pm.host_port}, {"containerPort", pm.container_port}};
      if (!pm.protocol.empty()) entry["protocol"] = pm.protocol;
      if (!pm.host_ip.empty()) entry["hostIP"] = pm.host_ip;
      list.push_back(std::move(entry));
    }
    rc["portMappings"] = std::move(list);
  }
  if (element.bandwidth) {
    Json bw = Json::object();
    if (element.bandwidth->ingress_rate) bw["ingressRate"] = *element.bandwidth->ingress_rate;
    if (element.bandwidth->ingress_burst) bw["ingressBurst"] = *element.bandwidth->ingress_burst;
    if (element.bandwidth->egress_rate) bw["egressRate"] = *element.bandwidth->egress_rate;
    if (element.bandwidth->egress_burst) bw["egressBurst"] = *element.bandwidth->egress_burst;
    rc["bandwidth"] = std::move(bw);
  }
  if (!element.ips.empty()) rc["ips"] = element.ips;
  if (!element.mac.empty()) rc["mac"] = element.mac;
  if (!element.infiniband_guid.empty()) rc["infinibandGUID"] = element.infiniband_guid;
  if (!element.device_id.empty()) rc["deviceID"] = element.device_id;
  return rc;
}

std::string cni_args_for(const SelectionElement& element) {
  std::string out;
  if (!element.ips.empty()) {
    out = "IP=";
    for (std::size_t i = 0; i < element.ips.size(); ++i) {
      if (i) out += ',';
      out += element.ips[i];
    }
  }
  if (!element.mac.empty()) {
    if (!out.empty()) out += ';';
    out += "MAC=" + element.mac;
  }
  return out;
}

std::string sanitize_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_length(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

bool is_valid_interface_name(std::string_view name) {
  if (name.empty() || name.size() > 15 || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
  });
}

bool is_valid_ip(std::string_view text) { return ip_family(text) != 0; }

bool is_valid_cidr(std::string_view text) {
  std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) return false;
  int family = ip_family(text.substr(0, slash));
  std::string_view mask = text.substr(slash + 1);
  if (family == 0 || mask.empty() || mask.size() > 3) return false;
  int bits = 0;
  for (char c : mask) {
    if (c < '0' || c > '9') return false;
    bits = bits * 10 + (c - '0');
  }
  return bits <= (family == AF_INET ? 32 : 128);
}

bool is_valid_hardware_address(std::string_view s) {
  if (s.size() < 14) return false;
  auto octets_ok = [](std::size_t n) { return n == 6 || n == 8 || n == 20; };
  if (s[2] == ':' || s[2] == '-') {
    if ((s.size() + 1) % 3 != 0 || !octets_ok((s.size() + 1) / 3)) return false;
    const char sep = s[2];
    for (std::size_t x = 0; x < s.size(); x += 3) {
      if (hex_value(s[x]) < 0 || hex_value(s[x + 1]) < 0) return false;
      if (x + 2 < s.size() && s[x + 2] != sep) return false;
    }
    return true;
  }
  if (s[4] == '.') {
    if ((s.size() + 1) % 5 != 0 || !octets_ok(2 * (s.size() + 1) / 5)) return false;
    for (std::size_t x = 0; x < s.size(); x += 5) {
      for (std::size_t k = 0; k < 4; ++k) {
        if (hex_value(s[x + k]) < 0) return false;
      }
      if (x + 4 < s.size() && s[x + 4] != '.') return false;
    }
    return true;
  }
  return false;
}

}  // namespace manifold::k8s
