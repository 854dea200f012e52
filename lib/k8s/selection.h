// The pod's network selection: parsing of the `k8s.v1.cni.cncf.io/networks` annotation (comma form
// `ns/name@ifname` or JSON list of NPWG selection elements) and of `v1.multus-cni.io/default-network`,
// with Multus's format choice, validation and error messages, plus manifold's own bounds (size,
// element count, interface-name characters, object-name syntax) because the values end up in API
// URLs, kernel calls and firewall rule text. Also renders what a selection element delivers to its
// delegate: the runtimeConfig keys and the `IP=`/`MAC=` CNI_ARGS. Pure: no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/json.h"

namespace manifold::k8s {

/// Name of the pod annotation selecting additional networks.
inline constexpr std::string_view kNetworksAnnotation = "k8s.v1.cni.cncf.io/networks";
/// Name of the pod annotation replacing the cluster-wide default network.
inline constexpr std::string_view kDefaultNetworkAnnotation = "v1.multus-cni.io/default-network";

/// Largest accepted selection annotation, in bytes (manifold's bound; Multus has none).
inline constexpr std::size_t kMaxAnnotationBytes = 256 * 1024;
/// Largest accepted number of selection elements (manifold's bound; Multus has none).
inline constexpr std::size_t kMaxSelectionElements = 1000;

/// One requested port mapping (`portMappings` entry), delivered as runtimeConfig.portMappings.
struct PortMapping {
  int host_port = 0;
  int container_port = 0;
  std::string protocol;  ///< empty when not given
  std::string host_ip;   ///< empty when not given
};

/// Requested traffic shaping (`bandwidth`), delivered as runtimeConfig.bandwidth.
struct Bandwidth {
  std::optional<int64_t> ingress_rate;
  std::optional<int64_t> ingress_burst;
  std::optional<int64_t> egress_rate;
  std::optional<int64_t> egress_burst;
};

/// One NPWG network selection element, validated.
struct SelectionElement {
  std::string name;                        ///< NAD name (never empty)
  std::string namespace_;                  ///< NAD namespace (defaulted, never empty)
  std::string interface;                   ///< requested ifname, empty = net<N>
  std::vector<std::string> ips;            ///< requested IPs/CIDRs, as given
  std::string mac;                         ///< requested MAC, as given
  std::vector<std::string> default_route;  ///< requested default-route gateways, as given
  bool has_default_route = false;          ///< the `default-route` key was present, even as []
  std::vector<PortMapping> port_mappings;
  std::optional<Bandwidth> bandwidth;
  Json cni_args;  ///< object, or null when absent
  std::string infiniband_guid;
  std::string ipam_claim_reference;  ///< parsed and kept; Multus ignores it
  std::string device_id;             ///< Multus-specific `deviceID`
};

/// Parses `k8s.v1.cni.cncf.io/networks`. The JSON list form is used when the value contains any of
/// `[`, `{`, `"`, the comma form otherwise (as Multus). Empty namespaces become `default_namespace`.
/// An empty or all-whitespace value yields an empty list. Throws CniError(InvalidConfig) with
/// Multus's messages for its checks and clear messages for manifold's stricter ones.
std::vector<SelectionElement> parse_networks_annotation(std::string_view value, const std::string& default_namespace);

/// Parses `v1.multus-cni.io/default-network`: same syntax, default namespace = `multus_namespace`,
/// exactly one element. Throws CniError(InvalidConfig) otherwise (also for an empty value).
SelectionElement parse_default_network_annotation(std::string_view value, const std::string& multus_namespace);

/// The runtimeConfig keys the element requests: `portMappings`, `bandwidth`, `ips`, `mac`,
/// `infinibandGUID`, `deviceID` (only those given). Always an object, possibly empty.
Json runtime_config_for(const SelectionElement& element);

/// What identifies the element and everything it asks of its network, as one JSON object (the node
/// agent records it with the attachment it produced, to match and compare elements later):
/// "namespace", "name", then only the fields given — "interface", the runtimeConfig keys of
/// runtime_config_for, "cni-args", "default-route", "ipam-claim-reference". Two elements asking for the
/// same yield equal objects.
Json selection_record(const SelectionElement& element);
/// The CNI_ARGS additions Multus passes for the element: `IP=<ips joined by ','>` and `MAC=<mac>`,
/// joined by ';' (e.g. "IP=10.1.1.5/24;MAC=0a:58:0a:01:01:05"); empty when neither was requested.
std::string cni_args_for(const SelectionElement& element);

/// True if `text` parses as an IP address the way Go's net.ParseIP accepts it (IPv4 dotted quad
/// without leading zeros, or IPv6).
bool is_valid_ip(std::string_view text);

/// True if `text` parses as `<ip>/<prefix>` the way Go's net.ParseCIDR accepts it.
bool is_valid_cidr(std::string_view text);

/// True if `text` parses as a hardware address the way Go's net.ParseMAC accepts it (6, 8 or 20
/// octets; `:`- or `-`-separated pairs or `.`-separated quads of hex digits).
bool is_valid_hardware_address(std::string_view text);

}  // namespace manifold::k8s
