// The mesh redirect lifecycle against the node's real iptables in throwaway network namespaces,
// for both backends (nft and legacy) and both families: our jumps sit at position 1 ahead of
// Linkerd-style PROXY_INIT_* rules, the generated text round-trips byte-identically (CHECK passes),
// ADD twice gives an identical table, ADD/DEL/DEL leaves no CNIMESH line and execs nothing the
// second time, foreign chains and another attachment's chains are untouched, and CHECK fails after
// deleting any single rule.
#include <catch2/catch.hpp>

#include "cni/error.h"
#include "scoping/mesh.h"
#include "scoping/mesh_config.h"
#include "firewall/rules.h"
#include "firewall/save_text.h"
#include "netns_fixture.h"

using namespace manifold;
using namespace manifold::firewall;
using namespace manifold::scoping;
using namespace manifold::firewall::itest;

namespace {

// Linkerd's rules in the form proxy-init installs them (appended, unscoped jumps).
const char* kProxyInit =
    "*nat\n"
    ":PROXY_INIT_OUTPUT - [0:0]\n"
    ":PROXY_INIT_REDIRECT - [0:0]\n"
    "-A PREROUTING -m comment --comment \"proxy-init/install-proxy-init-prerouting\" -j PROXY_INIT_REDIRECT\n"
    "-A OUTPUT -m comment --comment \"proxy-init/install-proxy-init-output\" -j PROXY_INIT_OUTPUT\n"
    "-A PROXY_INIT_OUTPUT -o lo -m comment --comment \"proxy-init/ignore-loopback\" -j RETURN\n"
    "-A PROXY_INIT_OUTPUT -p tcp -m comment --comment \"proxy-init/redirect-all-outgoing-to-proxy-port\" "
    "-j REDIRECT --to-ports 4140\n"
    "-A PROXY_INIT_REDIRECT -p tcp -m multiport --dports 4190,4191 -m comment --comment "
    "\"proxy-init/ignore-port-4190,4191\" -j RETURN\n"
    "-A PROXY_INIT_REDIRECT -p tcp -m comment --comment \"proxy-init/redirect-all-incoming-to-proxy-port\" "
    "-j REDIRECT --to-ports 4143\n"
    "COMMIT\n";

// The basic mesh example (ports, UID and subnets to skip) with the backend forced.
MeshConfig basic_config(Backend backend) {
  Json j = Json::parse(R"({"enabled": true, "inboundPort": 4143, "outboundPort": 4140, "proxyUID": 2102,
                           "inboundPortsToIgnore": ["4190", "4191"]})");
  j["iptablesMode"] = std::string(backend_name(backend));
  return parse_mesh_config(j);
}

// Every optional rule, so the canonical-form claim is tested for all of them.
MeshConfig full_config(Backend backend) {
  Json j = Json::parse(R"({
    "enabled": true, "proxyUID": 2102, "proxyGID": 2103,
    "inboundPortsToIgnore": ["4190", "4191", "5000-5010"],
    "outboundPortsToIgnore": ["1","2","3","4","5","6","7","8","9","10","11","12","13","14","20-30"],
    "inboundSubnetsToIgnore": ["10.1.2.3/16", "fd00::/8", "192.168.7.1/32", "2001:db8::5/128"],
    "outboundSubnetsToIgnore": ["192.168.5.7/32", "2001:db8::1/32", "0.0.0.0/0"]})");
  j["iptablesMode"] = std::string(backend_name(backend));
  return parse_mesh_config(j);
}

const SavedChain& chain_of(const SaveText& saved, const char* name) {
  const SavedTable* nat = saved.find("nat");
  REQUIRE(nat != nullptr);
  const SavedChain* chain = nat->find(name);
  REQUIRE(chain != nullptr);
  return *chain;
}

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

}  // namespace

TEST_CASE("apply puts our jumps at position 1 and the rules round-trip byte-identically", "[firewall][netns]") {
  const Backend backend = GENERATE(Backend::Nft, Backend::Legacy);
  const Family family = GENERATE(Family::V4, Family::V6);
  TestNetns ns;
  FW_SKIP_UNLESS_USABLE(ns, family, backend);
  INFO(backend_name(backend) << " " << family_name(family));
  REQUIRE(ns.load(family, backend, kProxyInit).rc == 0);  // the mesh's own rules were there first
  RealIptablesRunner runner = ns.runner();
  const MeshConfig cfg = full_config(backend);
  const MeshState state = apply_mesh(runner, "net1", cfg, {family});
  CHECK(state.backend == std::optional<Backend>(backend));

  const SaveText saved = parse_save_text(ns.nat_rules(family, backend));
  CHECK(rule_target(chain_of(saved, "PREROUTING").rules.at(0)) == "CNIMESH-IN-net1");
  CHECK(rule_target(chain_of(saved, "OUTPUT").rules.at(0)) == "CNIMESH-OUT-net1");
  const std::vector<MeshChain> expected = mesh_chains("net1", cfg, family);
  CHECK(chain_of(saved, "CNIMESH-IN-net1").rules == expected.at(0).body);
  CHECK(chain_of(saved, "CNIMESH-OUT-net1").rules == expected.at(1).body);
  CHECK(chain_of(saved, "PREROUTING").rules.at(0) == expected.at(0).jump_spec);
  CHECK(chain_of(saved, "OUTPUT").rules.at(0) == expected.at(1).jump_spec);
  CHECK(check_mesh(runner, state, cfg).empty());
}

TEST_CASE("apply twice gives an identical iptables-save", "[firewall][netns]") {
  const Backend backend = GENERATE(Backend::Nft, Backend::Legacy);
  TestNetns ns;
  FW_SKIP_UNLESS_USABLE(ns, Family::V4, backend);
  RealIptablesRunner runner = ns.runner();
  const MeshConfig cfg = basic_config(backend);
  apply_mesh(runner, "net1", cfg, {Family::V4});
  const std::string first = ns.nat_rules(Family::V4, backend);
  const MeshState again = apply_mesh(runner, "net1", cfg, {Family::V4});
  CHECK(ns.nat_rules(Family::V4, backend) == first);
  CHECK_FALSE(has(again.payloads.at(Family::V4), "-I "));
  CHECK(check_mesh(runner, again, cfg).empty());
}

TEST_CASE("the mesh's rules appended after ours leave our jumps first", "[firewall][netns]") {
  const Backend backend = GENERATE(Backend::Nft, Backend::Legacy);
  TestNetns ns;
  FW_SKIP_UNLESS_USABLE(ns, Family::V4, backend);
  RealIptablesRunner runner = ns.runner();
  const MeshConfig cfg = basic_config(backend);
  const MeshState state = apply_mesh(runner, "net1", cfg, {Family::V4});
  REQUIRE(ns.load(Family::V4, backend, kProxyInit).rc == 0);  // linkerd-init runs after CNI ADD
  const SaveText saved = parse_save_text(ns.nat_rules(Family::V4, backend));
  CHECK(rule_target(chain_of(saved, "PREROUTING").rules.at(0)) == "CNIMESH-IN-net1");
  CHECK(rule_target(chain_of(saved, "PREROUTING").rules.at(1)) == "PROXY_INIT_REDIRECT");
  CHECK(check_mesh(runner, state, cfg).empty());
}

TEST_CASE("remove twice leaves no CNIMESH line and execs nothing the second time", "[firewall][netns]") {
  const Backend backend = GENERATE(Backend::Nft, Backend::Legacy);
  TestNetns ns;
  FW_SKIP_UNLESS_USABLE(ns, Family::V4, backend);
  REQUIRE(ns.load(Family::V4, backend, kProxyInit).rc == 0);
  const std::string foreign_only = ns.nat_rules(Family::V4, backend);
  RealIptablesRunner real = ns.runner();
  CountingRunner runner(real);
  const MeshState state = apply_mesh(runner, "net1", full_config(backend), {Family::V4});
  REQUIRE(has(ns.nat_rules(Family::V4, backend), "CNIMESH"));
  remove_mesh(runner, state);
  CHECK_FALSE(has(ns.nat_rules(Family::V4, backend), "CNIMESH"));
  CHECK(ns.nat_rules(Family::V4, backend) == foreign_only);  // PROXY_INIT_* intact, byte for byte
  runner.restores = 0;
  remove_mesh(runner, state);
  CHECK(runner.restores == 0);
  CHECK(ns.nat_rules(Family::V4, backend) == foreign_only);
}

TEST_CASE("another attachment's chains are untouched", "[firewall][netns]") {
  const Backend backend = GENERATE(Backend::Nft, Backend::Legacy);
  TestNetns ns;
  FW_SKIP_UNLESS_USABLE(ns, Family::V4, backend);
  RealIptablesRunner runner = ns.runner();
  const MeshConfig cfg = basic_config(backend);
  const MeshState net2 = apply_mesh(runner, "net2", cfg, {Family::V4});
  const std::string net2_only = ns.nat_rules(Family::V4, backend);
  const MeshState net1 = apply_mesh(runner, "net1", cfg, {Family::V4});
  CHECK(check_mesh(runner, net2, cfg).empty());
  remove_mesh(runner, net1);
  CHECK(ns.nat_rules(Family::V4, backend) == net2_only);
  CHECK(check_mesh(runner, net2, cfg).empty());
}

TEST_CASE("check fails after deleting any one rule and passes otherwise", "[firewall][netns]") {
  const Backend backend = GENERATE(Backend::Nft, Backend::Legacy);
  const Family family = GENERATE(Family::V4, Family::V6);
  TestNetns ns;
  FW_SKIP_UNLESS_USABLE(ns, family, backend);
  INFO(backend_name(backend) << " " << family_name(family));
  REQUIRE(ns.load(family, backend, kProxyInit).rc == 0);
  RealIptablesRunner runner = ns.runner();
  const MeshConfig cfg = full_config(backend);
  const MeshState state = apply_mesh(runner, "net1", cfg, {family});
  REQUIRE(check_mesh(runner, state, cfg).empty());

  const SaveText saved = parse_save_text(ns.nat_rules(family, backend));
  std::vector<std::pair<std::string, std::string>> ours;
  for (const SavedChain& c : saved.find("nat")->chains)
    for (const std::string& rule : c.rules)
      if (has(rule, "cnimesh/net1/")) ours.emplace_back(c.name, rule);
  REQUIRE(ours.size() >= 10);
  for (const auto& [chain, spec] : ours) {
    INFO("deleted from " << chain << ": " << spec);
    REQUIRE(ns.load(family, backend, "*nat\n-D " + chain + " " + spec + "\nCOMMIT\n").rc == 0);
    CHECK_FALSE(check_mesh(runner, state, cfg).empty());
    apply_mesh(runner, "net1", cfg, {family});
    CHECK(check_mesh(runner, state, cfg).empty());
  }
  // The chain itself gone (with its jump): CHECK names it.
  REQUIRE(ns.load(family, backend,
                  "*nat\n:CNIMESH-IN-net1 - [0:0]\n-D PREROUTING " + mesh_chains("net1", cfg, family).at(0).jump_spec +
                      "\n-X CNIMESH-IN-net1\nCOMMIT\n")
              .rc == 0);
  const auto diffs = check_mesh(runner, state, cfg);
  CHECK(std::any_of(diffs.begin(), diffs.end(),
                    [](const std::string& d) { return has(d, "chain CNIMESH-IN-net1 is missing"); }));
}

TEST_CASE("IPv4 and IPv6 together: apply, check, remove", "[firewall][netns]") {
  const Backend backend = GENERATE(Backend::Nft, Backend::Legacy);
  TestNetns ns;
  FW_SKIP_UNLESS_USABLE(ns, Family::V4, backend);
  FW_SKIP_UNLESS_USABLE(ns, Family::V6, backend);
  RealIptablesRunner runner = ns.runner();
  const MeshConfig cfg = full_config(backend);
  const MeshState state = apply_mesh(runner, "net1", cfg, {Family::V4, Family::V6});
  CHECK(state.families == std::vector<Family>{Family::V4, Family::V6});
  CHECK(has(ns.nat_rules(Family::V4, backend), "-s 10.1.0.0/16"));
  CHECK(has(ns.nat_rules(Family::V6, backend), "-s fd00::/8"));
  CHECK_FALSE(has(ns.nat_rules(Family::V6, backend), "10.1.0.0"));
  CHECK(check_mesh(runner, state, cfg).empty());
  // The cached state brings DEL back after a "restart".
  const MeshState cached = MeshState::from_json(Json::parse(state.to_json().dump()));
  remove_mesh(runner, cached);
  CHECK_FALSE(has(ns.nat_rules(Family::V4, backend), "CNIMESH"));
  CHECK_FALSE(has(ns.nat_rules(Family::V6, backend), "CNIMESH"));
}

TEST_CASE("IPv6 failing after IPv4 rolls IPv4 back", "[firewall][netns]") {
  const Backend backend = GENERATE(Backend::Nft, Backend::Legacy);
  TestNetns ns;
  FW_SKIP_UNLESS_USABLE(ns, Family::V4, backend);
  FW_SKIP_UNLESS_USABLE(ns, Family::V6, backend);
  // An ip6tables failure cannot be provoked portably on a healthy kernel, so a decorator refuses the
  // IPv6 restore; the IPv4 apply and its rollback run against the real table.
  RealIptablesRunner real = ns.runner();
  struct NoIpv6 final : IptablesRunner {
    IptablesRunner& inner;
    explicit NoIpv6(IptablesRunner& r) : inner(r) {}
    std::string save(Family f, Backend b, Table t) override { return inner.save(f, b, t); }
    void restore(Family f, Backend b, const std::string& p) override {
      if (f == Family::V6) throw cni::CniError(cni::ErrorCode::Firewall, "ip6tables refused (test)");
      inner.restore(f, b, p);
    }
    Backend detect() override { return inner.detect(); }
    bool available(Family f, Backend b) override { return inner.available(f, b); }
  } runner(real);
  const std::string before = ns.nat_rules(Family::V4, backend);
  CHECK_THROWS_AS(apply_mesh(runner, "net1", basic_config(backend), {Family::V4, Family::V6}), cni::CniError);
  CHECK(ns.nat_rules(Family::V4, backend) == before);
}

TEST_CASE("remove without cache cleans whichever backend holds our rules", "[firewall][netns]") {
  TestNetns ns;
  FW_SKIP_UNLESS_USABLE(ns, Family::V4, Backend::Nft);
  FW_SKIP_UNLESS_USABLE(ns, Family::V4, Backend::Legacy);
  RealIptablesRunner runner = ns.runner();
  apply_mesh(runner, "net1", basic_config(Backend::Legacy), {Family::V4});
  apply_mesh(runner, "net1", basic_config(Backend::Nft), {Family::V4});
  REQUIRE(has(ns.nat_rules(Family::V4, Backend::Legacy), "CNIMESH"));
  REQUIRE(has(ns.nat_rules(Family::V4, Backend::Nft), "CNIMESH"));
  remove_mesh(runner, MeshState::rebuilt("net1", {Family::V4}));
  CHECK_FALSE(has(ns.nat_rules(Family::V4, Backend::Legacy), "CNIMESH"));
  CHECK_FALSE(has(ns.nat_rules(Family::V4, Backend::Nft), "CNIMESH"));
}
