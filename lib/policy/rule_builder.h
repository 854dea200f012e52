// The pure rule builder of MultiNetworkPolicy: one attachment's rules (policy/evaluate.h) become
// filter-table chains inside the pod's namespace, per address family, in canonical
// `iptables-save` form (so CHECK compares text with text):
//
//   MNP-IN-<ifname>   jumped to from position 1 of INPUT  (`-i <ifname>`), when ingress is isolated
//   MNP-OUT-<ifname>  jumped to from position 1 of OUTPUT (`-o <ifname>`), when egress is isolated
//
// Only traffic in on / out of that interface enters them, so eth0, interfaces no policy covers, the
// CNIMESH chains (nat) and a mesh's own chains are never touched. Each chain holds, in order:
//  1. replies and related traffic of allowed connections (conntrack ESTABLISHED,RELATED);
//  2. what the network itself needs, always allowed: IPv6 neighbour discovery with the multicast
//     listener messages it relies on (ICMPv6 130-137 and 143), and DHCP / DHCPv6 client traffic
//     (UDP 68↔67, 546↔547), so a policy never breaks address configuration or reachability;
//  3. one ACCEPT per allow of that family: `-s`/`-d` the peer prefix (none for every address),
//     `-p` the protocol and the port or range — for ingress matched on the connection's original
//     destination port (`-m conntrack --ctorigdstport`), so a port the mesh redirect rewrote in
//     PREROUTING is still the port the policy names, for egress the packet's `--dport`;
//  4. the deny: `-j DROP`, or with denyAction "reject" `-j REJECT` with ICMP administratively
//     prohibited (the sender learns at once that a policy refused it).
// Every rule carries a comment "mnp/<ifname>/..." naming what it is (the allows: the policy and
// rule). Chain names fit iptables' 28 characters for every valid interface name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "firewall/iptables_types.h"
#include "firewall/owned_chains.h"
#include "policy/evaluate.h"

namespace manifold::policy {

/// What a chain does with traffic no allow matched.
enum class DenyAction { Drop, Reject };

/// "MNP-IN-<ifname>"; validates the interface name (CniError InvalidConfig).
std::string ingress_chain_name(std::string_view ifname);

/// "MNP-OUT-<ifname>"; validates the interface name (CniError InvalidConfig).
std::string egress_chain_name(std::string_view ifname);

/// Both chain names of `ifname`, ingress first.
std::vector<std::string> policy_chain_names(std::string_view ifname);

/// The chains for `family`: ingress when isolated, then egress when isolated.
std::vector<firewall::OwnedChain> policy_chains(std::string_view ifname, const AttachmentRules& rules,
                                                firewall::Family family, DenyAction deny);

/// The `iptables-restore --noflush` payload that makes the filter table of `family` hold exactly
/// these chains for `ifname`, given `current_save` (`iptables-save -t filter` of that family and
/// backend): chains of directions no longer isolated are removed, stale jumps replaced.
std::string build_policy_payload(std::string_view ifname, const AttachmentRules& rules, firewall::Family family,
                                 DenyAction deny, std::string_view current_save);

}  // namespace manifold::policy
