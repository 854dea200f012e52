// FakeIptablesRunner: call recording plus a small interpreter for iptables-restore --noflush
// payloads over SavedTable (nat and filter), mirroring the refusals real iptables makes so that lifecycle code is
// tested against the same failure modes (a -D for a missing rule, -X of a referenced chain, …).
#include "firewall/fake_runner.h"

#include <algorithm>
#include <array>

#include "cni/error.h"

namespace manifold::firewall {

namespace {

constexpr std::array<std::string_view, 14> kStandardTargets = {
    "ACCEPT",     "DROP", "RETURN", "REJECT",   "REDIRECT", "DNAT", "SNAT",
    "MASQUERADE", "LOG",  "MARK",   "CONNMARK", "TPROXY",   "CT",   "NETMAP",
};

[[noreturn]] void refuse(std::size_t line_no, const std::string& why) {
  throw cni::CniError(cni::ErrorCode::Firewall, "line " + std::to_string(line_no) + " failed: " + why);
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Splits "<chain> <spec>" into its two parts.
std::pair<std::string, std::string> chain_and_spec(std::string_view rest) {
  const auto space = rest.find(' ');
  if (space == std::string_view::npos) return {std::string(rest), {}};
  return {std::string(rest.substr(0, space)), std::string(rest.substr(space + 1))};
}

SavedChain& existing_chain(SavedTable& table, const std::string& name, std::size_t line_no) {
  SavedChain* chain = table.find(name);
  if (chain == nullptr) refuse(line_no, "chain '" + name + "' does not exist");
  return *chain;
}

void check_target(const SavedTable& table, const std::string& spec, std::size_t line_no) {
  const std::string target = rule_target(spec);
  if (target.empty()) return;
  if (std::find(kStandardTargets.begin(), kStandardTargets.end(), target) != kStandardTargets.end()) return;
  if (table.find(target) == nullptr) refuse(line_no, "Couldn't load target '" + target + "'");
}

/// A ":CHAIN POLICY" line: sets a built-in chain's policy, creates or (--noflush) flushes a user chain.
void apply_chain_line(SavedTable& table, std::string_view line, std::size_t line_no) {
  const std::vector<std::string> words = split_rule_words(line.substr(1));
  if (words.size() < 2) refuse(line_no, "malformed chain line");
  if (SavedChain* chain = table.find(words[0])) {
    if (is_builtin_chain(words[0])) {
      if (words[1] != "-") chain->policy = words[1];
    } else {
      chain->rules.clear();  // --noflush: a user chain line flushes an existing chain
    }
  } else {
    if (is_builtin_chain(words[0])) refuse(line_no, "built-in chain missing");
    table.chains.push_back(SavedChain{words[0], "-", {}});
  }
}

/// "-I CHAIN [N] SPEC": inserts at position N (1 by default) like iptables-restore.
void insert_rule(SavedTable& table, const std::string& name, std::string spec, std::size_t line_no) {
  SavedChain& chain = existing_chain(table, name, line_no);
  std::size_t position = 1;
  auto [first, rest] = chain_and_spec(spec);
  if (all_digits(first) && first.size() < 7) {
    position = std::stoul(first);
    spec = rest;
  }
  if (position < 1 || position > chain.rules.size() + 1) refuse(line_no, "Index of insertion too big");
  check_target(table, spec, line_no);
  chain.rules.insert(chain.rules.begin() + static_cast<long>(position - 1), spec);
}

void apply_line(SavedTable& table, std::string_view line, std::size_t line_no) {
  if (line.front() == ':') return apply_chain_line(table, line, line_no);
  if (line.size() < 3 || line[0] != '-' || line[2] != ' ') refuse(line_no, "unknown command");
  const char op = line[1];
  auto [name, spec] = chain_and_spec(line.substr(3));
  switch (op) {
    case 'N':
      if (table.find(name) != nullptr) refuse(line_no, "Chain already exists");
      table.chains.push_back(SavedChain{name, "-", {}});
      return;
    case 'A': {
      SavedChain& chain = existing_chain(table, name, line_no);
      check_target(table, spec, line_no);
      chain.rules.push_back(spec);
      return;
    }
    case 'I':
      return insert_rule(table, name, spec, line_no);
    case 'D': {
      SavedChain& chain = existing_chain(table, name, line_no);
      auto it = std::find(chain.rules.begin(), chain.rules.end(), spec);
      if (it == chain.rules.end()) refuse(line_no, "Bad rule (does a matching rule exist in that chain?)");
      chain.rules.erase(it);
      return;
    }
    case 'F':
      existing_chain(table, name, line_no).rules.clear();
      return;
    case 'X': {
      SavedChain& chain = existing_chain(table, name, line_no);
      if (is_builtin_chain(name)) refuse(line_no, "Can't delete built-in chain");
      if (!chain.rules.empty()) refuse(line_no, "Directory not empty");
      if (!references_to(table, name).empty()) refuse(line_no, "Too many links");
      table.chains.erase(table.chains.begin() + (&chain - table.chains.data()));
      return;
    }
    default:
      refuse(line_no, "unknown command");
  }
}

}  // namespace

SavedTable empty_table(Table table) {
  SavedTable out{std::string(table_name(table)), {}};
  if (table == Table::Nat) {
    for (const char* name : {"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"})
      out.chains.push_back({name, "ACCEPT", {}});
  } else {
    for (const char* name : {"INPUT", "FORWARD", "OUTPUT"}) out.chains.push_back({name, "ACCEPT", {}});
  }
  return out;
}

SavedTable empty_nat_table() { return empty_table(Table::Nat); }

Table payload_table(const std::string& payload) {
  const std::size_t star = payload.find('*');
  const std::string name =
      star == std::string::npos ? "" : payload.substr(star + 1, payload.find('\n', star) - star - 1);
  if (name == "nat") return Table::Nat;
  if (name == "filter") return Table::Filter;
  throw cni::CniError(cni::ErrorCode::Firewall, "table '" + name + "' is not simulated");
}

void apply_restore_payload(SavedTable& table, const std::string& payload) {
  SavedTable work = table;
  bool in_table = false;
  std::size_t line_no = 0;
  std::size_t start = 0;
  while (start < payload.size()) {
    auto end = payload.find('\n', start);
    if (end == std::string::npos) end = payload.size();
    std::string_view line(payload.data() + start, end - start);
    start = end + 1;
    ++line_no;
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    if (line.front() == '*') {
      if (line.substr(1) != table.name) refuse(line_no, "only the " + table.name + " table is simulated here");
      in_table = true;
    } else if (line == "COMMIT") {
      if (!in_table) refuse(line_no, "COMMIT outside a table");
      in_table = false;
    } else {
      if (!in_table) refuse(line_no, "no table specified");
      apply_line(work, line, line_no);
    }
  }
  if (in_table) refuse(line_no, "no COMMIT line");
  table = std::move(work);
}

SavedTable& FakeIptablesRunner::table(Family family, Backend backend, Table table) {
  auto it = tables_.find({family, backend, table});
  if (it == tables_.end()) it = tables_.emplace(TableKey{family, backend, table}, empty_table(table)).first;
  return it->second;
}

void FakeIptablesRunner::check_present(Family family, Backend backend, bool restore) const {
  if (missing_.count({family, backend}) != 0) {
    const std::string name = restore ? restore_binary_name(family, backend) : save_binary_name(family, backend);
    throw cni::CniError(cni::ErrorCode::Firewall, name + " not found (fake)");
  }
}

std::string FakeIptablesRunner::save(Family family, Backend backend, Table table) {
  calls_.push_back({"save", family, backend, {}, table});
  check_present(family, backend, false);
  return table_text(family, backend, table);
}

void FakeIptablesRunner::restore(Family family, Backend backend, const std::string& payload) {
  calls_.push_back({"restore", family, backend, payload});
  check_present(family, backend, true);
  if (before_restore_) before_restore_(family, backend);
  if (auto it = failures_.find(family); it != failures_.end() && it->second > 0) {
    --it->second;
    throw cni::CniError(cni::ErrorCode::Firewall, restore_binary_name(family, backend) + " failed (injected)");
  }
  apply_restore_payload(table(family, backend, payload_table(payload)), payload);
}

Backend FakeIptablesRunner::detect() {
  calls_.push_back({"detect", Family::V4, detected_, {}});
  return detected_;
}

bool FakeIptablesRunner::available(Family family, Backend backend) { return missing_.count({family, backend}) == 0; }

void FakeIptablesRunner::load(Family family, Backend backend, const std::string& payload) {
  apply_restore_payload(table(family, backend, payload_table(payload)), payload);
}

std::string FakeIptablesRunner::table_text(Family family, Backend backend, Table table) const {
  auto it = tables_.find({family, backend, table});
  const SavedTable saved = it == tables_.end() ? empty_table(table) : it->second;
  return "# Generated by fake " + save_binary_name(family, backend) + "\n" + render_table(saved) + "# Completed\n";
}

std::size_t FakeIptablesRunner::count(const std::string& op) const {
  return static_cast<std::size_t>(
      std::count_if(calls_.begin(), calls_.end(), [&](const Call& c) { return c.op == op; }));
}

}  // namespace manifold::firewall
