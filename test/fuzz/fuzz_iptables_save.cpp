// Fuzz target: `iptables-save` output of the pod's network namespace. The input is parsed and used
// the three ways the mesh lifecycle uses it: the ADD payload built against the current rules
// (re-ADD), the DEL payload (rules removed verbatim from the save text) and the CHECK comparison,
// for two interfaces and both families, plus the per-rule helpers. Checks: only CniError escapes,
// payloads are well formed iptables-restore input (start with *nat, end with COMMIT, one line per
// command), the DEL payload names only our chains and only deletes rules that jump to them, and
// the input's tables (with one-word chain policies) render back into text that parses to the same
// chains and rules.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "firewall/mesh_config.h"
#include "firewall/rules.h"
#include "firewall/save_text.h"
#include "fuzz_common.h"

using namespace manifold;

namespace {

const bool kQuiet = fuzz::quiet_logging();

firewall::MeshConfig mesh_config() {
  firewall::MeshConfig cfg;
  cfg.enabled = true;
  cfg.proxy_gid = 2102;
  cfg.outbound_ports_to_ignore = {{25, 25}, {5000, 5010}};
  return cfg;
}

std::vector<std::string> lines_of(const std::string& payload) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < payload.size()) {
    size_t end = payload.find('\n', start);
    if (end == std::string::npos) fuzz::fuzz_bug("payload does not end with a newline");
    lines.push_back(payload.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

void check_payload_shape(const std::string& payload, const char* what) {
  if (payload.empty()) return;
  const std::vector<std::string> lines = lines_of(payload);
  if (lines.size() < 2 || lines.front() != "*nat" || lines.back() != "COMMIT")
    fuzz::fuzz_bug(std::string(what) + " payload is not one *nat ... COMMIT block");
  for (const std::string& line : lines)
    if (line.find('\0') != std::string::npos) fuzz::fuzz_bug(std::string(what) + " payload line contains NUL");
}

void check_del_payload(const std::string& payload, const std::string& ifname) {
  check_payload_shape(payload, "DEL");
  const std::string in = firewall::inbound_chain_name(ifname);
  const std::string out = firewall::outbound_chain_name(ifname);
  for (const std::string& line : lines_of(payload)) {
    if (line == "*nat" || line == "COMMIT") continue;
    if (line.rfind(":", 0) == 0) {
      if (line != ":" + in + " - [0:0]" && line != ":" + out + " - [0:0]")
        fuzz::fuzz_bug("DEL flushes a foreign chain: " + line);
    } else if (line.rfind("-X ", 0) == 0) {
      if (line != "-X " + in && line != "-X " + out) fuzz::fuzz_bug("DEL deletes a foreign chain: " + line);
    } else if (line.rfind("-D ", 0) == 0) {
      const std::string rest = line.substr(3);
      const size_t space = rest.find(' ');
      const std::string target = firewall::rule_target(space == std::string::npos ? "" : rest.substr(space + 1));
      if (target != in && target != out) fuzz::fuzz_bug("DEL removes a rule that does not jump to our chains: " + line);
    } else {
      fuzz::fuzz_bug("unexpected DEL payload line: " + line);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = fuzz::as_text(data, size);

  firewall::SaveText saved;
  if (!fuzz::accepts([&] { saved = firewall::parse_save_text(input); })) return 0;
  for (const firewall::SavedTable& table : saved.tables) {
    for (const firewall::SavedChain& chain : table.chains) {
      (void)firewall::first_foreign_mesh_jump(chain);
      for (const std::string& rule : chain.rules) {
        (void)firewall::split_rule_words(rule);
        (void)firewall::references_to(table, firewall::rule_target(rule));
      }
    }
    // A chain policy is one word in real save text; a quoted one with blanks cannot render back.
    bool plain = true;
    for (const firewall::SavedChain& chain : table.chains)
      plain = plain && chain.policy.find_first_of(" \t") == std::string::npos;
    if (!plain) continue;
    const firewall::SaveText again = firewall::parse_save_text(firewall::render_table(table));
    if (again.tables.size() != 1 || again.tables.front().chains.size() != table.chains.size())
      fuzz::fuzz_bug("render_table does not parse back to the same chains: table " + table.name);
    for (size_t i = 0; i < table.chains.size(); ++i)
      if (again.tables.front().chains[i].name != table.chains[i].name ||
          again.tables.front().chains[i].rules != table.chains[i].rules)
        fuzz::fuzz_bug("render_table does not parse back to the same rules: chain " + table.chains[i].name);
  }

  const firewall::MeshConfig cfg = mesh_config();
  for (const char* ifname : {"net1", "eth0"}) {
    std::string del;
    fuzz::accepts_no_internal([&] { del = firewall::build_del_payload(input, ifname); }, "build_del_payload");
    check_del_payload(del, ifname);
    for (firewall::Family family : {firewall::Family::V4, firewall::Family::V6}) {
      std::string add;
      fuzz::accepts_no_internal([&] { add = firewall::build_add_payload(ifname, cfg, family, input); },
                                "build_add_payload");
      check_payload_shape(add, "ADD");
      const std::vector<firewall::MeshChain> expected = firewall::mesh_chains(ifname, cfg, family);
      fuzz::accepts_no_internal([&] { (void)firewall::compare_mesh_rules(input, ifname, expected); },
                                "compare_mesh_rules");
    }
  }
  return 0;
}
