// The MultiNetworkPolicy model (`k8s.cni.cncf.io/v1beta1`, the spec of `networking.k8s.io/v1`
// NetworkPolicy) as typed values, read from the object the API server returns. Reading never
// throws for what the object says: a policy that does not validate comes back with `error` set and
// with what could still be read of the networks it covers and the pods it selects, because such a
// policy must close, not open — it isolates every pod it may select, in both directions, on every
// network it may cover, and allows nothing (policy/evaluate.h).
//
// Rules, as NetworkPolicy states them: `spec.podSelector` is required ({} selects every pod of
// the namespace); `policyTypes` lists Ingress and/or Egress, and when absent or empty means
// Ingress, plus Egress when `spec.egress` has rules; an empty `from`/`to` matches every peer and an
// empty `ports` every port; a peer is an `ipBlock` or a `podSelector` and/or `namespaceSelector`
// (never both kinds; a podSelector alone selects in the policy's namespace); `except` CIDRs lie
// strictly inside `cidr`, same family; `protocol` is TCP (default), UDP or SCTP; `port` is a number
// 1-65535 or a container port name (IANA service name syntax); `endPort` ≥ `port`, only with a
// numeric port. Unknown fields are errors (a field manifold does not understand cannot be enforced).
//
// The networks a policy covers come from its annotation `k8s.v1.cni.cncf.io/policy-for`: a
// comma-separated list of `name` or `namespace/name` NetworkAttachmentDefinition references, a bare
// name meaning one in the policy's namespace. Without the annotation a policy covers no network.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/label_selector.h"
#include "util/ip.h"
#include "util/json.h"

namespace manifold::policy {

/// The annotation on a policy naming the networks it covers.
inline constexpr std::string_view kPolicyForAnnotation = "k8s.v1.cni.cncf.io/policy-for";

/// A transport protocol a port rule names.
enum class Protocol { Tcp, Udp, Sctp };

/// "tcp", "udp", "sctp": the spelling iptables uses.
std::string_view protocol_name(Protocol protocol);

/// One entry of a rule's `ports`.
struct PolicyPort {
  Protocol protocol = Protocol::Tcp;  ///< `protocol`, TCP when absent
  std::uint16_t port = 0;             ///< numeric `port`; 0 with an empty `named_port` = every port
  std::string named_port;             ///< `port` given as a container port name
  std::uint16_t end_port = 0;         ///< `endPort`, 0 when absent (then the range is `port` alone)

  bool operator==(const PolicyPort&) const = default;
};

/// An `ipBlock` peer: `cidr` without the `except` prefixes.
struct IpBlock {
  util::IpPrefix cidr;                 ///< masked (host bits cleared)
  std::vector<util::IpPrefix> except;  ///< masked, each strictly inside `cidr`

  bool operator==(const IpBlock&) const = default;
};

/// One entry of `from`/`to`: either an ipBlock, or pod and/or namespace selectors.
struct PolicyPeer {
  std::optional<LabelSelector> pod_selector;        ///< absent: every pod (of the selected namespaces)
  std::optional<LabelSelector> namespace_selector;  ///< absent: the policy's namespace only
  std::optional<IpBlock> ip_block;                  ///< set: this peer is an IP block

  bool operator==(const PolicyPeer&) const = default;
};

/// One ingress or egress rule.
struct PolicyRule {
  std::vector<PolicyPeer> peers;  ///< `from`/`to`; empty: every peer
  std::vector<PolicyPort> ports;  ///< empty: every port and protocol

  bool operator==(const PolicyRule&) const = default;
};

/// A network named in `policy-for`, resolved against the policy's namespace.
struct NetworkRef {
  std::string ns;    ///< the NAD's namespace
  std::string name;  ///< the NAD's name

  /// "ns/name", as network-status and manifold's attachments name a NAD's network.
  std::string str() const { return ns + "/" + name; }
  bool operator==(const NetworkRef&) const = default;
};

/// One MultiNetworkPolicy, valid or not.
struct MultiNetworkPolicy {
  std::string ns;                             ///< metadata.namespace
  std::string name;                           ///< metadata.name
  std::vector<NetworkRef> networks;           ///< from `policy-for`
  bool all_networks = false;                  ///< invalid `policy-for`: it may cover any network
  std::optional<LabelSelector> pod_selector;  ///< nullopt only when invalid and unreadable: every pod
  bool ingress = false;                       ///< isolates ingress (policyTypes, defaulted)
  bool egress = false;                        ///< isolates egress (policyTypes, defaulted)
  std::vector<PolicyRule> ingress_rules;      ///< `spec.ingress`
  std::vector<PolicyRule> egress_rules;       ///< `spec.egress`
  /// Empty for a valid policy; else "<json path>: <what was expected>". An invalid policy has
  /// `ingress` and `egress` set and no rules.
  std::string error;

  /// True when the policy validated.
  bool valid() const { return error.empty(); }
  /// "ns/name", for messages.
  std::string id() const { return ns + "/" + name; }
  /// True when `network` ("ns/name") is one the policy covers (or may cover, when invalid).
  bool covers(std::string_view network) const;
};

/// Reads one MultiNetworkPolicy object (as a LIST or GET returns it; `listed_ns`, when given, is the
/// namespace it was listed in and stands in for a missing metadata.namespace). Never throws: what
/// does not validate is described in `error` (see the file comment).
MultiNetworkPolicy read_policy(const Json& object, std::string_view listed_ns = {});

/// Makes `p` invalid with `error` ("<json path>: <what is wrong>"), the fail-closed way: it may
/// cover any network, isolates both directions and allows nothing. Used when something outside the
/// object shows it cannot be enforced as written (a policy-for name that does not exist).
void invalidate_policy(MultiNetworkPolicy& p, std::string error);

/// The JSON path of the policy-for annotation, for messages.
extern const std::string kPolicyForPath;

/// Parses a `policy-for` annotation value for a policy in `policy_ns`. Throws PolicyError (path
/// `metadata.annotations["k8s.v1.cni.cncf.io/policy-for"]`) for an empty entry or a name that is not
/// `name` or `namespace/name` with DNS-1123 parts.
std::vector<NetworkRef> parse_policy_for(std::string_view annotation, const std::string& policy_ns);

/// True for a container port name (IANA service name syntax: 1-15 of [a-z0-9-], at least one
/// letter, no leading, trailing or doubled '-').
bool is_port_name(std::string_view text);

}  // namespace manifold::policy
