// What policy evaluation needs of a pod — the one an attachment belongs to, or a peer — and of a
// namespace, read from the objects the API server returns: namespace, name and labels; the
// container ports (by name, for named ports), known only when the object carries its spec (a
// metadata-only object, `PartialObjectMetadata`, carries none); and per network the IPs its
// `k8s.v1.cni.cncf.io/network-status` annotation lists, keyed by the entry's `name` ("ns/name" for
// a NAD's network, as Multus and manifold write it).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "policy/label_selector.h"
#include "policy/policy.h"
#include "util/ip.h"
#include "util/json.h"

namespace manifold::policy {

/// The annotation listing a pod's attachments and their IPs.
inline constexpr std::string_view kNetworkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status";

/// One named container port.
struct ContainerPort {
  std::string name;                   ///< the port's name
  Protocol protocol = Protocol::Tcp;  ///< its protocol
  std::uint16_t port = 0;             ///< containerPort

  bool operator==(const ContainerPort&) const = default;
};

/// A pod as policies see it.
struct PodView {
  std::string ns;                    ///< metadata.namespace
  std::string name;                  ///< metadata.name
  Labels labels;                     ///< metadata.labels
  bool ports_known = false;          ///< the spec was read: `ports` is the whole truth
  std::vector<ContainerPort> ports;  ///< named ports of its containers (and sidecar init containers)
  /// Its IPs per network ("ns/name") from network-status, in the annotation's order.
  std::map<std::string, std::vector<util::IpAddress>, std::less<>> ips;

  /// "ns/name", for messages.
  std::string id() const { return ns + "/" + name; }
  /// Its IPs on `network` (none when it has no attachment there).
  const std::vector<util::IpAddress>& ips_on(std::string_view network) const;
  /// The ports named `name` with `protocol` (a pod may list one name once; kept general).
  std::vector<std::uint16_t> named_ports(std::string_view name, Protocol protocol) const;
};

/// Reads a pod object (full, or metadata only). Throws PolicyError when its namespace, name or
/// labels cannot be read; a malformed network-status or port list reads as none (the pod then
/// contributes no IPs or named ports: nothing is opened for it).
PodView read_pod_view(const Json& pod);

/// The IPs per network a network-status annotation value lists; empty when it is malformed.
std::map<std::string, std::vector<util::IpAddress>, std::less<>> read_network_status_ips(std::string_view value);

/// A Namespace object's name and labels. Throws PolicyError when either cannot be read.
std::pair<std::string, Labels> read_namespace(const Json& ns);

}  // namespace manifold::policy
