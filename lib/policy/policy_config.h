// The `multiNetworkPolicy` key of the meta-plugin config: whether manifold enforces
// MultiNetworkPolicy on the pods it attaches, and how it writes the rules. Without the key (or with
// `enabled` false) manifold behaves exactly as before: no policy is read, no rule is written.
//
//   enabled          false   true: every ADD reads the policies of the pod's namespace and installs
//                            the rules of each covered attachment before its delegate runs
//   iptablesMode     "auto"  auto | legacy | nft, chosen in the pod's namespace as the mesh chooses
//   lockWaitSeconds  30      legacy backend: `-w` seconds for the xtables lock (1-600)
//   denyAction       "drop"  drop | reject: what happens to traffic no policy allows (reject:
//                            ICMP administratively prohibited, so the sender fails at once)
//
// Unknown keys and wrong types are errors naming the field (`invalid multiNetworkPolicy.enabled`).
#pragma once

#include <string>

#include "cni/config_reader.h"
#include "firewall/iptables_types.h"
#include "firewall/mesh_config.h"
#include "policy/rule_builder.h"
#include "util/json.h"

namespace manifold::policy {

/// The meta-config key.
inline constexpr std::string_view kPolicyConfigKey = "multiNetworkPolicy";

/// The validated `multiNetworkPolicy` settings.
struct PolicyConfig {
  bool enabled = false;                                                 ///< `enabled`
  firewall::IptablesMode iptables_mode = firewall::IptablesMode::Auto;  ///< `iptablesMode`
  int lock_wait_seconds = 30;                                           ///< `lockWaitSeconds`
  DenyAction deny = DenyAction::Drop;                                   ///< `denyAction`

  /// The backend `iptablesMode` forces, or nullopt for auto (detect in the pod namespace).
  std::optional<firewall::Backend> forced_backend() const;
  bool operator==(const PolicyConfig&) const = default;
};

/// Reads the key's value (null or absent: the defaults). Throws CniError(InvalidConfig) naming the
/// first bad field.
PolicyConfig read_policy_config(const Json& value);

/// Appends every problem of the key's value at JSON `path` to `out` (`manifold validate`).
void validate_policy_config(const Json& value, const std::string& path, cni::Problems& out);

}  // namespace manifold::policy
