// iptables-save parsing, rendering, and the DEL/CHECK derivations built on it. Lines are handled
// one at a time with explicit bounds; nothing here trusts the text to be well formed.
#include "firewall/save_text.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "cni/error.h"

namespace manifold::firewall {

namespace {

constexpr std::size_t kMaxNameLength = 64;  // table or chain names we accept from save text

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

bool is_builtin_chain(std::string_view chain) {
  return chain == "PREROUTING" || chain == "INPUT" || chain == "FORWARD" || chain == "OUTPUT" || chain == "POSTROUTING";
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
  return build_chains_removal(Table::Nat, {inbound_chain_name(ifname), outbound_chain_name(ifname)}, save_text);
}

std::vector<std::string> compare_mesh_rules(std::string_view save_text, std::string_view ifname,
                                            const std::vector<MeshChain>& expected) {
  return compare_chains(Table::Nat, {inbound_chain_name(ifname), outbound_chain_name(ifname)}, expected, save_text,
                        "its direction is not redirected");
}

}  // namespace manifold::firewall
