// network-status rendering: entries built as ordered JSON following Multus's rules (one per
// interface of a result that has a sandbox, device-info normalised like Go's decoder, DNS and the
// default-route gateways), printed by the Go-compatible writer of go_json.h so the annotation is
// byte-identical to what Multus writes for the same results.
#include "k8s/network_status.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "cni/error.h"
#include "k8s/go_json.h"
#include "util/ip.h"

namespace manifold::k8s {
namespace {

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
  static const std::array<const char*, 9> kKeys = {"name",    "interface", "ips",         "mac",    "mtu",
                                                   "default", "dns",       "device-info", "gateway"};
  return std::any_of(kKeys.begin(), kKeys.end(), [&](const char* k) { return key == k; });
}

Json to_json(const Entry& e, const StatusInput& in, const std::vector<std::string>& gateways) {
  Json out = Json::object();
  out["name"] = in.name;
  if (!e.interface.empty()) out["interface"] = e.interface;
  if (!e.ips.empty()) out["ips"] = e.ips;
  if (!e.mac.empty()) out["mac"] = e.mac;
  if (e.mtu != 0) out["mtu"] = e.mtu;
  if (e.is_default) out["default"] = true;
  out["dns"] = dns_json(in.dns);
  if (!in.device_info.is_null()) out["device-info"] = in.device_info;
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
    if (in.is_default && !default_set && (static_cast<int>(i) == gateway_index || gateway_index == -1)) {
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

std::string render_network_status(const std::vector<StatusInput>& attachments) {
  std::string out = "[";
  bool first = true;
  for (const StatusInput& in : attachments) {
    std::vector<std::string> gateways;
    gateways.reserve(in.gateways.size());
    for (const std::string& gw : in.gateways) gateways.push_back(go_ip_string(gw));
    for (const Entry& e : entries_for(in)) {
      if (!first) out += ',';
      first = false;
      out += go_marshal_indent(to_json(e, in, gateways));
    }
  }
  out += ']';
  return out;
}

}  // namespace manifold::k8s
