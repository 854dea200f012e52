// What MultiNetworkPolicy means for one attachment: NetworkPolicy's semantics applied per network.
// The attachment of pod P to network N is isolated for a direction when some policy of P's
// namespace that covers N (policy-for) selects P for that direction; then only what some such
// policy allows passes (rules and policies add up, never subtract). An invalid policy that may
// cover N and may select P isolates both directions and allows nothing.
//
// A peer chosen by podSelector/namespaceSelector contributes the IPs its network-status lists for
// N (a pod without an attachment to N contributes nothing); an ipBlock contributes its prefixes
// minus `except`; a rule without peers allows every source (ingress) or destination (egress). Ports:
// a number or a range (endPort) of the protocol, the protocol alone, or every port when a rule has
// none. A named port is resolved for ingress against P's own container ports, for egress against
// each destination pod's container ports — only pods whose spec is known (`ports_known`): a peer
// known by its metadata alone, an ipBlock and a rule without peers contribute no destination for a
// named egress port. When the peers are not known at all (`peers` is null, as during ADD), every
// allow that needs them is left out and the direction is marked incomplete: it is denied until the
// peers are filled in (fail closed); allows that need no peers (ipBlock, every peer, ports resolved
// against P) are in force at once.
//
// The result is deterministic whatever the order of its inputs: policies by namespace and name,
// peer pods by namespace and name, each allow kept once (the first policy that allows it names it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/label_selector.h"
#include "policy/pod_view.h"
#include "policy/policy.h"
#include "util/ip.h"

namespace manifold::policy {

/// The pods and namespaces a policy's selectors choose peers from.
struct PeerWorld {
  std::vector<PodView> pods;                              ///< every pod that may be a peer
  std::map<std::string, Labels, std::less<>> namespaces;  ///< namespace name → labels
};

/// A port match: every port of `protocol` when `first` is 0, else `first`..`last`.
struct PortMatch {
  Protocol protocol = Protocol::Tcp;  ///< the protocol
  std::uint16_t first = 0;            ///< lowest port, 0 = every port
  std::uint16_t last = 0;             ///< highest port (== first for one port)

  bool operator==(const PortMatch&) const = default;
};

/// One thing that passes: a peer prefix (none = every address, both families) and a port match
/// (none = every port and protocol).
struct Allow {
  std::optional<util::IpPrefix> peer;  ///< the source (ingress) or destination (egress)
  std::optional<PortMatch> port;       ///< what the traffic must be
  std::string origin;                  ///< "<policy> ingress[i]": which rule allows it

  /// Equal peer and port (the origin does not count).
  bool same(const Allow& other) const { return peer == other.peer && port == other.port; }
  bool operator==(const Allow&) const = default;
};

/// One direction of an attachment.
struct DirectionRules {
  bool isolated = false;              ///< some policy isolates it
  bool complete = true;               ///< every allow is known (false: peers were not known)
  std::vector<Allow> allows;          ///< what passes, in order
  std::vector<std::string> policies;  ///< "ns/name" of the policies that isolate it
  std::vector<std::string> invalid;   ///< "ns/name: error" of invalid policies among them

  bool operator==(const DirectionRules&) const = default;
};

/// Both directions of one attachment.
struct AttachmentRules {
  DirectionRules ingress;  ///< traffic arriving on the interface
  DirectionRules egress;   ///< traffic leaving through it

  /// True when some policy isolates a direction (then rules are installed).
  bool covered() const { return ingress.isolated || egress.isolated; }
  /// True when both directions hold every allow.
  bool complete() const { return ingress.complete && egress.complete; }
  bool operator==(const AttachmentRules&) const = default;
};

/// The rules of `pod`'s attachment to `network` ("ns/name") under `policies` (any namespace; only
/// those of the pod's namespace count), with peers from `peers` (null: not known).
AttachmentRules evaluate(const PodView& pod, std::string_view network, const std::vector<MultiNetworkPolicy>& policies,
                         const PeerWorld* peers);

}  // namespace manifold::policy
