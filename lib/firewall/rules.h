// Pure builders for the network-scoped mesh redirect rules.
// For one interface, MeshConfig and address family they produce the two nat chains
// `CNIMESH-IN-<ifname>` / `CNIMESH-OUT-<ifname>` — RETURN rules for the proxy UID/GID, the ignored
// ports (multiport, ≤ 15 port references per rule) and the ignored subnets, then REDIRECT — and the
// jumps into them from position 1 of PREROUTING (`-i <ifname> -p tcp`) and OUTPUT
// (`-o <ifname> -p tcp`). Every rule is written in canonical iptables-save form, so the text that
// goes into `iptables-restore --noflush` is byte-identical to what `iptables-save` prints back and
// CHECK can compare text. The ADD payload is built against the current `iptables-save -t nat` text
// so that a re-ADD flushes and refills the chains without duplicating the jumps.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "firewall/iptables_types.h"
#include "firewall/mesh_config.h"
#include "firewall/owned_chains.h"

namespace manifold::firewall {

/// Longest chain name iptables accepts (XT_EXTENSION_MAXNAMELEN - 1).
inline constexpr std::size_t kMaxChainNameLength = 28;

/// Most port references one `-m multiport` rule may hold (a range counts as two).
inline constexpr std::size_t kMultiportLimit = 15;

/// One of the mesh's chains (firewall/owned_chains.h).
using MeshChain = OwnedChain;

/// "CNIMESH-IN-<ifname>"; validates the interface name (CniError InvalidConfig).
std::string inbound_chain_name(std::string_view ifname);

/// "CNIMESH-OUT-<ifname>"; validates the interface name (CniError InvalidConfig).
std::string outbound_chain_name(std::string_view ifname);

/// True for a jump target that belongs to a mesh's own init rules (`PROXY_INIT_*`, `ISTIO_*`);
/// our jumps must come before those.
bool is_foreign_mesh_chain(std::string_view target);

/// Splits ports into multiport lists of at most kMultiportLimit references each, in order:
/// {"4190,4191", "5000:5010,…"}.
std::vector<std::string> multiport_groups(const std::vector<PortRange>& ports);

/// The chains to install for `family`: the inbound chain when redirectInbound, the outbound one
/// when redirectOutbound, in that order. Validates the interface name.
std::vector<MeshChain> mesh_chains(std::string_view ifname, const MeshConfig& cfg, Family family);

/// The `iptables-restore --noflush` payload that installs (or re-installs) the chains for `family`,
/// given `current_save`, the `iptables-save -t nat` text of the same family and backend:
///   *nat, a chain line per chain (creates it, or flushes it on re-ADD), `-D` for stale or
///   misplaced jumps to our chains, the chain bodies, `-I <hook> 1 <jump>` unless exactly the
///   expected jump already sits before any mesh jump, `-X` for a chain of a direction that is
///   now disabled, COMMIT.
/// With an empty `current_save` (a fresh namespace) the payload has no `-D` lines.
std::string build_add_payload(std::string_view ifname, const MeshConfig& cfg, Family family,
                              std::string_view current_save);

}  // namespace manifold::firewall
