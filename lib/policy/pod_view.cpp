// Reading pods and namespaces for policy evaluation: identity and labels strictly, network-status
// and container ports defensively (what cannot be read contributes nothing).
#include "policy/pod_view.h"

#include "k8s/api_status.h"
#include "policy/policy_error.h"
#include "util/json_parse.h"

namespace manifold::policy {

namespace {

constexpr std::size_t kMaxStatusBytes = 1024 * 1024;  // a network-status larger than this is ignored
constexpr int kMaxStatusDepth = 16;

std::string read_name(const Json& object, const char* key, bool label, const std::string& kind) {
  const Json* value = json_at(object, {"metadata", key});
  const bool ok = value != nullptr && value->is_string() &&
                  (label ? k8s::is_dns1123_label(value->get_ref<const std::string&>())
                         : k8s::is_dns1123_subdomain(value->get_ref<const std::string&>()));
  if (!ok) throw PolicyError(std::string("metadata.") + key, "must be the " + kind + "'s " + key);
  return value->get<std::string>();
}

Labels labels_of(const Json& object) {
  const Json* labels = json_at(object, {"metadata", "labels"});
  return labels == nullptr ? Labels{} : read_labels(*labels, "metadata.labels");
}

// The named ports of one container; entries that cannot be read are skipped.
void add_ports(const Json& container, std::vector<ContainerPort>& out) {
  const Json* ports = json_at(container, {"ports"});
  if (ports == nullptr || !ports->is_array()) return;
  for (const Json& p : *ports) {
    const Json* name = json_at(p, {"name"});
    const Json* number = json_at(p, {"containerPort"});
    if (name == nullptr || !name->is_string() || !is_port_name(name->get_ref<const std::string&>())) continue;
    if (number == nullptr || !number->is_number_integer() || number->get<long long>() < 1 ||
        number->get<long long>() > 65535)
      continue;
    ContainerPort port{name->get<std::string>(), Protocol::Tcp, static_cast<std::uint16_t>(number->get<long long>())};
    const std::string protocol = json_string_at(p, {"protocol"});
    if (protocol == "UDP") {
      port.protocol = Protocol::Udp;
    } else if (protocol == "SCTP") {
      port.protocol = Protocol::Sctp;
    } else if (!protocol.empty() && protocol != "TCP") {
      continue;
    }
    out.push_back(std::move(port));
  }
}

}  // namespace

const std::vector<util::IpAddress>& PodView::ips_on(std::string_view network) const {
  static const std::vector<util::IpAddress> kNone;
  const auto it = ips.find(network);
  return it == ips.end() ? kNone : it->second;
}

std::vector<std::uint16_t> PodView::named_ports(std::string_view name, Protocol protocol) const {
  std::vector<std::uint16_t> out;
  for (const ContainerPort& p : ports)
    if (p.name == name && p.protocol == protocol) out.push_back(p.port);
  return out;
}

std::map<std::string, std::vector<util::IpAddress>, std::less<>> read_network_status_ips(std::string_view value) {
  std::map<std::string, std::vector<util::IpAddress>, std::less<>> out;
  if (value.size() > kMaxStatusBytes) return out;
  const Json doc = util::parse_json_bounded(std::string(value), kMaxStatusDepth);
  if (!doc.is_array()) return out;
  for (const Json& entry : doc) {
    const Json* name = json_at(entry, {"name"});
    const Json* ips = json_at(entry, {"ips"});
    if (name == nullptr || !name->is_string() || ips == nullptr || !ips->is_array()) continue;
    std::vector<util::IpAddress>& list = out[name->get<std::string>()];
    for (const Json& ip : *ips) {
      const auto parsed = ip.is_string() ? util::parse_ip_or_cidr(ip.get_ref<const std::string&>()) : std::nullopt;
      if (parsed) list.push_back(parsed->address);
    }
  }
  return out;
}

PodView read_pod_view(const Json& pod) {
  if (!pod.is_object()) throw PolicyError("(pod)", "is not a JSON object");
  PodView view;
  view.ns = read_name(pod, "namespace", true, "pod");
  view.name = read_name(pod, "name", false, "pod");
  view.labels = labels_of(pod);
  if (const Json* spec = json_at(pod, {"spec"}); spec != nullptr && spec->is_object()) {
    view.ports_known = true;
    if (const Json* containers = json_at(*spec, {"containers"}); containers != nullptr && containers->is_array())
      for (const Json& c : *containers) add_ports(c, view.ports);
    if (const Json* init = json_at(*spec, {"initContainers"}); init != nullptr && init->is_array())
      for (const Json& c : *init)
        if (json_string_at(c, {"restartPolicy"}) == "Always") add_ports(c, view.ports);  // sidecars
  }
  const Json* status = json_at(pod, {"metadata", "annotations", kNetworkStatusAnnotation.data()});
  if (status != nullptr && status->is_string())
    view.ips = read_network_status_ips(status->get_ref<const std::string&>());
  return view;
}

std::pair<std::string, Labels> read_namespace(const Json& ns) {
  if (!ns.is_object()) throw PolicyError("(namespace)", "is not a JSON object");
  return {read_name(ns, "name", true, "namespace"), labels_of(ns)};
}

}  // namespace manifold::policy
