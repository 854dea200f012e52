// The `sourceRouting` configuration of one attachment. It has three layers (top-level manifold
// config, the delegate config's "sourceRouting" key, the pod's `args.cni.sourceRouting`), merged key
// by key (later wins) and then validated strictly; a bad field is CniError(InvalidConfig) naming
// `sourceRouting.<key>`. Keys:
//   enabled       false   source routing is off unless some layer says true
//   table         0       table for every IP of the attachment; 0 = pick per IP the first free ID
//                         at or above tableBase (no rule points at it, no route lives in it)
//   tableBase     1000    first candidate when picking (1..2147483647)
//   rulePriority  30000   priority of our rules (1..32765, i.e. before the main table's 32766)
//   gateways      []      static gateways, at most one IPv4 and one IPv6; they win over the
//                         gateways of the delegate's result
// Unknown keys are rejected; `null` means "this key's default".
#pragma once

#include <optional>

#include "util/ip.h"
#include "util/json.h"

namespace manifold::scoping {

/// Highest rule priority source routing may use: the main table's rule is 32766, ours come first.
inline constexpr int kMaxSourceRulePriority = 32765;

/// The validated, merged `sourceRouting` configuration of one attachment.
struct SourceRoutingConfig {
  bool enabled = false;                       ///< `enabled`
  int table = 0;                              ///< `table`; 0 = pick a free one per IP
  int table_base = 1000;                      ///< `tableBase`
  int rule_priority = 30000;                  ///< `rulePriority`
  std::optional<util::IpAddress> gateway_v4;  ///< the IPv4 entry of `gateways`, nullopt = none
  std::optional<util::IpAddress> gateway_v6;  ///< the IPv6 entry of `gateways`, nullopt = none

  /// The configured gateway of IP version `family` (4 or 6), nullopt = none.
  const std::optional<util::IpAddress>& gateway(int family) const { return family == 4 ? gateway_v4 : gateway_v6; }

  /// The canonical object form: {"enabled","table","tableBase","rulePriority","gateways":[…]};
  /// parse_source_routing_config(to_json()) gives the same config back.
  Json to_json() const;

  /// Field-wise equality.
  friend bool operator==(const SourceRoutingConfig&, const SourceRoutingConfig&) = default;
};

/// Merges the three layers (each an object, or null/absent) key by key — later wins — and validates
/// the result. Throws CniError(InvalidConfig) naming the layer or the first bad field.
SourceRoutingConfig merge_source_routing_layers(const Json& top, const Json& delegate, const Json& cni_args);

/// Validates one merged `sourceRouting` object (null = all defaults). Throws like the merge.
SourceRoutingConfig parse_source_routing_config(const Json& source_routing);

}  // namespace manifold::scoping
