// Parser of the NPWG network selection annotations: the format choice, the comma form (Multus's
// item grammar and messages), the checks shared by both forms after namespace defaulting (manifold's
// own: Kubernetes-valid names, strict interface names, size bounds), the default-network annotation,
// and what an element delivers to its delegate (runtimeConfig keys and IP=/MAC= CNI_ARGS). The JSON
// form is decoded in selection_json.cpp; the lexical helpers live in selection_syntax.cpp.
#include "k8s/selection.h"

#include <algorithm>

#include "cni/error.h"
#include "k8s/selection_syntax.h"
#include "util/ifname.h"

namespace manifold::k8s {
namespace {

using namespace selection_syntax;

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
           "mismatch @ '" +
           shown(part) + "'");
    }
  }
  if (!ifname.empty() && (ifname.size() > 15 || ifname.find_first_of(" \t\n\v\f\r/") != std::string_view::npos)) {
    fail(std::string(kObjectNamePrefix) +
         "Failed to parse interface name: must be less than 15 chars and not contain '/' or spaces. "
         "interface name '" +
         shown(ifname) + "'");
  }
  // manifold's own checks.
  if (name.empty()) {
    fail(std::string(kAnnotationPrefix) + "item " + std::to_string(index + 1) + " has an empty network name");
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
    fail(std::string(kAnnotationPrefix) + "too many networks (" + std::to_string(items) + " items, at most " +
         std::to_string(kMaxSelectionElements) + " allowed)");
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
    if (!e.interface.empty() && !util::is_valid_ifname(e.interface)) {
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

std::vector<SelectionElement> parse_networks_annotation(std::string_view value, const std::string& default_namespace) {
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

Json selection_record(const SelectionElement& element) {
  Json out = {{"namespace", element.namespace_}, {"name", element.name}};
  if (!element.interface.empty()) out["interface"] = element.interface;
  const Json requests = runtime_config_for(element);
  for (const auto& [key, value] : requests.items()) out[key] = value;
  if (element.cni_args.is_object()) out["cni-args"] = element.cni_args;
  if (element.has_default_route) out["default-route"] = element.default_route;
  if (!element.ipam_claim_reference.empty()) out["ipam-claim-reference"] = element.ipam_claim_reference;
  return out;
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

}  // namespace manifold::k8s
