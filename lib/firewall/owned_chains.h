// Chains of ours in one table of a pod's namespace, each jumped to from one built-in chain: the
// three texts every user of them derives from the current `iptables-save` output — the payload that
// installs (or reconciles) them, the payload that removes them, and CHECK's list of differences.
// Both the mesh redirect (nat, CNIMESH-*) and network policy (filter, MNP-*) are such chain sets.
// Rules are "specs" (what follows `-A <chain> ` in save output) in canonical save form, so text
// compares with text; removal works from the saved text only (never regenerated from config), and
// only chains named by the caller — another interface's, a mesh's own, anyone else's — are touched.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "firewall/iptables_types.h"

namespace manifold::firewall {

/// One of our chains: its name, the built-in chain that jumps to it, the jump rule and the body.
struct OwnedChain {
  std::string name;               ///< e.g. "CNIMESH-IN-net1", "MNP-IN-net1"
  std::string hook;               ///< the built-in chain holding the jump: "PREROUTING", "INPUT", …
  std::string jump_spec;          ///< the rule in `hook` that jumps to `name`
  std::vector<std::string> body;  ///< the rules of `name`, in order

  bool operator==(const OwnedChain&) const = default;
};

/// The `iptables-restore --noflush` payload that makes `table` hold exactly `wanted` among the
/// chains called `names` (the chains of one owner, wanted or not), given `current_save`, the
/// `iptables-save -t <table>` text of the same family and backend: a chain line per wanted or
/// existing chain (creates it, or flushes it), `-D` for stale or misplaced jumps to them, the
/// bodies, `-I <hook> 1 <jump>` unless exactly the expected jump already sits before any mesh jump
/// (`PROXY_INIT_*`/`ISTIO_*`), `-X` for an existing chain no longer wanted, COMMIT. With an empty
/// `current_save` (a fresh namespace) the payload has no `-D` lines.
std::string build_chains_payload(Table table, const std::vector<std::string>& names,
                                 const std::vector<OwnedChain>& wanted, std::string_view current_save);

/// The payload that removes the chains called `names` from the saved `table`: chain lines for
/// those that exist (which flushes them), `-D` for every rule outside them that jumps to them
/// (verbatim from the save text), `-X` for each, COMMIT. Empty when nothing of theirs exists.
std::string build_chains_removal(Table table, const std::vector<std::string>& names, std::string_view save_text);

/// CHECK: compares the saved `table` with `expected` (among the chains called `names`). Returns
/// human-readable differences (empty = matches): a chain missing, a body that differs (rules
/// missing, unexpected or out of order), not exactly one jump in the hook, a jump that differs or
/// comes after a `PROXY_INIT_*`/`ISTIO_*` jump, jumps from other chains, and a chain of `names`
/// that is not expected but present ("unexpected chain X (<why_absent>)").
std::vector<std::string> compare_chains(Table table, const std::vector<std::string>& names,
                                        const std::vector<OwnedChain>& expected, std::string_view save_text,
                                        std::string_view why_absent);

}  // namespace manifold::firewall
