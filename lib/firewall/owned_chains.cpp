// The install, removal and CHECK texts of a set of our chains, derived from the saved table: which
// chains exist, which rules jump to them, whether the one jump we keep is exactly right and early
// enough. Pure functions over parse_save_text.
#include "firewall/owned_chains.h"

#include <algorithm>
#include <map>

#include "firewall/save_text.h"

namespace manifold::firewall {

namespace {

constexpr std::size_t kMaxMessageRule = 512;  // how much of a rule a CHECK message repeats

bool is_ours(const std::vector<std::string>& names, std::string_view chain) {
  return std::find(names.begin(), names.end(), chain) != names.end();
}

// References to `name` from chains that are not ours (ours are flushed by their chain lines).
std::vector<ChainReference> outside_references(const SavedTable* table, std::string_view name,
                                               const std::vector<std::string>& names) {
  std::vector<ChainReference> refs;
  if (table == nullptr) return refs;
  for (ChainReference& ref : references_to(*table, name))
    if (!is_ours(names, ref.chain)) refs.push_back(std::move(ref));
  return refs;
}

// What the install payload does about one of our chain names.
struct ChainPlan {
  std::string name;
  const OwnedChain* wanted = nullptr;     // null: not wanted (removed when it exists)
  bool exists = false;                    // declared in the current table
  bool keep_jump = false;                 // the current jump is exactly right
  std::vector<ChainReference> to_delete;  // references to remove with -D
};

ChainPlan plan_chain(const SavedTable* table, const std::string& name, const OwnedChain* wanted,
                     const std::vector<std::string>& names) {
  ChainPlan plan{name, wanted, false, false, {}};
  if (table == nullptr) return plan;
  plan.exists = table->find(name) != nullptr;
  plan.to_delete = outside_references(table, name, names);
  if (wanted != nullptr && plan.to_delete.size() == 1) {
    const ChainReference& ref = plan.to_delete.front();
    const SavedChain* hook = table->find(wanted->hook);
    if (ref.chain == wanted->hook && ref.spec == wanted->jump_spec && hook != nullptr &&
        ref.index < first_foreign_mesh_jump(*hook)) {
      plan.keep_jump = true;
      plan.to_delete.clear();
    }
  }
  return plan;
}

std::string shorten(std::string_view rule) {
  if (rule.size() <= kMaxMessageRule) return std::string(rule);
  return std::string(rule.substr(0, kMaxMessageRule)) + "...";
}

std::string rule_line(std::string_view chain, std::string_view spec) {
  std::string line = "-A ";
  line += chain;
  if (!spec.empty()) {
    line += ' ';
    line += spec;
  }
  return shorten(line);
}

void compare_body(const std::string& name, const std::vector<std::string>& actual,
                  const std::vector<std::string>& expected, std::vector<std::string>& diffs) {
  if (actual == expected) return;
  std::map<std::string_view, std::size_t> remaining;
  for (const std::string& rule : expected) ++remaining[rule];
  bool any = false;
  for (const std::string& rule : actual) {
    auto it = remaining.find(rule);
    if (it != remaining.end() && it->second > 0) {
      --it->second;
    } else {
      diffs.push_back(name + " has an unexpected rule: " + rule_line(name, rule));
      any = true;
    }
  }
  for (const std::string& rule : expected) {
    auto it = remaining.find(rule);
    if (it->second > 0) {
      --it->second;
      diffs.push_back(name + " is missing the rule: " + rule_line(name, rule));
      any = true;
    }
  }
  if (!any) diffs.push_back(name + " has the expected rules in the wrong order");
}

void compare_jumps(const OwnedChain& want, const SavedTable* table, const std::vector<ChainReference>& refs,
                   std::vector<std::string>& diffs) {
  std::vector<const ChainReference*> in_hook;
  for (const ChainReference& ref : refs) {
    if (ref.chain == want.hook)
      in_hook.push_back(&ref);
    else
      diffs.push_back("unexpected jump to " + want.name + " in " + ref.chain + ": " + rule_line(ref.chain, ref.spec));
  }
  if (in_hook.empty()) {
    diffs.push_back("no jump to " + want.name + " in " + want.hook);
    return;
  }
  if (in_hook.size() > 1) {
    diffs.push_back(std::to_string(in_hook.size()) + " jumps to " + want.name + " in " + want.hook +
                    ", expected exactly one");
    return;
  }
  const ChainReference& ref = *in_hook.front();
  if (ref.spec != want.jump_spec)
    diffs.push_back("the jump to " + want.name + " in " + want.hook + " differs: expected " +
                    rule_line(want.hook, want.jump_spec) + ", found " + rule_line(ref.chain, ref.spec));
  const SavedChain* hook = table->find(want.hook);
  const std::size_t foreign = first_foreign_mesh_jump(*hook);
  if (ref.index >= foreign)
    diffs.push_back("the jump to " + want.name + " in " + want.hook + " (rule " + std::to_string(ref.index + 1) +
                    ") comes after the jump to " + rule_target(hook->rules[foreign]) + " (rule " +
                    std::to_string(foreign + 1) + ")");
}

const OwnedChain* find_wanted(const std::vector<OwnedChain>& chains, std::string_view name) {
  const auto it = std::find_if(chains.begin(), chains.end(), [&](const OwnedChain& c) { return c.name == name; });
  return it == chains.end() ? nullptr : &*it;
}

}  // namespace

std::string build_chains_payload(Table table, const std::vector<std::string>& names,
                                 const std::vector<OwnedChain>& wanted, std::string_view current_save) {
  const SaveText saved = parse_save_text(current_save);
  const SavedTable* current = saved.find(table_name(table));
  std::vector<ChainPlan> plans;
  for (const std::string& name : names) plans.push_back(plan_chain(current, name, find_wanted(wanted, name), names));

  std::string payload = "*" + std::string(table_name(table)) + "\n";
  for (const ChainPlan& p : plans)
    if (p.wanted != nullptr || p.exists) payload += ":" + p.name + " - [0:0]\n";
  for (const ChainPlan& p : plans)
    for (const ChainReference& ref : p.to_delete)
      payload += (ref.spec.empty() ? "-D " + ref.chain : "-D " + ref.chain + " " + ref.spec) + "\n";
  for (const ChainPlan& p : plans)
    if (p.wanted != nullptr)
      for (const std::string& rule : p.wanted->body) payload += "-A " + p.name + " " + rule + "\n";
  for (const ChainPlan& p : plans)
    if (p.wanted != nullptr && !p.keep_jump) payload += "-I " + p.wanted->hook + " 1 " + p.wanted->jump_spec + "\n";
  for (const ChainPlan& p : plans)
    if (p.wanted == nullptr && p.exists) payload += "-X " + p.name + "\n";
  payload += "COMMIT\n";
  return payload;
}

std::string build_chains_removal(Table table, const std::vector<std::string>& names, std::string_view save_text) {
  const SaveText saved = parse_save_text(save_text);
  const SavedTable* current = saved.find(table_name(table));
  std::vector<std::string> existing;
  std::vector<ChainReference> refs;
  for (const std::string& name : names) {
    if (current != nullptr && current->find(name) != nullptr) existing.push_back(name);
    for (ChainReference& ref : outside_references(current, name, names)) refs.push_back(std::move(ref));
  }
  if (existing.empty() && refs.empty()) return {};
  std::string payload = "*" + std::string(table_name(table)) + "\n";
  for (const std::string& name : existing) payload += ":" + name + " - [0:0]\n";
  for (const ChainReference& ref : refs)
    payload += (ref.spec.empty() ? "-D " + ref.chain : "-D " + ref.chain + " " + ref.spec) + "\n";
  for (const std::string& name : existing) payload += "-X " + name + "\n";
  payload += "COMMIT\n";
  return payload;
}

std::vector<std::string> compare_chains(Table table, const std::vector<std::string>& names,
                                        const std::vector<OwnedChain>& expected, std::string_view save_text,
                                        std::string_view why_absent) {
  const SaveText saved = parse_save_text(save_text);
  const SavedTable* current = saved.find(table_name(table));
  std::vector<std::string> diffs;
  for (const std::string& name : names) {
    const OwnedChain* want = find_wanted(expected, name);
    const SavedChain* chain = current != nullptr ? current->find(name) : nullptr;
    const std::vector<ChainReference> refs = outside_references(current, name, names);
    if (want == nullptr) {
      if (chain != nullptr) diffs.push_back("unexpected chain " + name + " (" + std::string(why_absent) + ")");
      for (const ChainReference& ref : refs)
        diffs.push_back("unexpected jump to " + name + " in " + ref.chain + ": " + rule_line(ref.chain, ref.spec));
      continue;
    }
    if (chain == nullptr)
      diffs.push_back("chain " + name + " is missing");
    else
      compare_body(name, chain->rules, want->body, diffs);
    compare_jumps(*want, current, refs, diffs);
  }
  return diffs;
}

}  // namespace manifold::firewall
