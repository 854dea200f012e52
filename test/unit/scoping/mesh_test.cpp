// Unit tests for the mesh lifecycle against the fake runner: apply/re-apply/remove/check, backend
// choice, IPv6 rollback, idempotent DEL that execs nothing, the retry after a racing change, DEL
// without cache over both backends, the MeshState codec and the network-status fields.
#include <catch2/catch.hpp>

#include "cni/error.h"
#include "firewall/fake_runner.h"
#include "scoping/mesh.h"
#include "scoping/mesh_config.h"
#include "firewall/rules.h"

using namespace manifold;
using namespace manifold::firewall;
using namespace manifold::scoping;

namespace {

MeshConfig config(const char* extra = "{}") {
  Json j = Json::parse(extra);
  j["enabled"] = true;
  return parse_mesh_config(j);
}

const std::vector<Family> kV4{Family::V4};
const std::vector<Family> kBoth{Family::V4, Family::V6};

// Linkerd-like rules loaded after ours, as linkerd-init appends them.
const char* kProxyInit =
    "*nat\n:PROXY_INIT_REDIRECT - [0:0]\n:PROXY_INIT_OUTPUT - [0:0]\n"
    "-A PROXY_INIT_REDIRECT -p tcp -m multiport --dports 4190,4191 -j RETURN\n"
    "-A PROXY_INIT_OUTPUT -o lo -j RETURN\n"
    "-A PREROUTING -m comment --comment \"proxy-init/install-proxy-init-prerouting\" -j PROXY_INIT_REDIRECT\n"
    "-A OUTPUT -m comment --comment \"proxy-init/install-proxy-init-output\" -j PROXY_INIT_OUTPUT\n"
    "COMMIT\n";

bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

}  // namespace

TEST_CASE("firewall: apply installs both chains at position 1 and records the state", "[firewall]") {
  FakeIptablesRunner runner;
  runner.load(Family::V4, Backend::Nft, kProxyInit);
  const MeshState state = apply_mesh(runner, "net1", config(), kV4);
  CHECK(state.ifname == "net1");
  CHECK(state.backend == std::optional<Backend>(Backend::Nft));
  CHECK(state.families == kV4);
  CHECK(state.chains == std::vector<std::string>{"CNIMESH-IN-net1", "CNIMESH-OUT-net1"});
  CHECK(state.payloads.at(Family::V4) == build_add_payload("net1", config(), Family::V4, ""));
  CHECK(runner.count("detect") == 1);  // iptablesMode auto
  const SaveText saved = parse_save_text(runner.table_text(Family::V4, Backend::Nft));
  const SavedTable& nat = *saved.find("nat");
  CHECK(rule_target(nat.find("PREROUTING")->rules.at(0)) == "CNIMESH-IN-net1");
  CHECK(rule_target(nat.find("OUTPUT")->rules.at(0)) == "CNIMESH-OUT-net1");
  CHECK(check_mesh(runner, state, config()).empty());
}

TEST_CASE("firewall: apply runs exactly one restore per family with the whole payload (IPv4 first)", "[firewall]") {
  FakeIptablesRunner runner;
  const MeshState state = apply_mesh(runner, "net1", config(R"({"iptablesMode": "nft"})"), kBoth);
  std::vector<Family> restored;
  for (const FakeIptablesRunner::Call& call : runner.calls()) {
    if (call.op != "restore") continue;
    restored.push_back(call.family);
    CHECK(call.payload == state.payloads.at(call.family));
    CHECK(call.payload.rfind("*nat\n", 0) == 0);
    CHECK(contains(call.payload, "-I PREROUTING 1 -i net1 -p tcp"));
    CHECK(contains(call.payload, "-I OUTPUT 1 -o net1 -p tcp"));
  }
  CHECK(restored == kBoth);
}

TEST_CASE("firewall: apply twice leaves an identical table", "[firewall]") {
  FakeIptablesRunner runner;
  const MeshState first = apply_mesh(runner, "net1", config(), kBoth);
  const std::string v4 = runner.table_text(Family::V4, Backend::Nft);
  const std::string v6 = runner.table_text(Family::V6, Backend::Nft);
  const MeshState second = apply_mesh(runner, "net1", config(), kBoth);
  CHECK(runner.table_text(Family::V4, Backend::Nft) == v4);
  CHECK(runner.table_text(Family::V6, Backend::Nft) == v6);
  CHECK_FALSE(contains(second.payloads.at(Family::V4), "-I PREROUTING"));
  CHECK(check_mesh(runner, second, config()).empty());
}

TEST_CASE("firewall: a forced iptablesMode skips detection", "[firewall]") {
  FakeIptablesRunner runner;
  runner.set_detected(Backend::Nft);
  const MeshState state = apply_mesh(runner, "net1", config(R"({"iptablesMode": "legacy"})"), kV4);
  CHECK(runner.count("detect") == 0);
  CHECK(state.backend == std::optional<Backend>(Backend::Legacy));
  CHECK(contains(runner.table_text(Family::V4, Backend::Legacy), "CNIMESH-IN-net1"));
  CHECK_FALSE(contains(runner.table_text(Family::V4, Backend::Nft), "CNIMESH"));
}

TEST_CASE("firewall: a disabled mesh touches nothing", "[firewall]") {
  FakeIptablesRunner runner;
  MeshConfig off = config();
  off.enabled = false;
  const MeshState state = apply_mesh(runner, "net1", off, kBoth);
  CHECK(state.empty());
  CHECK(runner.calls().empty());
  remove_mesh(runner, state);
  CHECK(runner.calls().empty());
  CHECK(check_mesh(runner, state, off).empty());
  CHECK(mesh_status_fields(off) == Json::object());
}

TEST_CASE("firewall: IPv6 failure after IPv4 rolls IPv4 back", "[firewall]") {
  FakeIptablesRunner runner;
  runner.load(Family::V4, Backend::Nft, kProxyInit);
  const std::string before = runner.table_text(Family::V4, Backend::Nft);
  runner.fail_restores(Family::V6, 1);
  try {
    apply_mesh(runner, "net1", config(), kBoth);
    FAIL("apply succeeded");
  } catch (const cni::CniError& e) {
    CHECK(e.code() == 106);
  }
  CHECK(runner.table_text(Family::V4, Backend::Nft) == before);
  CHECK_FALSE(contains(runner.table_text(Family::V6, Backend::Nft), "CNIMESH"));
}

TEST_CASE("firewall: a missing IPv6 binary fails the ADD (IPv6 is mandatory once asked for)", "[firewall]") {
  FakeIptablesRunner runner;
  runner.set_missing(Family::V6, Backend::Nft);
  CHECK_THROWS_AS(apply_mesh(runner, "net1", config(), kBoth), cni::CniError);
  CHECK_FALSE(contains(runner.table_text(Family::V4, Backend::Nft), "CNIMESH"));
}

TEST_CASE("firewall: remove deletes only ours, and a second remove execs nothing", "[firewall]") {
  FakeIptablesRunner runner;
  runner.load(Family::V4, Backend::Nft, kProxyInit);
  const std::string foreign_only = runner.table_text(Family::V4, Backend::Nft);
  const MeshState net2 = apply_mesh(runner, "net2", config(), kV4);
  const std::string with_net2 = runner.table_text(Family::V4, Backend::Nft);
  const MeshState state = apply_mesh(runner, "net1", config(), kV4);
  runner.clear_calls();
  remove_mesh(runner, state);
  CHECK(runner.count("restore") == 1);
  CHECK(runner.table_text(Family::V4, Backend::Nft) == with_net2);
  runner.clear_calls();
  remove_mesh(runner, state);
  CHECK(runner.count("save") == 1);
  CHECK(runner.count("restore") == 0);
  remove_mesh(runner, net2);
  CHECK(runner.table_text(Family::V4, Backend::Nft) == foreign_only);
}

TEST_CASE("firewall: remove goes by the saved text even when the config changed", "[firewall]") {
  FakeIptablesRunner runner;
  const MeshState state =
      apply_mesh(runner, "net1", config(R"({"proxyGID": 7, "outboundPortsToIgnore": ["53"]})"), kV4);
  remove_mesh(runner, state);  // no config involved at all
  CHECK_FALSE(contains(runner.table_text(Family::V4, Backend::Nft), "CNIMESH"));
}

TEST_CASE("firewall: remove retries once after a racing change", "[firewall]") {
  FakeIptablesRunner runner;
  const MeshState state = apply_mesh(runner, "net1", config(), kV4);
  SECTION("someone else removed a jump between save and restore") {
    bool raced = false;
    runner.set_before_restore([&](Family f, Backend b) {
      if (raced) return;
      raced = true;
      runner.load(f, b,
                  "*nat\n-D OUTPUT -o net1 -p tcp -m comment --comment \"cnimesh/net1/jump-outbound\" "
                  "-j CNIMESH-OUT-net1\nCOMMIT\n");
    });
    runner.clear_calls();
    remove_mesh(runner, state);
    CHECK(runner.count("restore") == 2);
    CHECK(runner.count("save") == 2);
    CHECK_FALSE(contains(runner.table_text(Family::V4, Backend::Nft), "CNIMESH"));
  }
  SECTION("a persistent failure propagates after one retry") {
    runner.fail_restores(Family::V4, 2);
    runner.clear_calls();
    CHECK_THROWS_AS(remove_mesh(runner, state), cni::CniError);
    CHECK(runner.count("restore") == 2);
  }
}

TEST_CASE("firewall: remove without cache tries both backends", "[firewall]") {
  FakeIptablesRunner runner;
  apply_mesh(runner, "net1", config(R"({"iptablesMode": "legacy"})"), kBoth);
  runner.load(Family::V4, Backend::Nft, kProxyInit);
  const MeshState lost = MeshState::rebuilt("net1", kBoth);
  CHECK_FALSE(lost.backend);
  remove_mesh(runner, lost);
  for (Family f : kBoth)
    for (Backend b : {Backend::Legacy, Backend::Nft}) CHECK_FALSE(contains(runner.table_text(f, b), "CNIMESH"));
  CHECK(contains(runner.table_text(Family::V4, Backend::Nft), "PROXY_INIT_REDIRECT"));
  // Rules in both backends at once (mixed mode) are all removed.
  apply_mesh(runner, "net1", config(R"({"iptablesMode": "legacy"})"), kV4);
  apply_mesh(runner, "net1", config(R"({"iptablesMode": "nft"})"), kV4);
  remove_mesh(runner, MeshState::rebuilt("net1", kV4));
  CHECK_FALSE(contains(runner.table_text(Family::V4, Backend::Legacy), "CNIMESH"));
  CHECK_FALSE(contains(runner.table_text(Family::V4, Backend::Nft), "CNIMESH"));
  // A backend whose binaries are missing is skipped.
  runner.set_missing(Family::V4, Backend::Legacy);
  runner.clear_calls();
  CHECK_NOTHROW(remove_mesh(runner, MeshState::rebuilt("net1", kV4)));
  for (const auto& call : runner.calls()) CHECK(call.backend == Backend::Nft);
  CHECK_THROWS_AS(MeshState::rebuilt("bad name", kV4), cni::CniError);
}

TEST_CASE("firewall: check reports every single deletion and passes after re-apply", "[firewall]") {
  FakeIptablesRunner runner;
  runner.load(Family::V4, Backend::Nft, kProxyInit);
  const MeshConfig cfg = config(R"({"proxyGID": 5, "outboundPortsToIgnore": ["53"]})");
  const MeshState state = apply_mesh(runner, "net1", cfg, kV4);
  const SaveText saved = parse_save_text(runner.table_text(Family::V4, Backend::Nft));
  std::vector<std::pair<std::string, std::string>> ours;  // (chain, spec)
  for (const SavedChain& c : saved.find("nat")->chains)
    for (const std::string& rule : c.rules)
      if (contains(rule, "cnimesh/net1/")) ours.emplace_back(c.name, rule);
  REQUIRE(ours.size() == 8);  // 2 jumps + in: ports, redirect + out: uid, gid, ports, redirect
  for (const auto& [chain, spec] : ours) {
    INFO("deleting from " << chain << ": " << spec);
    runner.load(Family::V4, Backend::Nft, "*nat\n-D " + chain + " " + spec + "\nCOMMIT\n");
    CHECK_FALSE(check_mesh(runner, state, cfg).empty());
    apply_mesh(runner, "net1", cfg, kV4);
    CHECK(check_mesh(runner, state, cfg).empty());
  }
  // A changed config is a difference too.
  CHECK_FALSE(check_mesh(runner, state, config(R"({"inboundPort": 1})")).empty());
  // A mesh switched off wants the leftovers gone.
  MeshConfig off = cfg;
  off.enabled = false;
  const auto diffs = check_mesh(runner, state, off);
  CHECK(std::any_of(diffs.begin(), diffs.end(),
                    [](const std::string& d) { return contains(d, "IPv4: unexpected chain"); }));
  // Enabled but never applied.
  MeshState never;
  never.ifname = "net1";
  CHECK_FALSE(check_mesh(runner, never, cfg).empty());
}

TEST_CASE("firewall: check uses the recorded backend", "[firewall]") {
  FakeIptablesRunner runner;
  const MeshState state = apply_mesh(runner, "net1", config(R"({"iptablesMode": "legacy"})"), kBoth);
  runner.clear_calls();
  CHECK(check_mesh(runner, state, config()).empty());  // config says auto; state says legacy
  CHECK(runner.count("detect") == 0);
  for (const auto& call : runner.calls()) CHECK(call.backend == Backend::Legacy);
}

TEST_CASE("firewall: MeshState round-trips through JSON and rejects corrupt caches", "[firewall]") {
  FakeIptablesRunner runner;
  const MeshState state = apply_mesh(runner, "net1", config(R"({"lockWaitSeconds": 7})"), kBoth);
  const Json j = state.to_json();
  CHECK(j["ifname"] == "net1");
  CHECK(j["backend"] == "nft");
  CHECK(j["families"] == Json::array({4, 6}));
  CHECK(j["lockWaitSeconds"] == 7);
  const MeshState back = MeshState::from_json(Json::parse(j.dump()));
  CHECK(back.ifname == state.ifname);
  CHECK(back.backend == state.backend);
  CHECK(back.families == state.families);
  CHECK(back.chains == state.chains);
  CHECK(back.payloads == state.payloads);
  CHECK(back.lock_wait_seconds == 7);
  CHECK_FALSE(MeshState::from_json(MeshState::rebuilt("net1", kV4).to_json()).backend);

  for (const char* bad : {
           R"([])",
           R"({})",
           R"({"ifname": "net 1", "families": []})",
           R"({"ifname": "net1", "families": [5]})",
           R"({"ifname": "net1", "families": [4, 4]})",
           R"({"ifname": "net1", "families": "4"})",
           R"({"ifname": "net1", "families": [4], "backend": "iptables"})",
           R"({"ifname": "net1", "families": [4], "chains": ["CNIMESH-IN-net2"]})",
           R"({"ifname": "net1", "families": [4], "chains": ["PREROUTING"]})",
           R"({"ifname": "net1", "families": [4], "payloads": {"5": ""}})",
           R"({"ifname": "net1", "families": [4], "payloads": {"4": 1}})",
           R"({"ifname": "net1", "families": [4], "lockWaitSeconds": 0})",
       }) {
    INFO(bad);
    try {
      MeshState::from_json(Json::parse(bad));
      FAIL("accepted");
    } catch (const cni::CniError& e) {
      CHECK(e.code() == 6);
    }
  }
}

TEST_CASE("firewall: network-status fields of a meshed attachment", "[firewall]") {
  CHECK(mesh_status_fields(config()) ==
        Json::parse(R"({"manifold.io/mesh": {"inboundPort": 4143, "outboundPort": 4140}})"));
  CHECK(mesh_status_fields(config(R"({"redirectOutbound": false, "inboundPort": 15006})")) ==
        Json::parse(R"({"manifold.io/mesh": {"inboundPort": 15006}})"));
  CHECK(kMeshStatusField == "manifold.io/mesh");
}

TEST_CASE("firewall: bad interface names never reach iptables", "[firewall]") {
  FakeIptablesRunner runner;
  CHECK_THROWS_AS(apply_mesh(runner, "net1 -j ACCEPT", config(), kV4), cni::CniError);
  CHECK_THROWS_AS(apply_mesh(runner, "abcdefghijklmnop", config(), kV4), cni::CniError);
  MeshState bad;
  bad.ifname = "x y";
  bad.families = kV4;
  CHECK_THROWS_AS(remove_mesh(runner, bad), cni::CniError);
  CHECK(runner.calls().empty());
}
