// Golden-text tests for the policy rule builder: the golden example's payloads (policy_golden.h),
// allow forms (every port, protocol only, ranges, SCTP, /0), one direction only, re-apply over an
// existing table without duplicate jumps, removal of a direction no longer isolated, chain names.
#include <catch2/catch.hpp>

#include "cni/error.h"
#include "firewall/fake_runner.h"
#include "firewall/save_text.h"
#include "policy/rule_builder.h"
#include "policy_golden.h"
#include "policy_world.h"

using namespace manifold;
using namespace manifold::policy;
using firewall::Family;

namespace {

AttachmentRules rules_of(const std::vector<MultiNetworkPolicy>& policies, bool with_peers = true) {
  const PeerWorld world = test::peer_world();
  return evaluate(test::web_pod(), "default/blue", policies, with_peers ? &world : nullptr);
}

// The ingress chain body of `rules` for `family`, without the fixed head and the deny.
std::vector<std::string> allows_in(const AttachmentRules& rules, Family family) {
  const auto chains = policy_chains("net1", rules, family, DenyAction::Drop);
  REQUIRE(!chains.empty());
  std::vector<std::string> body = chains[0].body;
  const std::size_t head = family == Family::V4 ? 2 : 11;
  return std::vector<std::string>(body.begin() + head, body.end() - 1);
}

}  // namespace

TEST_CASE("policy: the golden example's IPv4 payload with every peer known", "[policy]") {
  const AttachmentRules r = rules_of({test::golden_policy()});
  CHECK(build_policy_payload("net1", r, Family::V4, DenyAction::Drop, "") == test::kGoldenPolicyV4);
}

TEST_CASE("policy: the golden example's IPv6 payload at ADD, peers unknown, reject", "[policy]") {
  const AttachmentRules r = rules_of({test::golden_policy()}, false);
  CHECK(build_policy_payload("net1", r, Family::V6, DenyAction::Reject, "") == test::kGoldenPolicyV6AtAdd);
}

TEST_CASE("policy: each allow form renders in canonical save form", "[policy]") {
  const auto p = test::policy_of("p", R"({"podSelector": {}, "ingress": [
      {"ports": [{"protocol": "UDP"}, {"protocol": "SCTP", "port": 3868}, {"port": 1, "endPort": 1024}]},
      {"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}, {"ipBlock": {"cidr": "::/0"}}]},
      {}]})");
  const AttachmentRules r = rules_of({p});
  CHECK(allows_in(r, Family::V4) ==
        std::vector<std::string>{
            "-p udp -m comment --comment \"mnp/net1/p ingress[0]\" -j ACCEPT",
            "-p sctp -m conntrack --ctorigdstport 3868 -m comment --comment \"mnp/net1/p ingress[0]\" -j ACCEPT",
            "-p tcp -m conntrack --ctorigdstport 1:1024 -m comment --comment \"mnp/net1/p ingress[0]\" -j ACCEPT",
            "-m comment --comment \"mnp/net1/p ingress[1]\" -j ACCEPT",
            "-m comment --comment \"mnp/net1/p ingress[2]\" -j ACCEPT"});
  // In IPv6 the IPv4 /0 block is absent and the IPv6 one present; "every peer" is in both.
  CHECK(allows_in(r, Family::V6) ==
        std::vector<std::string>{
            "-p udp -m comment --comment \"mnp/net1/p ingress[0]\" -j ACCEPT",
            "-p sctp -m conntrack --ctorigdstport 3868 -m comment --comment \"mnp/net1/p ingress[0]\" -j ACCEPT",
            "-p tcp -m conntrack --ctorigdstport 1:1024 -m comment --comment \"mnp/net1/p ingress[0]\" -j ACCEPT",
            "-m comment --comment \"mnp/net1/p ingress[1]\" -j ACCEPT",
            "-m comment --comment \"mnp/net1/p ingress[2]\" -j ACCEPT"});
}

TEST_CASE("policy: an egress-only policy makes the egress chain and OUTPUT jump alone", "[policy]") {
  const auto p = test::policy_of("out", R"({"podSelector": {}, "policyTypes": ["Egress"],
      "egress": [{"to": [{"ipBlock": {"cidr": "2001:db8:5::/48"}}], "ports": [{"port": 443}]}]})");
  const auto chains = policy_chains("net1", rules_of({p}), Family::V6, DenyAction::Drop);
  REQUIRE(chains.size() == 1);
  CHECK(chains[0].name == "MNP-OUT-net1");
  CHECK(chains[0].hook == "OUTPUT");
  CHECK(chains[0].jump_spec == "-o net1 -m comment --comment \"mnp/net1/egress\" -j MNP-OUT-net1");
  CHECK(chains[0].body.at(chains[0].body.size() - 2) ==
        "-d 2001:db8:5::/48 -p tcp -m tcp --dport 443 -m comment --comment \"mnp/net1/out egress[0]\" -j ACCEPT");
  CHECK(chains[0].body.back() == "-m comment --comment \"mnp/net1/deny\" -j DROP");
  CHECK(policy_chains("net1", rules_of({}), Family::V4, DenyAction::Drop).empty());
}

TEST_CASE("policy: a re-apply refills the chains and keeps the jumps; a lifted direction goes", "[policy]") {
  firewall::SavedTable filter = firewall::empty_table(firewall::Table::Filter);
  const AttachmentRules both = rules_of({test::golden_policy()});
  firewall::apply_restore_payload(filter, build_policy_payload("net1", both, Family::V4, DenyAction::Drop, ""));
  const std::string saved = firewall::render_table(filter);
  const std::string again = build_policy_payload("net1", both, Family::V4, DenyAction::Drop, saved);
  CHECK(again.find("-I ") == std::string::npos);  // the jumps are right: kept
  CHECK(again.find("-D ") == std::string::npos);
  firewall::apply_restore_payload(filter, again);
  CHECK(firewall::render_table(filter) == saved);

  const auto ingress_only = test::policy_of("in", R"({"podSelector": {}})");
  const std::string lifted =
      build_policy_payload("net1", rules_of({ingress_only}), Family::V4, DenyAction::Drop, saved);
  CHECK(lifted.find("-D OUTPUT -o net1 -m comment --comment \"mnp/net1/egress\" -j MNP-OUT-net1\n") !=
        std::string::npos);
  CHECK(lifted.find("-X MNP-OUT-net1\n") != std::string::npos);
  firewall::apply_restore_payload(filter, lifted);
  CHECK(filter.find("MNP-OUT-net1") == nullptr);
  CHECK(filter.find("OUTPUT")->rules.empty());
  CHECK(filter.find("MNP-IN-net1")->rules.back() == "-m comment --comment \"mnp/net1/deny\" -j DROP");
}

TEST_CASE("policy: chain names carry the interface and fit 28 characters", "[policy]") {
  CHECK(ingress_chain_name("net1") == "MNP-IN-net1");
  CHECK(egress_chain_name("abcdefghijklmno") == "MNP-OUT-abcdefghijklmno");
  CHECK(egress_chain_name("abcdefghijklmno").size() <= 28);
  for (const char* bad : {"", "abcdefghijklmnop", "net 1", "a/b", "x\"y"}) {
    INFO(bad);
    CHECK_THROWS_AS(ingress_chain_name(bad), cni::CniError);
  }
}

TEST_CASE("policy: a long policy name is cut to what a comment holds", "[policy]") {
  const std::string name =
      std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') + "." + std::string(61, 'd');
  const auto p = test::policy_of(name, R"({"podSelector": {}, "ingress": [{}]})");
  REQUIRE(p.valid());
  const std::string rule = allows_in(rules_of({p}), Family::V4).at(0);
  const auto start = rule.find('"') + 1;
  CHECK(rule.find('"', start) - start == 255);
}
