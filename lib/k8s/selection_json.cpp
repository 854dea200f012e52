// The JSON list form of the network selection annotation: decoded like Go's encoding/json into
// Multus's selection element (keys matched exactly, else case-insensitively; unknown keys ignored;
// null = absent), then validated as Multus does (MAC, GUID, IPs, default-route) plus manifold's name
// checks and nesting and element-count bounds.
#include <algorithm>
#include <cctype>
#include <limits>

#include "k8s/selection_syntax.h"
#include "util/ascii.h"
#include "util/json_error.h"

namespace manifold::k8s::selection_syntax {
namespace {

[[noreturn]] void fail_field(std::size_t index, std::string_view field, const std::string& what) {
  fail(std::string(kJsonPrefix) + "element " + std::to_string(index + 1) + ": \"" + std::string(field) + "\" " + what);
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
    if (util::iequals_ascii(key, "hostPort"))
      host_port = value;
    else if (util::iequals_ascii(key, "containerPort"))
      container_port = value;
    else if (util::iequals_ascii(key, "protocol"))
      pm.protocol = decode_string(value, index, "portMappings.protocol");
    else if (util::iequals_ascii(key, "hostIP"))
      pm.host_ip = decode_string(value, index, "portMappings.hostIP");
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
    if (util::iequals_ascii(key, "ingressRate"))
      bw.ingress_rate = field(value, "bandwidth.ingressRate");
    else if (util::iequals_ascii(key, "ingressBurst"))
      bw.ingress_burst = field(value, "bandwidth.ingressBurst");
    else if (util::iequals_ascii(key, "egressRate"))
      bw.egress_rate = field(value, "bandwidth.egressRate");
    else if (util::iequals_ascii(key, "egressBurst"))
      bw.egress_burst = field(value, "bandwidth.egressBurst");
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
    if (util::iequals_ascii(key, "name")) {
      e.name = decode_string(value, index, "name");
    } else if (util::iequals_ascii(key, "namespace")) {
      e.namespace_ = decode_string(value, index, "namespace");
    } else if (util::iequals_ascii(key, "ips")) {
      e.ips = decode_string_list(value, index, "ips");
    } else if (util::iequals_ascii(key, "mac")) {
      e.mac = decode_string(value, index, "mac");
    } else if (util::iequals_ascii(key, "infiniband-guid")) {
      e.infiniband_guid = decode_string(value, index, "infiniband-guid");
    } else if (util::iequals_ascii(key, "interface")) {
      e.interface = decode_string(value, index, "interface");
    } else if (util::iequals_ascii(key, "interfaceRequest")) {
      deprecated_interface = decode_string(value, index, "interfaceRequest");
    } else if (util::iequals_ascii(key, "portMappings")) {
      e.port_mappings.clear();
      if (value.is_null()) continue;
      if (!value.is_array()) fail_field(index, "portMappings", "must be a list, not " + std::string(value.type_name()));
      for (const Json& pm : value) e.port_mappings.push_back(decode_port_mapping(pm, index));
    } else if (util::iequals_ascii(key, "bandwidth")) {
      e.bandwidth.reset();
      if (!value.is_null()) e.bandwidth = decode_bandwidth(value, index);
    } else if (util::iequals_ascii(key, "deviceID")) {
      e.device_id = decode_string(value, index, "deviceID");
    } else if (util::iequals_ascii(key, "cni-args")) {
      if (!value.is_null() && !value.is_object()) {
        fail_field(index, "cni-args", "must be an object, not " + std::string(value.type_name()));
      }
      e.cni_args = value;
    } else if (util::iequals_ascii(key, "default-route")) {
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
    } else if (util::iequals_ascii(key, "ipam-claim-reference")) {
      e.ipam_claim_reference = decode_string(value, index, "ipam-claim-reference");
    }
  }
  return e;
}

}  // namespace

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
    fail(std::string(kJsonPrefix) + util::describe_json_error(e));
  }
  if (!doc.is_array()) {
    fail(std::string(kJsonPrefix) + "expected a JSON list of network selection elements, not a JSON " +
         doc.type_name());
  }
  if (doc.size() > kMaxSelectionElements) {
    fail(std::string(kAnnotationPrefix) + "too many networks (" + std::to_string(doc.size()) + " elements, at most " +
         std::to_string(kMaxSelectionElements) + " allowed)");
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
      fail(std::string(kAnnotationPrefix) + "failed to validate infiniband GUID: address " + shown(e.infiniband_guid) +
           ": invalid MAC address");
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

}  // namespace manifold::k8s::selection_syntax
