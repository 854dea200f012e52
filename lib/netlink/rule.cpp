// Implementation of RuleSpec validation/formatting/JSON, the kernel matching rules, and the libnl
// rule operations (RTM_GETRULE dump, RTM_NEWRULE with NLM_F_EXCL, RTM_DELRULE).
#include "netlink/rule.h"

#include <linux/fib_rules.h>
#include <sys/socket.h>

#include <climits>

#include "cni/error.h"
#include "netlink/convert.h"
#include "netlink/family.h"
#include "netlink/nl_socket.h"
#include "util/log.h"

namespace manifold::netlink {
namespace {

using cni::CniError;
using cni::ErrorCode;

[[noreturn]] void invalid(const RuleSpec& rule, const std::string& why) {
  throw CniError(ErrorCode::InvalidConfig, "invalid rule (" + to_string(rule) + "): " + why);
}

// True when the rule has a selector or action a RuleSpec cannot express.
bool has_foreign_selectors(rtnl_rule* rule) {
  if (rtnl_rule_get_action(rule) != FR_ACT_TO_TBL || rtnl_rule_get_table(rule) == 0) return true;
  if (nl_addr* dst = rtnl_rule_get_dst(rule); dst != nullptr && nl_addr_get_prefixlen(dst) != 0) return true;
  if (rtnl_rule_get_iif(rule) != nullptr || rtnl_rule_get_oif(rule) != nullptr) return true;
  if (rtnl_rule_get_mark(rule) != 0 || rtnl_rule_get_dsfield(rule) != 0) return true;
  if (rtnl_rule_get_l3mdev(rule) > 0) return true;
  uint8_t proto = 0;
  uint16_t start = 0;
  uint16_t end = 0;
  if (rtnl_rule_get_ipproto(rule, &proto) == 0) return true;
  if (rtnl_rule_get_sport(rule, &start, &end) == 0 || rtnl_rule_get_dport(rule, &start, &end) == 0) return true;
  return false;
}

// Converts one dumped rule; nullopt when a RuleSpec cannot describe it.
std::optional<RuleSpec> from_nl_rule(rtnl_rule* rule) {
  const int family = rtnl_rule_get_family(rule);
  if (!is_ip_family(family) || has_foreign_selectors(rule)) return std::nullopt;
  if (rtnl_rule_get_table(rule) > static_cast<uint32_t>(INT_MAX) ||
      rtnl_rule_get_prio(rule) > static_cast<uint32_t>(INT_MAX)) {
    return std::nullopt;
  }
  RuleSpec out;
  out.family = family;
  if (nl_addr* src = rtnl_rule_get_src(rule); src != nullptr && nl_addr_get_prefixlen(src) != 0) {
    const std::optional<util::IpPrefix> prefix = detail::from_nl_addr(src);
    if (!prefix || family_of(prefix->address) != family) return std::nullopt;
    out.src = prefix->masked();
  }
  out.table = static_cast<int>(rtnl_rule_get_table(rule));
  out.priority = static_cast<int>(rtnl_rule_get_prio(rule));
  return out;
}

RuleHandle build_nl_rule(const RuleSpec& r) {
  RuleHandle rule(rtnl_rule_alloc());
  if (!rule) throw CniError(ErrorCode::Internal, "netlink: out of memory building a rule");
  rtnl_rule_set_family(rule.get(), r.family);
  rtnl_rule_set_action(rule.get(), FR_ACT_TO_TBL);
  rtnl_rule_set_table(rule.get(), static_cast<uint32_t>(r.table));
  if (r.priority != kRulePriorityAuto) rtnl_rule_set_prio(rule.get(), static_cast<uint32_t>(r.priority));
  if (r.src) {
    NlAddrHandle src = detail::to_nl_addr(*r.src);
    const int err = rtnl_rule_set_src(rule.get(), src.get());  // takes its own reference
    if (err < 0) throw CniError(ErrorCode::Internal, "netlink: cannot set rule source: " + nl_error_text(err));
  }
  return rule;
}

}  // namespace

std::string to_string(const RuleSpec& rule) {
  std::string out;
  if (rule.priority != kRulePriorityAuto) out = std::to_string(rule.priority) + ": ";
  out += "from " + (rule.src ? rule.src->str() : std::string("all"));
  out += " lookup " + std::to_string(rule.table);
  if (!rule.src && rule.family == AF_INET6) out += " (IPv6)";
  return out;
}

RuleSpec normalize_rule(const RuleSpec& rule) {
  RuleSpec out = rule;
  if (out.family != 0 && !is_ip_family(out.family)) invalid(rule, "unsupported address " + family_name(out.family));
  if (const std::optional<util::IpPrefix>& src = rule.src) {
    if (out.family == 0) out.family = family_of(src->address);
    if (family_of(src->address) != out.family) invalid(rule, "source is not an " + family_name(out.family) + " prefix");
    if (!src->is_masked()) invalid(rule, "source has host bits set (did you mean " + src->network_str() + "?)");
    if (src->prefix_len == 0) out.src.reset();
  }
  if (out.family == 0) invalid(rule, "the address family is unknown (no source given)");
  if (out.table < 1) invalid(rule, "table must be 1..2147483647");
  if (out.priority < kRulePriorityAuto) invalid(rule, "priority must be 0..2147483647");
  return out;
}

bool rule_matches(const RuleSpec& pattern, const RuleSpec& candidate) {
  if (pattern.family != candidate.family || pattern.table != candidate.table) return false;
  if (pattern.src && pattern.src != candidate.src) return false;
  if (pattern.priority != kRulePriorityAuto && pattern.priority != candidate.priority) return false;
  return true;
}

bool same_rule_identity(const RuleSpec& a, const RuleSpec& b) {
  return a.family == b.family && a.src == b.src && a.table == b.table && a.priority == b.priority;
}

Json to_json(const RuleSpec& rule) {
  Json j = Json::object();
  j["family"] = detail::family_to_json(rule.family);
  j["src"] = rule.src ? rule.src->str() : std::string();
  j["table"] = rule.table;
  j["priority"] = rule.priority;
  return j;
}

RuleSpec rule_from_json(const Json& json) {
  constexpr std::string_view what = "rule";
  if (!json.is_object()) throw CniError(ErrorCode::Decoding, "rule: expected a JSON object");
  RuleSpec r;
  r.family = detail::json_family(json, what);
  r.src = detail::json_prefix(json, what, "src");
  r.table = detail::json_int(json, what, "table", 1, INT_MAX, std::nullopt);
  r.priority = detail::json_int(json, what, "priority", kRulePriorityAuto, INT_MAX, kRulePriorityAuto);
  try {
    return normalize_rule(r);
  } catch (const CniError& e) {
    throw CniError(ErrorCode::Decoding, e.msg(), e.details());
  }
}

std::vector<RuleSpec> list_rules(NlSocket& sock, int family) {
  if (family != AF_UNSPEC && !is_ip_family(family)) {
    throw CniError(ErrorCode::InvalidConfig, "list rules: unsupported address " + family_name(family));
  }
  std::vector<RuleSpec> out;
  for (int fam : {AF_INET, AF_INET6}) {
    if (family != AF_UNSPEC && family != fam) continue;
    CacheHandle cache = sock.dump(DumpKind::Rules, fam);
    for (nl_object* obj = nl_cache_get_first(cache.get()); obj != nullptr; obj = nl_cache_get_next(obj)) {
      std::optional<RuleSpec> spec = from_nl_rule(reinterpret_cast<rtnl_rule*>(obj));
      if (spec) out.push_back(std::move(*spec));
    }
  }
  return out;
}

AddOutcome add_rule(NlSocket& sock, const RuleSpec& rule) {
  const RuleSpec r = normalize_rule(rule);
  RuleHandle nl_rule = build_nl_rule(r);
  const int err = sock.request([&](nl_sock* s) { return rtnl_rule_add(s, nl_rule.get(), NLM_F_EXCL); });
  if (err >= 0) return AddOutcome::Added;
  if (is_exists_error(err)) return AddOutcome::Exists;
  sock.fail("add rule", to_string(r), err);
}

DeleteOutcome delete_rule(NlSocket& sock, const RuleSpec& rule) {
  const RuleSpec r = normalize_rule(rule);
  RuleHandle nl_rule = build_nl_rule(r);
  const int err = sock.request([&](nl_sock* s) { return rtnl_rule_delete(s, nl_rule.get(), 0); });
  if (err >= 0) return DeleteOutcome::Deleted;
  if (is_not_found_error(err)) return DeleteOutcome::NotFound;
  sock.fail("delete rule", to_string(r), err);
}

std::set<int> rule_tables_in_use(NlSocket& sock) {
  std::set<int> out;
  for (int fam : {AF_INET, AF_INET6}) {
    CacheHandle cache = sock.dump(DumpKind::Rules, fam);
    for (nl_object* obj = nl_cache_get_first(cache.get()); obj != nullptr; obj = nl_cache_get_next(obj)) {
      const uint32_t table = rtnl_rule_get_table(reinterpret_cast<rtnl_rule*>(obj));
      if (table != 0 && table <= static_cast<uint32_t>(INT_MAX)) out.insert(static_cast<int>(table));
    }
  }
  return out;
}

}  // namespace manifold::netlink
