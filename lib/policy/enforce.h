// The MultiNetworkPolicy rules of one attachment, in force, on top of an IptablesRunner — the same
// lifecycle as the mesh redirect's (scoping/mesh.h), in the filter table:
//  - apply_policy: pick the backend (forced by iptablesMode, else detected in the pod namespace
//    the way the mesh detects it), then per family save → build the payload against the save →
//    restore: one atomic `iptables-restore --noflush` per family, which creates, refills or
//    removes our chains and jumps as the rules say, and never flushes a built-in chain. When a later
//    family fails, the families already applied lose our chains again before the error propagates.
//  - apply_policy_if_changed: the same, but only for families whose saved table differs from what
//    the rules generate (the node agent's re-apply: nothing is run when nothing changed).
//  - remove_policy: per family, from a fresh save, the removal payload built from the saved text
//    (never regenerated from policies, which may have changed); nothing runs when nothing of ours
//    exists; a failed restore (a concurrent change made a -D miss) is retried once from a new save.
//    A state that was only planned (an ADD killed before it recorded the backend) is looked for in
//    both backends.
//  - check_policy: every difference between the saved tables and what the rules generate.
// PolicyState is what the cache keeps between them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "firewall/iptables_types.h"
#include "firewall/runner.h"
#include "policy/evaluate.h"
#include "policy/policy_config.h"
#include "util/json.h"

namespace manifold::policy {

/// What ADD installed (or was about to install) for one attachment, as cached for DEL and CHECK.
struct PolicyState {
  std::string ifname;                        ///< the attachment's interface in the pod
  std::string network;                       ///< the network it is attached to ("ns/name")
  std::optional<firewall::Backend> backend;  ///< nullopt while only planned
  std::vector<firewall::Family> families;    ///< families holding (or about to hold) our rules
  int lock_wait_seconds = 30;                ///< lockWaitSeconds used
  bool applied = false;                      ///< false: planned, the rules may or may not exist
  bool complete = true;                      ///< the applied rules hold every allow (peers were known)

  /// {"ifname","network","backend"("legacy"|"nft"|null),"families":[4,6],"lockWaitSeconds":N,
  ///  "applied":bool,"complete":bool}
  Json to_json() const;
  /// Reads to_json()'s form back, validating everything (the cache file may be corrupt or
  /// hostile). Throws CniError(Decoding) naming the bad field.
  static PolicyState from_json(const Json& j);
  /// The state recorded before the rules are installed: a DEL after a kill finds our chains by name.
  static PolicyState planned(std::string ifname, std::string network, std::vector<firewall::Family> families,
                             int lock_wait_seconds);
};

/// ADD: installs `rules` for `ifname` in every family of `state.families` (see the file comment)
/// and returns the state completed with the backend. Throws CniError(Firewall) when iptables fails
/// (after undoing what it did), CniError(InvalidConfig) for a bad interface name.
PolicyState apply_policy(firewall::IptablesRunner& runner, PolicyState state, const AttachmentRules& rules,
                         const PolicyConfig& cfg);

/// Re-apply: like apply_policy on a state that was applied, restoring only the families whose
/// tables differ from what `rules` generate. Returns the number of families restored.
int apply_policy_if_changed(firewall::IptablesRunner& runner, PolicyState& state, const AttachmentRules& rules,
                            const PolicyConfig& cfg);

/// DEL: removes our chains and jumps for every family of `state` (see the file comment).
/// Idempotent. Throws CniError(Firewall) when a removal fails twice or the recorded backend cannot
/// be read (the caller skips it when the namespace is gone: the rules died with it).
void remove_policy(firewall::IptablesRunner& runner, const PolicyState& state);

/// CHECK: every difference between the installed rules and what `expected` generates, prefixed
/// with the family ("IPv4: chain MNP-IN-net1 is missing"). An attachment no policy covers expects
/// none of our chains. Empty when everything matches.
std::vector<std::string> check_policy(firewall::IptablesRunner& runner, const PolicyState& state,
                                      const AttachmentRules& expected, DenyAction deny);

}  // namespace manifold::policy
