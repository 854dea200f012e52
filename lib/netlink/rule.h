// Policy-routing rules ("from 192.0.2.5/32 lookup 1000 priority 30000") as plain values, their
// validation, the kernel's matching rules as pure functions, and the libnl operations: list, add
// with NLM_F_EXCL ("exists" is an outcome), delete tolerating "not found", and collect the tables
// rules point at. Network scoping adds one such rule per attachment IP and removes it on DEL.
//
// A RuleSpec describes a rule selecting on the source prefix only, with the "lookup <table>"
// action. Listing reports only such rules: rules with other selectors (fwmark, iif/oif, dst, tos,
// ports …) or other actions are not ours and are left out, so they can never be mistaken for ours;
// rule_tables_in_use() still sees them.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "netlink/error.h"
#include "util/ip.h"
#include "util/json.h"

namespace manifold::netlink {

class NlSocket;

/// RuleSpec::priority "automatic": on add the kernel picks one, on delete any priority matches.
inline constexpr int kRulePriorityAuto = -1;

/// One "from <src> lookup <table>" rule.
struct RuleSpec {
  int family = 0;                     ///< AF_INET / AF_INET6; 0 = derive from src
  std::optional<util::IpPrefix> src;  ///< source prefix 192.0.2.5/32; nullopt = from all
  int table = 0;                      ///< table to look up, 1..2^31-1
  int priority = kRulePriorityAuto;   ///< rule priority 0..2^31-1, or kRulePriorityAuto

  /// Field-wise equality.
  friend bool operator==(const RuleSpec&, const RuleSpec&) = default;
};

/// `ip rule`-like text: "30000: from 192.0.2.5/32 lookup 1000" ("IPv6 …" prefix for IPv6 rules
/// from all).
std::string to_string(const RuleSpec& rule);

/// Validates `rule` and returns its canonical form (family derived/checked, src without host bits,
/// a /0 source becoming nullopt, table and priority in range). Throws CniError(InvalidConfig).
RuleSpec normalize_rule(const RuleSpec& rule);

/// True when deleting the normalized `pattern` would remove the listed `candidate`: family and
/// table equal; src and priority only when the pattern sets them.
bool rule_matches(const RuleSpec& pattern, const RuleSpec& candidate);

/// True when adding `b` with NLM_F_EXCL fails because `a` exists (family, src, table, priority).
bool same_rule_identity(const RuleSpec& a, const RuleSpec& b);

/// Canonical JSON: {"family":4|6,"src","table","priority"}.
Json to_json(const RuleSpec& rule);

/// Parses to_json() output strictly; throws CniError(Decoding).
RuleSpec rule_from_json(const Json& json);

/// Lists the source-only lookup rules of `family` (AF_INET, AF_INET6 or AF_UNSPEC for both), in
/// kernel (priority) order. Throws CniError(Netlink).
std::vector<RuleSpec> list_rules(NlSocket& sock, int family);

/// Adds a rule with NLM_F_CREATE|NLM_F_EXCL; Exists when an identical rule is there.
[[nodiscard]] AddOutcome add_rule(NlSocket& sock, const RuleSpec& rule);

/// Deletes one rule matching `rule`; NotFound when there is none.
[[nodiscard]] DeleteOutcome delete_rule(NlSocket& sock, const RuleSpec& rule);

/// Every table ID any rule (of any kind, IPv4 or IPv6) points at.
std::set<int> rule_tables_in_use(NlSocket& sock);

}  // namespace manifold::netlink
