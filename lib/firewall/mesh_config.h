// The `mesh` configuration of one attachment, as the rule builders (firewall/rules.h) take it: which
// TCP traffic on that interface is redirected to a service-mesh proxy, and how the rules are
// applied. The scoping module reads it from its three JSON layers (scoping/mesh_config.h).
//
// Keys and defaults when no layer sets them:
//   enabled                  false   the mesh is off unless some layer says `true`
//   inboundPort              4143    REDIRECT target for TCP arriving on the interface (1-65535)
//   outboundPort             4140    REDIRECT target for TCP leaving via the interface (1-65535)
//   proxyUID                 2102    numeric UID whose traffic is never redirected; null = none
//   proxyGID                 null    numeric GID likewise; null = none
//   inboundPortsToIgnore     ["4190","4191"]   destination ports not redirected inbound
//   outboundPortsToIgnore    []      destination ports not redirected outbound
//   inboundSubnetsToIgnore   []      sources (CIDR, either family) not redirected inbound
//   outboundSubnetsToIgnore  []      destinations (CIDR, either family) not redirected outbound
//   redirectInbound          true    install the inbound chain and its PREROUTING jump
//   redirectOutbound         true    install the outbound chain and its OUTPUT jump
//   iptablesMode             "auto"  auto | legacy | nft; should equal the mesh's own mode
//   ipv6                     "auto"  auto (iff the attachment has IPv6) | true | false
//   lockWaitSeconds          30      legacy backend: `-w` seconds for the xtables lock (1-600)
// Extensions beyond the Istio-compatible keys, for family-specific lists (a CIDR of the other family is an error):
//   inboundSubnetsToIgnoreV4, inboundSubnetsToIgnoreV6, outboundSubnetsToIgnoreV4,
//   outboundSubnetsToIgnoreV6.
// Port lists hold numbers or strings "N" / "N-M" (or one comma-separated string); UIDs and GIDs are
// numbers or decimal strings, never names. `null` for a key means "this key's default" except for
// proxyUID/proxyGID, where it means "no exemption". Unknown keys are rejected.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "firewall/iptables_types.h"
#include "util/ip.h"
#include "util/json.h"

namespace manifold::firewall {

/// A destination port or an inclusive port range (first == last for a single port).
struct PortRange {
  std::uint16_t first = 0;  ///< lowest port, ≥ 1
  std::uint16_t last = 0;   ///< highest port, ≥ first

  /// True when this covers more than one port (counts as two multiport references).
  bool is_range() const { return first != last; }
  /// The iptables multiport spelling: "4190" or "5000:5010".
  std::string str() const;

  bool operator==(const PortRange&) const = default;
};

/// How the iptables backend is chosen.
enum class IptablesMode { Auto, Legacy, Nft };

/// When IPv6 rules are installed.
enum class Ipv6Mode {
  Auto,    ///< iff the attachment has an IPv6 address (then mandatory)
  Always,  ///< always, even without an IPv6 address
  Never,   ///< never (IPv6 traffic on the interface then bypasses the proxy)
};

/// The validated, merged mesh configuration of one attachment.
struct MeshConfig {
  bool enabled = false;                                                        ///< `enabled`
  std::uint16_t inbound_port = 4143;                                           ///< `inboundPort`
  std::uint16_t outbound_port = 4140;                                          ///< `outboundPort`
  std::optional<std::uint32_t> proxy_uid = 2102;                               ///< `proxyUID`
  std::optional<std::uint32_t> proxy_gid;                                      ///< `proxyGID`
  std::vector<PortRange> inbound_ports_to_ignore{{4190, 4190}, {4191, 4191}};  ///< `inboundPortsToIgnore`
  std::vector<PortRange> outbound_ports_to_ignore;                             ///< `outboundPortsToIgnore`
  std::vector<util::IpPrefix> inbound_subnets_to_ignore_v4;   ///< IPv4 part of the inbound subnet lists
  std::vector<util::IpPrefix> inbound_subnets_to_ignore_v6;   ///< IPv6 part of the inbound subnet lists
  std::vector<util::IpPrefix> outbound_subnets_to_ignore_v4;  ///< IPv4 part of the outbound subnet lists
  std::vector<util::IpPrefix> outbound_subnets_to_ignore_v6;  ///< IPv6 part of the outbound subnet lists
  bool redirect_inbound = true;                               ///< `redirectInbound`
  bool redirect_outbound = true;                              ///< `redirectOutbound`
  IptablesMode iptables_mode = IptablesMode::Auto;            ///< `iptablesMode`
  Ipv6Mode ipv6 = Ipv6Mode::Auto;                             ///< `ipv6`
  int lock_wait_seconds = 30;                                 ///< `lockWaitSeconds`

  /// True when rules are to be installed: enabled and at least one direction redirected.
  bool active() const { return enabled && (redirect_inbound || redirect_outbound); }
  /// The inbound ignore subnets of one family.
  const std::vector<util::IpPrefix>& inbound_subnets(Family family) const;
  /// The outbound ignore subnets of one family.
  const std::vector<util::IpPrefix>& outbound_subnets(Family family) const;
};

/// Throws CniError(InvalidConfig) unless util::is_valid_ifname(ifname); the message names the interface.
void validate_ifname(std::string_view ifname);

/// The families to install rules for, given which address families the attachment has: IPv4
/// unless the attachment is IPv6-only, and IPv6 as `ipv6` says. Never empty.
std::vector<Family> mesh_families(const MeshConfig& cfg, bool has_ipv4, bool has_ipv6);

/// The backend `iptablesMode` forces, or nullopt for `auto` (detect in the pod netns).
std::optional<Backend> forced_backend(const MeshConfig& cfg);

}  // namespace manifold::firewall
