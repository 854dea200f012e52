// Tests for the CNI verbs (plugin/cni/verbs over lib/engine): ADD, DEL, CHECK, GC and STATUS
// driven through cni::dispatch with every side effect faked (test/unit/plugin/fakes.h): delegate
// execution order, interface names, the exact config each delegate gets (name/cniVersion
// injection, runtimeConfig by capability, prevResult threading and splicing), result version
// conversion and merging, the cache contents, rollback of a partial ADD, best-effort DEL without a
// cache, CHECK against the fake namespace, GC with valid attachments, STATUS readiness, and the
// Kubernetes request sequence.
#include "plugin/cni/verbs.h"

#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "k8s/network_status.h"
#include "plugin/fakes.h"
#include "plugin/kube_fixtures.h"

using manifold::Json;
using manifold::cni::DispatchOutput;
using manifold::test::Call;
using manifold::test::cni_error_answer;
using manifold::test::Env;
using manifold::test::env_value;
using manifold::test::World;
using Strings = std::vector<std::string>;
using namespace manifold::test::kube;

namespace {

/// Order-insensitive view of a JSON value, for comparing objects by content.
nlohmann::json plain(const Json& j) { return nlohmann::json::parse(j.dump()); }

/// The meta config of most tests: a 0.4.0 conf (eth0), a 1.0.0 conf (net1) and a 1.0.0 conflist of
/// ptp + tuning (net2); runtimeConfig offers portMappings and bandwidth.
Json base_config(const World& w) {
  Json c = Json::parse(R"({
    "cniVersion": "1.0.0",
    "name": "manifold-net",
    "type": "manifold",
    "cniDir": "/var/lib/cni/manifold-test",
    "logToStderr": false,
    "runtimeConfig": {
      "portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}],
      "bandwidth": {"ingressRate": 1000, "ingressBurst": 2000}
    },
    "delegates": [
      {"cniVersion": "0.4.0", "name": "cluster", "type": "bridge", "bridge": "cni0",
       "capabilities": {"portMappings": true}},
      {"cniVersion": "1.0.0", "name": "storage", "type": "macvlan", "master": "eth1"},
      {"cniVersion": "1.0.0", "name": "chain", "plugins": [
        {"type": "ptp", "capabilities": {"bandwidth": true, "portMappings": false}},
        {"type": "tuning", "sysctl": {"net.core.somaxconn": "500"}}
      ]}
    ]
  })");
  c["binDir"] = w.bin.str();
  return c;
}

/// `conf` with `"prevResult": <result>` spliced in as its last key, byte for byte.
std::string spliced(const std::string& conf, const std::string& result) {
  return conf.substr(0, conf.rfind('}')) + ",\"prevResult\":" + result + "}";
}

/// `plugin` as a conflist gives it to one plugin: name and cniVersion injected, optional prevResult.
nlohmann::json chain_stdin(Json plugin, const std::string& name, const std::string& version,
                           const Json& prev = Json()) {
  plugin["name"] = name;
  plugin["cniVersion"] = version;
  if (!prev.is_null()) plugin["prevResult"] = prev;
  return plain(plugin);
}

Env no_container() {
  Env e;
  e.container_id = "";
  e.ifname = "";
  e.netns = "";
  return e;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// ADD
// ---------------------------------------------------------------------------------------------

TEST_CASE("ADD runs three delegates in order with their interface names and configs", "[plugin][commands]") {
  World w;
  Json config = base_config(w);
  auto out = w.run("ADD", config, with_args("K8S_POD_NAMESPACE=default;K8S_POD_NAME=web"));
  INFO(out.stdout_text);
  REQUIRE(out.exit_code == 0);

  auto calls = w.calls();
  REQUIRE(w.briefs_since(0) == Strings{"bridge ADD eth0", "macvlan ADD net1", "ptp ADD net2", "tuning ADD net2"});
  for (const Call& c : calls) {
    CHECK(c.container_id == "ctr1");
    CHECK(c.netns == w.netns_path);
    CHECK(c.cni_path == "/nonexistent/cni/bin");
    CHECK(c.args == "IgnoreUnknown=true;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web");
    // manifold's own environment is the base; its stale CNI_* values are replaced.
    CHECK(env_value(c.env, "PATH") == "/usr/sbin:/usr/bin");
    CHECK(env_value(c.env, "CNI_COMMAND") == "ADD");
    CHECK(std::count_if(c.env.begin(), c.env.end(),
                        [](const std::string& e) { return e.rfind("CNI_IFNAME=", 0) == 0; }) == 1);
  }

  SECTION("runtimeConfig reaches only plugins declaring the capability") {
    Json bridge = config["delegates"][0];
    bridge["runtimeConfig"] = {{"portMappings", config["runtimeConfig"]["portMappings"]}};
    CHECK(plain(calls[0].config()) == plain(bridge));
    CHECK(plain(calls[1].config()) == plain(config["delegates"][1]));
    CHECK_FALSE(calls[1].config().contains("runtimeConfig"));
  }

  SECTION("conflist plugins get the list's name and cniVersion, and prevResult is threaded") {
    Json ptp = config["delegates"][2]["plugins"][0];
    ptp["runtimeConfig"] = {{"bandwidth", config["runtimeConfig"]["bandwidth"]}};
    CHECK(plain(calls[2].config()) == chain_stdin(ptp, "chain", "1.0.0"));
    CHECK(plain(calls[3].config()) ==
          chain_stdin(config["delegates"][2]["plugins"][1], "chain", "1.0.0", Json::parse(w.outputs[2])));
    CHECK_FALSE(calls[3].config().contains("runtimeConfig"));
  }

  SECTION("the cache holds the exact bytes each delegate got and printed") {
    CHECK(w.cache_dirs == Strings{kCniDir});
    auto record = w.cache.load(w.key("ctr1"));
    REQUIRE(record);
    CHECK(record->netns == w.netns_path);
    CHECK(record->ifname == "eth0");
    CHECK(record->cni_version == "1.0.0");
    REQUIRE(record->attachments.size() == 3);
    const auto& a = record->attachments;
    CHECK(a[0].name == "cluster");
    CHECK(a[0].ifname == "eth0");
    CHECK(a[0].cluster_network);
    CHECK(a[1].name == "storage");
    CHECK(a[1].ifname == "net1");
    CHECK_FALSE(a[1].cluster_network);
    CHECK(a[2].name == "chain");
    CHECK(a[2].ifname == "net2");
    CHECK(a[0].config == calls[0].stdin_data);
    CHECK(a[1].config == calls[1].stdin_data);
    // A conflist is cached whole; each plugin's stdin is derived from exactly those bytes.
    Json chain = Json::parse(a[2].config);
    CHECK(plain(calls[2].config()) == chain_stdin(chain["plugins"][0], "chain", "1.0.0"));
    CHECK(a[0].result == w.outputs[0]);
    CHECK(a[1].result == w.outputs[1]);
    CHECK(a[2].result == w.outputs[3]);
    CHECK_FALSE(w.cache.is_locked("ctr1"));
  }

  SECTION("the cluster network's 0.4.0 result is printed in the config's 1.0.0") {
    Json answered = Json::parse(w.outputs[0]);
    REQUIRE(answered["cniVersion"] == "0.4.0");
    REQUIRE(answered["ips"][0]["version"] == "4");
    Json r = Json::parse(out.stdout_text);
    CHECK(r["cniVersion"] == "1.0.0");
    REQUIRE(r["interfaces"].size() == 1);
    CHECK(r["interfaces"][0]["name"] == "eth0");
    CHECK(r["interfaces"][0]["mac"] == World::mac_for("eth0"));
    CHECK(r["interfaces"][0]["sandbox"] == w.netns_path);
    REQUIRE(r["ips"].size() == 1);
    CHECK_FALSE(r["ips"][0].contains("version"));
    CHECK(r["ips"][0]["address"] == "10.244.0.10/24");
    CHECK(r["ips"][0]["gateway"] == "10.244.0.1");
    CHECK(r["ips"][0]["interface"] == 0);
    CHECK(r["routes"] == Json::parse(R"([{"dst":"0.0.0.0/0","gw":"10.244.0.1"}])"));
    CHECK(r["dns"]["nameservers"] == Json::array({"10.96.0.10"}));
  }
}

TEST_CASE("ADD converts a 1.0.0 delegate result down to a 0.3.1 config", "[plugin][commands]") {
  World w;
  Json config = config_with(w, "0.3.1", Json::parse(R"([{"cniVersion":"1.0.0","name":"storage","type":"macvlan"}])"));
  auto out = w.run("ADD", config);
  REQUIRE(out.exit_code == 0);
  REQUIRE(Json::parse(w.outputs[0])["cniVersion"] == "1.0.0");
  REQUIRE_FALSE(Json::parse(w.outputs[0])["ips"][0].contains("version"));
  Json r = Json::parse(out.stdout_text);
  CHECK(r["cniVersion"] == "0.3.1");
  CHECK(r["ips"][0]["version"] == "4");
  CHECK(r["ips"][0]["address"] == "192.168.50.10/24");
  CHECK(r["interfaces"][0]["name"] == "eth0");
}

TEST_CASE("ADD with returnAllResults merges every result with rebased interface indexes", "[plugin][commands]") {
  World w;
  Json config = base_config(w);
  config["returnAllResults"] = true;
  auto out = w.run("ADD", config);
  REQUIRE(out.exit_code == 0);
  Json r = Json::parse(out.stdout_text);
  CHECK(r["cniVersion"] == "1.0.0");
  REQUIRE(r["interfaces"].size() == 3);
  CHECK(r["interfaces"][0]["name"] == "eth0");
  CHECK(r["interfaces"][1]["name"] == "net1");
  CHECK(r["interfaces"][2]["name"] == "net2");
  REQUIRE(r["ips"].size() == 3);
  CHECK(r["ips"][0]["address"] == "10.244.0.10/24");
  CHECK(r["ips"][0]["interface"] == 0);
  CHECK(r["ips"][1]["address"] == "192.168.50.11/24");
  CHECK(r["ips"][1]["interface"] == 1);
  CHECK(r["ips"][2]["address"] == "172.16.0.12/24");
  CHECK(r["ips"][2]["interface"] == 2);
  for (const auto& ip : r["ips"]) CHECK_FALSE(ip.contains("version"));
  CHECK(r["routes"].size() == 3);
}

TEST_CASE("ADD rolls back a failing middle delegate", "[plugin][commands]") {
  World w;
  Json config = base_config(w);
  bool fail_bridge_del = false, fail_macvlan_del = false;
  w.intercept = [&](const Call& c) -> std::optional<manifold::exec::ProcessResult> {
    if (c.type == "macvlan" && c.command == "ADD")
      return cni_error_answer(5, "macvlan: cannot create link: device busy");
    if (c.type == "macvlan" && c.command == "DEL" && fail_macvlan_del) return cni_error_answer(11, "macvlan DEL broke");
    if (c.type == "bridge" && c.command == "DEL" && fail_bridge_del) return cni_error_answer(11, "bridge DEL broke");
    return std::nullopt;
  };

  SECTION("DEL of the failed and the added delegates in reverse; the cache entry goes away") {
    auto out = w.run("ADD", config);
    Json e = error_of(out);
    CHECK(e["code"] == 5);
    CHECK(e["msg"] == "macvlan: cannot create link: device busy");
    CHECK(e["cniVersion"] == "1.0.0");
    auto calls = w.calls();
    REQUIRE(w.briefs_since(0) == Strings{"bridge ADD eth0", "macvlan ADD net1", "macvlan DEL net1", "bridge DEL eth0"});
    // The failed delegate has no result: its DEL replays its config unchanged.
    CHECK(calls[2].stdin_data == calls[1].stdin_data);
    // The added 0.4.0 delegate gets its result as prevResult.
    CHECK(calls[3].stdin_data == spliced(calls[0].stdin_data, w.outputs[0]));
    CHECK(calls[3].netns == w.netns_path);
    CHECK_FALSE(w.cache.load(w.key("ctr1")));
    CHECK(w.cache.list().empty());
    CHECK_FALSE(w.cache.is_locked("ctr1"));
  }

  SECTION("a failing DEL of an added delegate keeps that attachment cached for the runtime's DEL") {
    fail_bridge_del = true;
    auto out = w.run("ADD", config);
    Json e = error_of(out);
    CHECK(e["code"] == 5);
    CHECK(e["msg"] == "macvlan: cannot create link: device busy");
    auto record = w.cache.load(w.key("ctr1"));
    REQUIRE(record);
    REQUIRE(record->attachments.size() == 1);
    CHECK(record->attachments[0].name == "cluster");
    CHECK(record->attachments[0].ifname == "eth0");
    CHECK(record->attachments[0].result == w.outputs[0]);

    // The runtime's DEL then retries exactly that attachment and clears the entry.
    fail_bridge_del = false;
    size_t before = w.call_count();
    auto del = w.run("DEL", config);
    CHECK(del.exit_code == 0);
    CHECK(w.briefs_since(before) == Strings{"bridge DEL eth0"});
    CHECK(w.cache.list().empty());
  }

  SECTION("a failing DEL of the delegate whose ADD failed is not kept") {
    fail_macvlan_del = true;
    auto out = w.run("ADD", config);
    CHECK(error_of(out)["code"] == 5);
    CHECK(w.briefs_since(0) == Strings{"bridge ADD eth0", "macvlan ADD net1", "macvlan DEL net1", "bridge DEL eth0"});
    CHECK(w.cache.list().empty());
  }
}

TEST_CASE("ADD fails with 102 when an interface name is taken, before any delegate runs", "[plugin][commands]") {
  World w;
  w.ns().add_link("net1", "dummy");
  auto out = w.run("ADD", base_config(w));
  Json e = error_of(out);
  CHECK(e["code"] == 102);
  std::string msg = e["msg"];
  CHECK_THAT(msg, Catch::Contains("net1") && Catch::Contains("storage"));
  CHECK(w.call_count() == 0);
  CHECK(w.cache.list().empty());
  CHECK(w.has_link(w.netns_path, "net1"));  // the pre-existing link is not touched

  SECTION("a name an earlier delegate took is refused before its own delegate runs, and rolled back") {
    World w2;
    w2.intercept = [&w2](const Call& c) -> std::optional<manifold::exec::ProcessResult> {
      if (c.command == "ADD" && c.type == "bridge") w2.ns().add_link("net1", "dummy");
      return std::nullopt;
    };
    Json e2 = error_of(w2.run("ADD", base_config(w2)));
    CHECK(e2["code"] == 102);
    CHECK(w2.briefs_since(0) == Strings{"bridge ADD eth0", "bridge DEL eth0"});
    CHECK(w2.cache.list().empty());
  }

  SECTION("the cluster interface itself is taken: nothing runs") {
    World w2;
    w2.ns().add_link("eth0", "dummy");
    Json e2 = error_of(w2.run("ADD", base_config(w2)));
    CHECK(e2["code"] == 102);
    CHECK_THAT(e2["msg"].get<std::string>(), Catch::Contains("eth0"));
    CHECK(w2.call_count() == 0);
    CHECK(w2.cache.list().empty());
  }
}

TEST_CASE("ADD rolls back a conflist whose second plugin fails", "[plugin][commands]") {
  World w;
  w.intercept = [](const Call& c) -> std::optional<manifold::exec::ProcessResult> {
    if (c.type == "tuning" && c.command == "ADD") return cni_error_answer(7, "tuning: unknown sysctl");
    return std::nullopt;
  };
  Json e = error_of(w.run("ADD", base_config(w)));
  CHECK(e["code"] == 7);
  CHECK(e["msg"] == "tuning: unknown sysctl");
  auto calls = w.calls();
  REQUIRE(w.briefs_since(0) == Strings{"bridge ADD eth0", "macvlan ADD net1", "ptp ADD net2", "tuning ADD net2",
                                       "tuning DEL net2", "ptp DEL net2", "macvlan DEL net1", "bridge DEL eth0"});
  // The chain never produced a result, so its plugins are DELed without prevResult.
  CHECK_FALSE(calls[4].config().contains("prevResult"));
  CHECK_FALSE(calls[5].config().contains("prevResult"));
  // The completed 1.0.0 conf gets its result.
  CHECK(calls[6].stdin_data == spliced(calls[1].stdin_data, w.outputs[1]));
  CHECK(w.cache.list().empty());
}

TEST_CASE("ADD and DEL treat a missing readiness indicator file differently", "[plugin][commands]") {
  World w;
  Json config = base_config(w);
  config["readinessindicatorfile"] = "/run/cluster-network/ready";
  config["readinessTimeout"] = 2;
  Json e = error_of(w.run("ADD", config));
  CHECK(e["code"] == 11);
  CHECK(w.sleeper->waits().size() == 2);
  CHECK(w.call_count() == 0);
  CHECK(w.cache.list().empty());

  // DEL looks once and carries on (here without a cache entry: best effort, success).
  w.sleeper->clear();
  auto del = w.run("DEL", config);
  CHECK(del.exit_code == 0);
  CHECK(w.sleeper->waits().empty());
  CHECK(w.call_count() == 4);
}

TEST_CASE("ADD rejects a bad plugin type or a missing binary before running anything", "[plugin][commands]") {
  World w;
  Json config = base_config(w);
  unsigned want = 0;
  std::string named;
  SECTION("a type that is a path") {
    config["delegates"][1]["type"] = "../x";
    want = 7;
    named = "../x";
  }
  SECTION("a conf whose binary is missing") {
    config["delegates"][1]["type"] = "nosuchplugin";
    want = 101;
    named = "nosuchplugin";
  }
  SECTION("a conflist plugin whose binary is missing") {
    config["delegates"][2]["plugins"][1]["type"] = "nosuchplugin";
    want = 101;
    named = "nosuchplugin";
  }
  auto out = w.run("ADD", config);
  Json e = error_of(out);
  CHECK(e["code"] == want);
  CHECK_THAT(e["msg"].get<std::string>(), Catch::Contains(named));
  CHECK(w.call_count() == 0);
  CHECK(w.cache.list().empty());
  CHECK(w.opened_netns.empty());
}

// ---------------------------------------------------------------------------------------------
// DEL
// ---------------------------------------------------------------------------------------------

TEST_CASE("DEL replays the cached configs in reverse and removes the cache entry", "[plugin][commands]") {
  World w;
  Json config = base_config(w);
  config["delegates"][1]["cniVersion"] = "0.3.1";  // no prevResult below 0.4.0
  std::string args = "K8S_POD_NAMESPACE=default;K8S_POD_NAME=web";
  REQUIRE(w.run("ADD", config, with_args(args)).exit_code == 0);
  auto record = *w.cache.load(w.key("ctr1"));
  REQUIRE(record.attachments.size() == 3);

  size_t before = w.call_count();
  auto out = w.run("DEL", config, with_args(args));
  INFO(out.stdout_text);
  REQUIRE(out.exit_code == 0);
  CHECK(out.stdout_text.empty());
  auto calls = w.calls_since(before);
  REQUIRE(w.briefs_since(before) == Strings{"tuning DEL net2", "ptp DEL net2", "macvlan DEL net1", "bridge DEL eth0"});
  for (const Call& c : calls) {
    CHECK(c.netns == w.netns_path);
    CHECK(c.container_id == "ctr1");
    CHECK(c.args == "IgnoreUnknown=true;" + args);
  }
  // Conflist plugins get the chain's cached result as prevResult.
  Json chain = Json::parse(record.attachments[2].config);
  Json chain_result = Json::parse(record.attachments[2].result);
  CHECK(plain(calls[0].config()) == chain_stdin(chain["plugins"][1], "chain", "1.0.0", chain_result));
  CHECK(plain(calls[1].config()) == chain_stdin(chain["plugins"][0], "chain", "1.0.0", chain_result));
  // 0.3.1: the cached bytes unchanged.
  CHECK(calls[2].stdin_data == record.attachments[1].config);
  // 0.4.0: the cached bytes with the cached result bytes spliced in.
  CHECK(calls[3].stdin_data == spliced(record.attachments[0].config, record.attachments[0].result));
  CHECK(w.cache.list().empty());

  SECTION("a second DEL succeeds too, without a namespace") {
    size_t again = w.call_count();
    auto out2 = w.run("DEL", config, with_args(args));
    CHECK(out2.exit_code == 0);
    CHECK(out2.stdout_text.empty());
    auto calls2 = w.calls_since(again);
    CHECK(w.briefs_since(again) == Strings{"tuning DEL net2", "ptp DEL net2", "macvlan DEL net1", "bridge DEL eth0"});
    for (const Call& c : calls2) CHECK_FALSE(c.netns);
    CHECK(w.cache.list().empty());
  }
}

TEST_CASE("DEL after the namespace is gone still deletes every delegate, without CNI_NETNS", "[plugin][commands]") {
  World w;
  Json config = base_config(w);
  REQUIRE(w.run("ADD", config).exit_code == 0);
  auto record = *w.cache.load(w.key("ctr1"));
  std::filesystem::remove(w.netns_path);
  size_t before = w.call_count();
  auto out = w.run("DEL", config);
  CHECK(out.exit_code == 0);
  auto calls = w.calls_since(before);
  REQUIRE(w.briefs_since(before) == Strings{"tuning DEL net2", "ptp DEL net2", "macvlan DEL net1", "bridge DEL eth0"});
  for (const Call& c : calls) CHECK_FALSE(c.netns);
  // The cached results are still handed over, so IPAM can release the addresses.
  CHECK(calls[3].stdin_data == spliced(record.attachments[0].config, record.attachments[0].result));
  CHECK(w.cache.list().empty());
}

TEST_CASE("DEL attempts every delegate and reports the first error", "[plugin][commands]") {
  World w;
  Json config = base_config(w);
  REQUIRE(w.run("ADD", config).exit_code == 0);
  auto record = *w.cache.load(w.key("ctr1"));
  std::set<std::string> failing;
  w.intercept = [&](const Call& c) -> std::optional<manifold::exec::ProcessResult> {
    if (c.command == "DEL" && failing.count(c.type))
      return cni_error_answer(c.type == "ptp" ? 5 : 11, c.type + " is stuck");
    return std::nullopt;
  };

  SECTION("one failing conf") {
    failing = {"macvlan"};
    size_t before = w.call_count();
    Json e = error_of(w.run("DEL", config));
    CHECK(e["code"] == 11);
    CHECK(e["msg"] == "DEL of network \"storage\" (net1) failed: macvlan is stuck");
    CHECK(w.briefs_since(before) == Strings{"tuning DEL net2", "ptp DEL net2", "macvlan DEL net1", "bridge DEL eth0"});
    CHECK(w.cache.list().empty());  // retryDeleteOnError is off
  }

  SECTION("a failing chain plugin and a failing conf: the first error wins, all are attempted") {
    failing = {"ptp", "macvlan"};
    size_t before = w.call_count();
    Json e = error_of(w.run("DEL", config));
    CHECK(e["code"] == 5);
    CHECK(e["msg"] == "DEL of network \"chain\" (net2) failed: ptp is stuck");
    CHECK(w.briefs_since(before) == Strings{"tuning DEL net2", "ptp DEL net2", "macvlan DEL net1", "bridge DEL eth0"});
    CHECK(w.cache.list().empty());
  }

  SECTION("retryDeleteOnError keeps exactly the failed attachments") {
    config["retryDeleteOnError"] = true;
    failing = {"macvlan"};
    Json e = error_of(w.run("DEL", config));
    CHECK(e["code"] == 11);
    auto kept = w.cache.load(w.key("ctr1"));
    REQUIRE(kept);
    REQUIRE(kept->attachments.size() == 1);
    CHECK(kept->attachments[0] == record.attachments[1]);
    CHECK(kept->netns == record.netns);

    failing.clear();
    size_t before = w.call_count();
    REQUIRE(w.run("DEL", config).exit_code == 0);
    CHECK(w.briefs_since(before) == Strings{"macvlan DEL net1"});
    CHECK(w.cache.list().empty());
  }
}

TEST_CASE("DEL without a usable cache entry deletes the configured delegates best-effort", "[plugin][commands]") {
  World w;
  Json config = base_config(w);
  SECTION("no cache entry; every delegate fails and DEL still succeeds") {
    w.intercept = [](const Call& c) -> std::optional<manifold::exec::ProcessResult> {
      if (c.command == "DEL") return cni_error_answer(11, c.type + " has nothing to delete");
      return std::nullopt;
    };
  }
  SECTION("a corrupt cache entry") {
    REQUIRE(w.run("ADD", config).exit_code == 0);
    w.cache.corrupt(w.key("ctr1"));
  }
  size_t before = w.call_count();
  auto out = w.run("DEL", config);
  INFO(out.stdout_text);
  CHECK(out.exit_code == 0);
  CHECK(out.stdout_text.empty());
  auto calls = w.calls_since(before);
  CHECK(w.briefs_since(before) == Strings{"tuning DEL net2", "ptp DEL net2", "macvlan DEL net1", "bridge DEL eth0"});
  for (const Call& c : calls) {
    CHECK_FALSE(c.netns);  // nothing proves the links in the namespace are ours
    CHECK_FALSE(c.config().contains("prevResult"));
  }
  CHECK(w.cache.list().empty());
  CHECK_NOTHROW(w.cache.load(w.key("ctr1")));
}

// ---------------------------------------------------------------------------------------------
// CHECK
// ---------------------------------------------------------------------------------------------

TEST_CASE("CHECK verifies every attachment in the namespace and through its delegate", "[plugin][commands]") {
  World w;
  Json config = base_config(w);
  REQUIRE(w.run("ADD", config).exit_code == 0);
  auto record = *w.cache.load(w.key("ctr1"));
  size_t before = w.call_count();

  SECTION("everything in place") {
    auto out = w.run("CHECK", config);
    INFO(out.stdout_text);
    REQUIRE(out.exit_code == 0);
    CHECK(out.stdout_text.empty());
    auto calls = w.calls_since(before);
    REQUIRE(w.briefs_since(before) ==
            Strings{"bridge CHECK eth0", "macvlan CHECK net1", "ptp CHECK net2", "tuning CHECK net2"});
    CHECK(calls[0].stdin_data == spliced(record.attachments[0].config, record.attachments[0].result));
    CHECK(calls[1].stdin_data == spliced(record.attachments[1].config, record.attachments[1].result));
    Json chain = Json::parse(record.attachments[2].config);
    CHECK(plain(calls[3].config()) ==
          chain_stdin(chain["plugins"][1], "chain", "1.0.0", Json::parse(record.attachments[2].result)));
    CHECK(w.cache.load(w.key("ctr1")) == record);
  }

  SECTION("an interface disappeared") {
    w.ns().remove_link("net1");
    Json e = error_of(w.run("CHECK", config));
    CHECK(e["code"] == 107);
    CHECK_THAT(e["msg"].get<std::string>(), Catch::Contains("net1") && Catch::Contains("storage"));
    CHECK(w.briefs_since(before) == Strings{"bridge CHECK eth0"});
  }

  SECTION("an address disappeared") {
    int index = 0;
    for (const auto& l : w.ns().links)
      if (l.name == "net2") index = l.index;
    REQUIRE(index != 0);
    auto& addrs = w.ns().addresses;
    auto removed = std::erase_if(addrs, [&](const auto& a) { return a.ifindex == index; });
    REQUIRE(removed == 1);
    Json e = error_of(w.run("CHECK", config));
    CHECK(e["code"] == 107);
    CHECK_THAT(e["msg"].get<std::string>(), Catch::Contains("172.16.0.12/24") && Catch::Contains("net2"));
  }
}

TEST_CASE("CHECK refuses old configs and unknown containers", "[plugin][commands]") {
  World w;
  Json config = base_config(w);
  SECTION("a 0.3.1 config has no CHECK") {
    REQUIRE(w.run("ADD", config).exit_code == 0);
    size_t before = w.call_count();
    config["cniVersion"] = "0.3.1";
    Json e = error_of(w.run("CHECK", config));
    CHECK(e["code"] == 1);
    CHECK(w.call_count() == before);
  }
  SECTION("no cache entry") {
    Json e = error_of(w.run("CHECK", config));
    CHECK(e["code"] == 3);
    CHECK_THAT(e["msg"].get<std::string>(), Catch::Contains("ctr1"));
    CHECK(w.call_count() == 0);
  }
}

TEST_CASE("CHECK skips the delegate CHECK of a 0.3.1 delegate but still checks its interface", "[plugin][commands]") {
  World w;
  Json config = base_config(w);
  config["delegates"][1]["cniVersion"] = "0.3.1";
  REQUIRE(w.run("ADD", config).exit_code == 0);
  size_t before = w.call_count();
  REQUIRE(w.run("CHECK", config).exit_code == 0);
  CHECK(w.briefs_since(before) == Strings{"bridge CHECK eth0", "ptp CHECK net2", "tuning CHECK net2"});

  w.ns().remove_link("net1");
  CHECK(error_of(w.run("CHECK", config))["code"] == 107);
}

// ---------------------------------------------------------------------------------------------
// GC and STATUS
// ---------------------------------------------------------------------------------------------

TEST_CASE("GC deletes the attachments not listed as valid and keeps the listed ones", "[plugin][commands]") {
  World w;
  Json config = config_with(w, "1.1.0", Json::parse(R"([
    {"cniVersion": "0.4.0", "name": "cluster", "type": "bridge"},
    {"cniVersion": "1.1.0", "name": "storage", "type": "macvlan"}])"));
  Env a, b;
  a.container_id = "ctr-a";
  a.netns = w.make_netns_file("netns-a");
  b.container_id = "ctr-b";
  b.netns = w.make_netns_file("netns-b");
  REQUIRE(w.run("ADD", config, a).exit_code == 0);
  REQUIRE(w.run("ADD", config, b).exit_code == 0);
  auto kept = *w.cache.load(w.key("ctr-a"));

  SECTION("valid attachments honoured") {
    Json gc = config;
    gc["cni.dev/valid-attachments"] = Json::parse(R"([{"containerID": "ctr-a", "ifname": "eth0"}])");
    size_t before = w.call_count();
    auto out = w.run("GC", gc, no_container());
    INFO(out.stdout_text);
    REQUIRE(out.exit_code == 0);
    auto calls = w.calls_since(before);
    REQUIRE(w.briefs_since(before) == Strings{"macvlan DEL net1", "bridge DEL eth0", "macvlan GC "});
    CHECK(calls[0].container_id == "ctr-b");
    CHECK(calls[1].container_id == "ctr-b");
    // The 1.1.0 delegate gets its own GC listing the attachments that remain its own.
    Json g = calls[2].config();
    CHECK(g["name"] == "storage");
    CHECK(g["cniVersion"] == "1.1.0");
    CHECK(g["cni.dev/valid-attachments"] == Json::parse(R"([{"containerID": "ctr-a", "ifname": "net1"}])"));
    CHECK(w.ids() == Strings{"ctr-a"});
    CHECK(w.cache.load(w.key("ctr-a")) == kept);
  }

  SECTION("a corrupt entry of a collected container is removed after a best-effort DEL of the configured networks") {
    w.cache.corrupt(w.key("ctr-b"));
    Json gc = config;
    gc["cni.dev/valid-attachments"] = Json::parse(R"([{"containerID": "ctr-a", "ifname": "eth0"}])");
    size_t before = w.call_count();
    REQUIRE(w.run("GC", gc, no_container()).exit_code == 0);
    CHECK(w.briefs_since(before) == Strings{"macvlan DEL net1", "bridge DEL eth0", "macvlan GC "});
    CHECK(w.calls_since(before)[0].container_id == "ctr-b");
    CHECK(w.ids() == Strings{"ctr-a"});
  }

  SECTION("a valid-attachments value that is not a list is rejected") {
    Json gc = config;
    gc["cni.dev/valid-attachments"] = "ctr-a";
    size_t before = w.call_count();
    CHECK(error_of(w.run("GC", gc, no_container()))["code"] == 7);
    CHECK(w.call_count() == before);
    CHECK(w.ids() == Strings{"ctr-a", "ctr-b"});
  }
}

TEST_CASE("STATUS waits a bounded time for the readiness file", "[plugin][commands]") {
  World w;
  Json config =
      config_with(w, "1.1.0", Json::parse(R"([{"cniVersion": "1.1.0", "name": "cluster", "type": "bridge"}])"));
  config["readinessindicatorfile"] = "/run/cluster-network/ready";
  config["readinessTimeout"] = 3;

  SECTION("never appears: code 11 after exactly the bound, nothing run") {
    Json e = error_of(w.run("STATUS", config, no_container()));
    CHECK(e["code"] == 11);
    CHECK_THAT(e["msg"].get<std::string>(), Catch::Contains("/run/cluster-network/ready"));
    CHECK(w.sleeper->waits() == std::vector<std::chrono::milliseconds>(3, std::chrono::seconds(1)));
    CHECK(w.call_count() == 0);
  }
  SECTION("appears during the wait") {
    w.sleeper->on_sleep([&](std::size_t waits) {
      if (waits == 2) w.existing_files.insert("/run/cluster-network/ready");
    });
    auto out = w.run("STATUS", config, no_container());
    CHECK(out.exit_code == 0);
    CHECK(w.sleeper->waits().size() == 2);
    CHECK(w.briefs_since(0) == Strings{"bridge STATUS "});
  }
}

TEST_CASE("STATUS asks a 1.1.0 cluster delegate and passes its error through", "[plugin][commands]") {
  World w;
  SECTION("1.1.0 delegate") {
    Json config = config_with(w, "1.1.0", Json::parse(R"([
      {"cniVersion": "1.1.0", "name": "cluster", "type": "bridge"},
      {"cniVersion": "1.1.0", "name": "storage", "type": "macvlan"}])"));
    REQUIRE(w.run("STATUS", config, no_container()).exit_code == 0);
    auto calls = w.calls();
    REQUIRE(w.briefs_since(0) == Strings{"bridge STATUS "});
    CHECK(plain(calls[0].config()) == plain(config["delegates"][0]));
    CHECK_FALSE(calls[0].netns);

    w.intercept = [](const Call& c) -> std::optional<manifold::exec::ProcessResult> {
      if (c.command == "STATUS") return cni_error_answer(50, "bridge: no IP addresses left");
      return std::nullopt;
    };
    Json e = error_of(w.run("STATUS", config, no_container()));
    CHECK(e["code"] == 50);
    CHECK(e["msg"] == "bridge: no IP addresses left");
  }
  SECTION("an older delegate is ready without being run") {
    Json config =
        config_with(w, "1.1.0", Json::parse(R"([{"cniVersion": "1.0.0", "name": "cluster", "type": "bridge"}])"));
    auto out = w.run("STATUS", config, no_container());
    CHECK(out.exit_code == 0);
    CHECK(out.stdout_text.empty());
    CHECK(w.call_count() == 0);
  }
}

// ---------------------------------------------------------------------------------------------
// Kubernetes
// ---------------------------------------------------------------------------------------------

// Regression: apply_selection once iterated the items() of a temporary Json (destroyed before the
// loop body in C++20), crashing every ADD whose pod had a networks annotation. The probe runs the
// ADD in a child process first so such a crash fails this test only.
TEST_CASE("ADD with Kubernetes: networks annotation costs GET pod, one GET per NAD, one PUT",
          "[plugin][commands][k8s]") {
  World w;
  setup_kube(w);
  Json config = kube_config(w);
  w.http.push_response(200, pod_with_networks("nad1,nad2,nad1").dump());
  w.http.push_response(200,
                       nad_json("team-a", "nad1", R"({"cniVersion":"1.0.0","type":"macvlan","master":"eth1"})").dump());
  w.http.push_response(
      200,
      nad_json("team-a", "nad2", R"({"cniVersion":"1.0.0","name":"nad2","plugins":[{"type":"ptp"},{"type":"tuning"}]})")
          .dump());
  w.http.push_response(200, pod_with_networks("nad1,nad2,nad1", "uid-1", "43").dump());
  script_events(w, 4);

  REQUIRE(manifold::test::survives_in_child([&] { return w.run("ADD", config, with_args(kPodArgs)).exit_code == 0; }));

  auto out = w.run("ADD", config, with_args(kPodArgs));
  INFO(out.stdout_text);
  REQUIRE(out.exit_code == 0);

  CHECK(request_lines(w) == Strings{"GET " + kPodPath, "GET " + nad_path("team-a", "nad1"),
                                    "GET " + nad_path("team-a", "nad2"), "PUT " + kPodPath + "/status",
                                    "POST " + kEventsPath, "POST " + kEventsPath, "POST " + kEventsPath,
                                    "POST " + kEventsPath});
  CHECK(w.http.pending() == 0);
  CHECK(w.transports_opened == 1);
  CHECK(w.briefs_since(0) ==
        Strings{"bridge ADD eth0", "macvlan ADD net1", "ptp ADD net2", "tuning ADD net2", "macvlan ADD net3"});
  auto calls = w.calls();
  CHECK(calls[1].config()["name"] == "nad1");  // an unnamed NAD config takes the NAD's name
  CHECK(calls[2].config()["name"] == "nad2");

  Json put = Json::parse(w.http.requests()[3].body);
  CHECK(put["metadata"]["resourceVersion"] == "42");
  CHECK(put["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == "nad1,nad2,nad1");
  Json status = status_of_put(w.http.requests()[3]);
  REQUIRE(status.size() == 4);
  CHECK(status[0]["name"] == "cluster");
  CHECK(status[0]["interface"] == "eth0");
  CHECK(status[0]["default"] == true);
  CHECK(status[1]["name"] == "team-a/nad1");
  CHECK(status[1]["interface"] == "net1");
  CHECK(status[1]["ips"] == Json::array({"192.168.50.11"}));
  CHECK(status[2]["name"] == "team-a/nad2");
  CHECK(status[2]["interface"] == "net2");
  CHECK(status[2]["ips"] == Json::array({"172.16.0.12"}));
  CHECK(status[3]["name"] == "team-a/nad1");
  CHECK(status[3]["interface"] == "net3");
  CHECK(status[3]["ips"] == Json::array({"192.168.50.13"}));

  size_t reqs = w.http.requests().size();
  size_t before = w.call_count();
  REQUIRE(w.run("DEL", config, with_args(kPodArgs)).exit_code == 0);
  CHECK(w.http.requests().size() == reqs);
  CHECK(w.briefs_since(before) ==
        Strings{"macvlan DEL net3", "tuning DEL net2", "ptp DEL net2", "macvlan DEL net1", "bridge DEL eth0"});
}

TEST_CASE("ADD with Kubernetes: default-network override and defaultNetworks as NADs", "[plugin][commands][k8s]") {
  World w;
  setup_kube(w);
  Json config = kube_config(w);
  config["defaultNetworks"] = Json::array({"storage-net"});
  w.http.push_response(200, pod_json(Json{{"v1.multus-cni.io/default-network", "fast-net"}}).dump());
  w.http.push_response(200, nad_json("kube-system", "fast-net", R"({"cniVersion":"1.0.0","type":"ptp"})").dump());
  w.http.push_response(200,
                       nad_json("kube-system", "storage-net", R"({"cniVersion":"0.4.0","type":"macvlan"})").dump());
  w.http.push_response(200, pod_json(Json::object(), "uid-1", "43").dump());
  script_events(w, 2);

  auto out = w.run("ADD", config, with_args(kPodArgs));
  INFO(out.stdout_text);
  REQUIRE(out.exit_code == 0);

  CHECK(request_lines(w) == Strings{"GET " + kPodPath, "GET " + nad_path("kube-system", "fast-net"),
                                    "GET " + nad_path("kube-system", "storage-net"), "PUT " + kPodPath + "/status",
                                    "POST " + kEventsPath, "POST " + kEventsPath});
  CHECK(w.http.pending() == 0);
  CHECK(w.transports_opened == 1);  // one connection for every request
  CHECK(w.auth_lookups == Strings{kKubeconfig});
  for (const auto& r : w.http.requests()) CHECK(header(r, "Authorization") == "Bearer s3cr3t-token");
  // The override replaces the config's first delegate as the cluster network.
  auto calls = w.calls();
  REQUIRE(w.briefs_since(0) == Strings{"ptp ADD eth0", "macvlan ADD net1"});
  CHECK(calls[0].config()["name"] == "fast-net");
  CHECK(calls[1].config()["name"] == "storage-net");
  CHECK(calls[0].args == "IgnoreUnknown=true;" + std::string(kPodArgs));

  Json put = Json::parse(w.http.requests()[3].body);
  CHECK(put["metadata"]["resourceVersion"] == "42");
  CHECK(put["metadata"]["uid"] == "uid-1");
  CHECK(put["metadata"]["annotations"]["v1.multus-cni.io/default-network"] == "fast-net");
  Json status = status_of_put(w.http.requests()[3]);
  REQUIRE(status.size() == 2);
  CHECK(status[0]["name"] == "kube-system/fast-net");
  CHECK(status[0]["interface"] == "eth0");
  CHECK(status[0]["ips"] == Json::array({"172.16.0.10"}));
  CHECK(status[0]["mac"] == World::mac_for("eth0"));
  CHECK(status[0]["default"] == true);
  CHECK(status[0]["gateway"] == Json::array({"172.16.0.1"}));
  CHECK(status[1]["name"] == "kube-system/storage-net");
  CHECK(status[1]["interface"] == "net1");
  CHECK(status[1]["ips"] == Json::array({"192.168.50.11"}));
  CHECK_FALSE(status[1].contains("default"));

  Json ev = Json::parse(w.http.requests()[5].body);
  CHECK(ev["reason"] == "AddedInterface");
  CHECK(ev["message"] == "Add net1 [192.168.50.11/24] from kube-system/storage-net");
  CHECK(ev["involvedObject"]["uid"] == "uid-1");
  CHECK(ev["involvedObject"]["resourceVersion"] == "42");

  Json r = Json::parse(out.stdout_text);
  CHECK(r["ips"][0]["address"] == "172.16.0.10/24");

  SECTION("DEL with the cache makes no API request") {
    size_t reqs = w.http.requests().size();
    size_t lookups = w.auth_lookups.size();
    size_t before = w.call_count();
    auto del = w.run("DEL", config, with_args(kPodArgs));
    CHECK(del.exit_code == 0);
    CHECK(w.http.requests().size() == reqs);
    CHECK(w.auth_lookups.size() == lookups);
    CHECK(w.transports_opened == 1);
    CHECK(w.briefs_since(before) == Strings{"macvlan DEL net1", "ptp DEL eth0"});
    CHECK(w.cache.list().empty());
  }
}

TEST_CASE("ADD with Kubernetes re-reads the pod and retries the status PUT on 409", "[plugin][commands][k8s]") {
  World w;
  setup_kube(w);
  w.http.push_response(200, pod_json(Json::object()).dump());
  w.http.push_response(409, status_json(409, "Conflict").dump());
  script_events(w, 1);  // pipelined behind the first PUT, sent once
  w.http.push_response(200, pod_json(Json{{"example.com/touched", "yes"}}, "uid-1", "57").dump());
  w.http.push_response(200, pod_json(Json::object(), "uid-1", "58").dump());

  auto out = w.run("ADD", kube_config(w), with_args(kPodArgs));
  INFO(out.stdout_text);
  REQUIRE(out.exit_code == 0);
  CHECK(request_lines(w) == Strings{"GET " + kPodPath, "PUT " + kPodPath + "/status", "POST " + kEventsPath,
                                    "GET " + kPodPath, "PUT " + kPodPath + "/status"});
  Json first = Json::parse(w.http.requests()[1].body);
  Json second = Json::parse(w.http.requests()[4].body);
  CHECK(first["metadata"]["resourceVersion"] == "42");
  CHECK(second["metadata"]["resourceVersion"] == "57");
  CHECK(second["metadata"]["annotations"]["example.com/touched"] == "yes");  // the re-read pod is the base
  CHECK(status_of_put(w.http.requests()[4]) == status_of_put(w.http.requests()[1]));
  CHECK(status_of_put(w.http.requests()[4]).size() == 1);
  CHECK(w.cache.load(w.key("ctr1")));

  SECTION("a PUT that keeps failing fails the ADD and rolls it back") {
    World w2;
    setup_kube(w2);
    w2.http.push_response(200, pod_json(Json::object()).dump());
    w2.http.push_response(403, status_json(403, "Forbidden").dump());
    script_events(w2, 1);  // sent behind the PUT all the same
    Json e = error_of(w2.run("ADD", kube_config(w2), with_args(kPodArgs)));
    CHECK(e["code"] == 103);
    CHECK_THAT(e["msg"].get<std::string>(), Catch::Contains("team-a/web-1"));
    CHECK(w2.briefs_since(0) == Strings{"bridge ADD eth0", "bridge DEL eth0"});
    CHECK(w2.cache.list().empty());
  }
}

TEST_CASE("ADD with Kubernetes fails cleanly on a bad pod lookup", "[plugin][commands][k8s]") {
  World w;
  setup_kube(w);
  Json config = kube_config(w);
  std::vector<std::string> must_contain;
  unsigned want = 103;
  SECTION("the pod does not exist") {
    w.http.push_response(404, status_json(404, "NotFound").dump());
    must_contain = {"team-a/web-1"};
  }
  SECTION("the pod's UID is not the one the runtime names") {
    w.http.push_response(200, pod_with_networks("nad1", "uid-2").dump());
    must_contain = {"uid-1", "uid-2", "team-a/web-1"};
  }
  SECTION("the annotation crosses namespaces under isolation") {
    config["namespaceIsolation"] = true;
    w.http.push_response(200, pod_with_networks("team-b/nad1").dump());
    want = 7;
    must_contain = {"team-a", "team-b"};
  }
  Json e = error_of(w.run("ADD", config, with_args(kPodArgs)));
  CHECK(e["code"] == want);
  for (const auto& s : must_contain) CHECK_THAT(e["msg"].get<std::string>(), Catch::Contains(s));
  CHECK(request_lines(w) == Strings{"GET " + kPodPath});  // in particular no NAD GET
  CHECK(w.call_count() == 0);
  CHECK(w.cache.list().empty());
  CHECK(w.opened_netns.empty());
}
