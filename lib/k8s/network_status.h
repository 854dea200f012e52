// The `k8s.v1.cni.cncf.io/network-status` annotation: one entry per pod-side interface of every
// attachment, built from each delegate's (CNI 1.0-shaped) result with Multus's rules (the
// one-interface case vs the 0/≥2-interface case, IPs by interface index, bare addresses, `default`
// only on the cluster-wide default network) and serialised byte for byte as Multus writes it: each
// entry as Go's json.MarshalIndent(entry, "", "    "), joined with "," inside "[...]". One deliberate
// difference: `gateway` lists the default-route gateways manifold actually installed for the
// attachment and is omitted when there are none (Multus writes the plugin's routes, or "<nil>").
// Pure: no I/O.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "util/json.h"

namespace manifold::k8s {

/// Name of the pod annotation the status is written to.
inline constexpr const char* kNetworkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status";

/// An interface of a delegate's result.
struct StatusInterface {
  std::string name;
  std::string mac;
  int mtu = 0;
  std::string sandbox;  ///< empty for host-side interfaces (and for plugins that omit it)
};

/// An IP of a delegate's result.
struct StatusIp {
  std::string address;           ///< CIDR as in the result, e.g. "10.1.1.2/24"
  std::optional<int> interface;  ///< index into the result's interfaces, if given
  std::string gateway;           ///< empty when the result has none
};

/// A route of a delegate's result.
struct StatusRoute {
  std::string dst;  ///< CIDR, e.g. "0.0.0.0/0"
  std::string gw;   ///< empty when the route has none
};

/// The DNS block of a delegate's result.
struct StatusDns {
  std::vector<std::string> nameservers;
  std::string domain;
  std::vector<std::string> search;
  std::vector<std::string> options;
};

/// Everything the status needs about one attachment, in attachment order.
struct StatusInput {
  std::string name;         ///< "ns/name" for NADs, the CNI "name" otherwise
  bool is_default = false;  ///< the cluster-wide default network (NPWG §5.3.5)
  std::vector<StatusInterface> interfaces;
  std::vector<StatusIp> ips;
  std::vector<std::string> gateways;  ///< default-route gateways actually installed
  StatusDns dns;
  Json device_info;              ///< the device-info file as Multus decodes it (kubelet/device_info.h), null when none
  std::string ifname_requested;  ///< CNI_IFNAME given to the delegate; informational, not rendered
  Json extra_fields;             ///< object of fields appended after "gateway" on every entry, or null
};

/// Renders the annotation value for all attachments. Entries follow Multus's computation: field
/// order name, interface, ips, mac, mtu, default, dns (always, `{}` when
/// empty), device-info, gateway, then `extra_fields` (keys that collide with a standard field are
/// skipped). Empty strings, empty lists, `false` and 0 are omitted. device-info is decoded the way
/// Multus decodes the device-info file (known fields only, in Multus's order; omitted if it is not
/// an object or has a field of the wrong type). An attachment whose result has no interface
/// produces no entry, as in Multus. Returns "[]" when there is no entry at all.
std::string render_network_status(const std::vector<StatusInput>& attachments);

/// The gateways of the default routes a delegate's result installs, canonical, without duplicates,
/// in route order. A default route's own `gw` is used; a default route without one goes through the
/// gateway of the first IP of its family that has one (what the reference plugins' IPAM setup
/// installs), and is a device route listing nothing when there is none.
std::vector<std::string> installed_default_gateways(const std::vector<StatusRoute>& routes,
                                                    const std::vector<StatusIp>& ips);

}  // namespace manifold::k8s
