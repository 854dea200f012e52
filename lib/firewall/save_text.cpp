// iptables-save parsing, rendering, and the DEL/CHECK derivations built on it. Lines are handled
// one at a time with explicit bounds; nothing here trusts the text to be well formed.
#include "firewall/save_text.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "cni/error.h"

namespace manifold::firewall {

namespace {

constexpr std::size_t kMaxNameLength = 64;    // table or chain names we accept from save text
constexpr std::size_t kMaxMessageRule = 512;  // how much of a rule a CHECK message repeats

struct Word {
  std::string text;
  bool quoted = false;
};

std::vector<Word> split_words(std::string_view spec) {
  std::vector<Word> words;
  std::size_t i = 0;
  while (i < spec.size()) {
    while (i < spec.size() && (spec[i] == ' ' || spec[i] == '\t')) ++i;
    if (i >= spec.size()) break;
    Word w;
    while (i < spec.size() && spec[i] != ' ' && spec[i] != '\t') {
      if (spec[i] == '"') {
        w.quoted = true;
        ++i;
        while (i < spec.size() && spec[i] != '"') {
          if (spec[i] == '\\' && i + 1 < spec.size() && (spec[i + 1] == '"' || spec[i + 1] == '\\')) ++i;
          w.text += spec[i++];
        }
        if (i < spec.size()) ++i;  // closing quote
      } else {
        w.text += spec[i++];
      }
    }
    words.push_back(std::move(w));
  }
  return words;
}

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return c > 0x20 && c < 0x7f && c != '"'; });
}

std::string_view trim_right(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
  return line;
}

// Parser state: whether a table block is open (the last table of `out`), and a name index of that
// table's chains so hostile input with many chains stays linear.
struct ParseState {
  SaveText out;
  bool open = false;
  std::unordered_map<std::string, std::size_t> chain_index;
};

// Applies one line to the parse state; returns false when the line is malformed.
bool parse_line(std::string_view line, ParseState& st) {
  if (line.front() == '*') {
    const std::string_view name = line.substr(1);
    if (!valid_name(name)) return false;
    st.out.tables.push_back(SavedTable{std::string(name), {}});
    st.chain_index.clear();
    st.open = true;
    return true;
  }
  if (line == "COMMIT") {
    if (!st.open) return false;
    st.open = false;
    return true;
  }
  if (!st.open) return false;
  SavedTable& table = st.out.tables.back();
  if (line.front() == ':') {
    const std::vector<Word> words = split_words(line.substr(1));
    if (words.size() < 2 || words.size() > 3 || !valid_name(words[0].text)) return false;
    if (!st.chain_index.emplace(words[0].text, table.chains.size()).second) return false;
    table.chains.push_back(SavedChain{words[0].text, words[1].text, {}});
    return true;
  }
  if (line.starts_with("-A ")) {
    const std::string_view rest = line.substr(3);
    const auto space = rest.find(' ');
    const auto it = st.chain_index.find(std::string(rest.substr(0, space)));
    if (it == st.chain_index.end()) return false;
    table.chains[it->second].rules.emplace_back(space == std::string_view::npos ? std::string_view{}
                                                                                : rest.substr(space + 1));
    return true;
  }
  return false;
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

// References to `name` from chains other than our own two (whose bodies are flushed anyway).
std::vector<ChainReference> outside_references(const SavedTable* nat, std::string_view name, std::string_view in,
                                               std::string_view out) {
  std::vector<ChainReference> refs;
  if (nat == nullptr) return refs;
  for (ChainReference& ref : references_to(*nat, name))
    if (ref.chain != in && ref.chain != out) refs.push_back(std::move(ref));
  return refs;
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

void compare_jumps(const MeshChain& want, const SavedTable* nat, const std::vector<ChainReference>& refs,
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
  const SavedChain* hook = nat->find(want.hook);
  const std::size_t foreign = first_foreign_mesh_jump(*hook);
  if (ref.index >= foreign)
    diffs.push_back("the jump to " + want.name + " in " + want.hook + " (rule " + std::to_string(ref.index + 1) +
                    ") comes after the jump to " + rule_target(hook->rules[foreign]) + " (rule " +
                    std::to_string(foreign + 1) + ")");
}

}  // namespace

const SavedChain* SavedTable::find(std::string_view chain) const {
  for (const SavedChain& c : chains)
    if (c.name == chain) return &c;
  return nullptr;
}

SavedChain* SavedTable::find(std::string_view chain) {
  for (SavedChain& c : chains)
    if (c.name == chain) return &c;
  return nullptr;
}

const SavedTable* SaveText::find(std::string_view table) const {
  for (const SavedTable& t : tables)
    if (t.name == table) return &t;
  return nullptr;
}

SaveText parse_save_text(std::string_view text) {
  if (text.size() > kMaxSaveTextBytes)
    throw cni::CniError(cni::ErrorCode::Firewall,
                        "iptables-save output is larger than 16 MiB (" + std::to_string(text.size()) + " bytes)");
  ParseState st;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (line.size() > kMaxSaveLineBytes) {
      ++st.out.skipped_lines;
      continue;
    }
    line = trim_right(line);
    if (line.empty() || line.front() == '#') continue;
    if (line.find('\0') != std::string_view::npos || !parse_line(line, st)) ++st.out.skipped_lines;
  }
  return std::move(st.out);
}

std::vector<std::string> split_rule_words(std::string_view spec) {
  std::vector<std::string> words;
  for (Word& w : split_words(spec)) words.push_back(std::move(w.text));
  return words;
}

std::string rule_target(std::string_view spec) {
  const std::vector<Word> words = split_words(spec);
  std::string target;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const Word& w = words[i];
    if (w.quoted) continue;
    if (w.text == "--comment") {
      ++i;  // its value is free text
    } else if ((w.text == "-j" || w.text == "--jump" || w.text == "-g" || w.text == "--goto") && i + 1 < words.size()) {
      target = words[++i].text;
    }
  }
  return target;
}

std::vector<ChainReference> references_to(const SavedTable& table, std::string_view chain) {
  std::vector<ChainReference> refs;
  for (const SavedChain& c : table.chains)
    for (std::size_t i = 0; i < c.rules.size(); ++i)
      if (rule_target(c.rules[i]) == chain) refs.push_back({c.name, i, c.rules[i]});
  return refs;
}

std::size_t first_foreign_mesh_jump(const SavedChain& hook) {
  for (std::size_t i = 0; i < hook.rules.size(); ++i)
    if (is_foreign_mesh_chain(rule_target(hook.rules[i]))) return i;
  return hook.rules.size();
}

bool is_builtin_nat_chain(std::string_view chain) {
  return chain == "PREROUTING" || chain == "INPUT" || chain == "OUTPUT" || chain == "POSTROUTING";
}

std::string render_table(const SavedTable& table) {
  std::string text = "*" + table.name + "\n";
  for (const SavedChain& c : table.chains) text += ":" + c.name + " " + c.policy + " [0:0]\n";
  for (const SavedChain& c : table.chains)
    for (const std::string& rule : c.rules)
      text += (rule.empty() ? "-A " + c.name : "-A " + c.name + " " + rule) + "\n";
  text += "COMMIT\n";
  return text;
}

std::string build_del_payload(std::string_view save_text, std::string_view ifname) {
  const std::string in = inbound_chain_name(ifname);
  const std::string out = outbound_chain_name(ifname);
  const SaveText saved = parse_save_text(save_text);
  const SavedTable* nat = saved.find("nat");
  std::vector<std::string> existing;
  std::vector<ChainReference> refs;
  for (const std::string& name : {in, out}) {
    if (nat != nullptr && nat->find(name) != nullptr) existing.push_back(name);
    for (ChainReference& ref : outside_references(nat, name, in, out)) refs.push_back(std::move(ref));
  }
  if (existing.empty() && refs.empty()) return {};
  std::string payload = "*nat\n";
  for (const std::string& name : existing) payload += ":" + name + " - [0:0]\n";
  for (const ChainReference& ref : refs)
    payload += (ref.spec.empty() ? "-D " + ref.chain : "-D " + ref.chain + " " + ref.spec) + "\n";
  for (const std::string& name : existing) payload += "-X " + name + "\n";
  payload += "COMMIT\n";
  return payload;
}

std::vector<std::string> compare_mesh_rules(std::string_view save_text, std::string_view ifname,
                                            const std::vector<MeshChain>& expected) {
  const std::string in = inbound_chain_name(ifname);
  const std::string out = outbound_chain_name(ifname);
  const SaveText saved = parse_save_text(save_text);
  const SavedTable* nat = saved.find("nat");
  std::vector<std::string> diffs;
  for (const std::string& name : {in, out}) {
    const auto want =
        std::find_if(expected.begin(), expected.end(), [&](const MeshChain& c) { return c.name == name; });
    const SavedChain* chain = nat != nullptr ? nat->find(name) : nullptr;
    const std::vector<ChainReference> refs = outside_references(nat, name, in, out);
    if (want == expected.end()) {
      if (chain != nullptr) diffs.push_back("unexpected chain " + name + " (its direction is not redirected)");
      for (const ChainReference& ref : refs)
        diffs.push_back("unexpected jump to " + name + " in " + ref.chain + ": " + rule_line(ref.chain, ref.spec));
      continue;
    }
    if (chain == nullptr)
      diffs.push_back("chain " + name + " is missing");
    else
      compare_body(name, chain->rules, want->body, diffs);
    compare_jumps(*want, nat, refs, diffs);
  }
  return diffs;
}

}  // namespace manifold::firewall
