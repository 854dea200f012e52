// Reading `iptables-save` output and deriving DEL and CHECK from it. The text is parsed into tables,
// chain declarations (in order) and each chain's rules (in order), keeping every rule as the exact
// spec text iptables printed, so a rule can be deleted with `-D <chain> <spec>` without ever being
// regenerated from config (config may have changed since ADD). The parser treats its input as
// hostile: sizes are bounded, malformed lines are skipped and counted, and quoting is tokenised
// the way iptables-restore reads it, so a comment cannot pose as a jump.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "firewall/rules.h"

namespace manifold::firewall {

/// Largest save text accepted (bytes); more is CniError(Firewall).
inline constexpr std::size_t kMaxSaveTextBytes = 16 * 1024 * 1024;

/// Longest line considered (bytes); longer lines are skipped as malformed.
inline constexpr std::size_t kMaxSaveLineBytes = 64 * 1024;

/// One chain of a saved table.
struct SavedChain {
  std::string name;                ///< chain name
  std::string policy;              ///< "ACCEPT"/"DROP" for built-in chains, "-" for user chains
  std::vector<std::string> rules;  ///< rule specs (text after "-A <name> "), in order
};

/// One `*table` … `COMMIT` block.
struct SavedTable {
  std::string name;                ///< "nat", "filter", …
  std::vector<SavedChain> chains;  ///< in declaration order

  /// The chain called `name`, or nullptr.
  const SavedChain* find(std::string_view chain) const;
  /// The chain called `name`, or nullptr.
  SavedChain* find(std::string_view chain);
};

/// A whole save text.
struct SaveText {
  std::vector<SavedTable> tables;  ///< in order of appearance
  std::size_t skipped_lines = 0;   ///< malformed lines that were ignored

  /// The table called `name`, or nullptr.
  const SavedTable* find(std::string_view table) const;
};

/// A rule that jumps (`-j`/`-g`) to some chain.
struct ChainReference {
  std::string chain;  ///< the chain holding the rule
  std::size_t index;  ///< its 0-based position in that chain
  std::string spec;   ///< the rule spec
};

/// Parses iptables-save text. Skips comments, blank and malformed lines (counted in
/// skipped_lines); rules for undeclared chains are skipped too. Throws CniError(Firewall) only when
/// the text exceeds kMaxSaveTextBytes.
SaveText parse_save_text(std::string_view text);

/// Splits a rule spec into words the way iptables-restore does: whitespace separates, a
/// double-quoted word may contain spaces and `\"`; quotes are removed. Unbalanced quotes end the
/// word at the end of the text.
std::vector<std::string> split_rule_words(std::string_view spec);

/// The `-j`/`--jump` (or `-g`/`--goto`) target of a rule spec, or "" when it has none.
std::string rule_target(std::string_view spec);

/// Every rule in `table` whose target is `chain`, in table order.
std::vector<ChainReference> references_to(const SavedTable& table, std::string_view chain);

/// The 0-based position of the first rule in `hook` that jumps to a `PROXY_INIT_*`/`ISTIO_*`
/// chain, or the chain's rule count when there is none (so "index < result" means "before").
std::size_t first_foreign_mesh_jump(const SavedChain& hook);

/// True for PREROUTING, INPUT, FORWARD, OUTPUT, POSTROUTING (the built-in chains of every table).
bool is_builtin_chain(std::string_view chain);

/// Renders a table in iptables-save form (`*name`, chain lines, `-A` lines, COMMIT).
std::string render_table(const SavedTable& table);

/// The DEL payload for `ifname`, built from the saved nat text: chain lines for our chains that
/// exist (which flushes them), `-D` for every rule outside our chains that jumps to them (verbatim
/// from the save text), `-X` for our chains, COMMIT. Empty when nothing of ours exists. Other
/// interfaces' chains and the mesh's own chains are never named.
std::string build_del_payload(std::string_view save_text, std::string_view ifname);

/// CHECK: compares the saved nat text with the chains ADD installs. Returns human-readable
/// differences (empty = matches): a chain not declared, a body that differs from `expected` (rules
/// missing, unexpected or out of order), not exactly one jump in the hook chain, a jump that
/// differs from the expected one or comes after a `PROXY_INIT_*`/`ISTIO_*` jump, jumps from other
/// chains, and our chain of a disabled direction still present.
std::vector<std::string> compare_mesh_rules(std::string_view save_text, std::string_view ifname,
                                            const std::vector<MeshChain>& expected);

}  // namespace manifold::firewall
