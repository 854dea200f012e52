// Unit tests of what real runtimes found (commands against the fakes of fakes.h): several manifold
// networks in one container keyed apart, the secondary interface names under another CNI_IFNAME,
// the runtime's IP=/MAC= and runtimeConfig ips/mac reaching the cluster network only, the required
// `name`, GC's valid-attachments contract and network scoping, and the auxiliary chain with the
// built-in passthru.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "fakes.h"
#include "engine/attachment.h"

using manifold::Json;
using manifold::test::Call;
using manifold::test::Env;
using manifold::test::World;
using Strings = std::vector<std::string>;

namespace {

/// A manifold network `name` with a bridge (cluster) and a macvlan (secondary).
Json network(const World& w, const std::string& name) {
  return {{"cniVersion", "1.0.0"},
          {"name", name},
          {"type", "manifold"},
          {"cniDir", "/var/lib/cni/manifold-test"},
          {"logToStderr", false},
          {"binDir", w.bin.str()},
          {"delegates", Json::array({{{"cniVersion", "1.0.0"}, {"name", name + "-cluster"}, {"type", "bridge"}},
                                     {{"cniVersion", "1.0.0"}, {"name", name + "-data"}, {"type", "macvlan"}}})}};
}

Env on(const std::string& ifname, const std::string& args = "") {
  Env e;
  e.ifname = ifname;
  e.args = args;
  return e;
}

/// The CNI_ARGS and runtimeConfig each delegate of the calls from `from` got, by ifname.
std::map<std::string, std::pair<std::string, Json>> delegate_inputs(const World& w, size_t from) {
  std::map<std::string, std::pair<std::string, Json>> out;
  for (const Call& c : w.calls_since(from))
    out[c.ifname] = {c.args.value_or(""), c.config().value("runtimeConfig", Json::object())};
  return out;
}

}  // namespace

TEST_CASE("two manifold networks of one container are two entries, each DELed alone", "[plugin][commands]") {
  World w;
  REQUIRE(w.run("ADD", network(w, "net-a"), on("eth0")).exit_code == 0);
  auto b = w.run("ADD", network(w, "net-b"), on("eth1"));
  INFO(b.stdout_text);
  REQUIRE(b.exit_code == 0);
  CHECK(w.briefs_since(0) == Strings{"bridge ADD eth0", "macvlan ADD net1", "bridge ADD eth1", "macvlan ADD eth1-1"});
  CHECK(w.cache.list() == std::vector<manifold::store::EntryKey>{{"ctr1", "net-a", "eth0"}, {"ctr1", "net-b", "eth1"}});

  size_t before = w.calls().size();
  REQUIRE(w.run("DEL", network(w, "net-a"), on("eth0")).exit_code == 0);
  CHECK(w.briefs_since(before) == Strings{"macvlan DEL net1", "bridge DEL eth0"});
  CHECK(w.cache.list() == std::vector<manifold::store::EntryKey>{{"ctr1", "net-b", "eth1"}});
  CHECK(w.run("CHECK", network(w, "net-b"), on("eth1")).exit_code == 0);

  // A DEL of net-b under the wrong ifname has no entry: it releases best-effort without a
  // namespace and leaves net-b's entry alone.
  before = w.calls().size();
  REQUIRE(w.run("DEL", network(w, "net-b"), on("eth0")).exit_code == 0);
  for (const Call& c : w.calls_since(before)) CHECK(c.netns.value_or("").empty());
  CHECK(w.cache.list().size() == 1);
  REQUIRE(w.run("DEL", network(w, "net-b"), on("eth1")).exit_code == 0);
  CHECK(w.cache.list().empty());
}

TEST_CASE("secondary names derive from CNI_IFNAME and must fit in 15 characters", "[plugin][commands]") {
  CHECK(manifold::engine::secondary_ifname("eth0", 2) == "net2");
  CHECK(manifold::engine::secondary_ifname("eth1", 2) == "eth1-2");
  CHECK(manifold::engine::secondary_ifname("abcdefghijkl", 3) == "abcdefghijkl-3");
  CHECK_THROWS_AS(manifold::engine::secondary_ifname("abcdefghijklmn", 1), manifold::cni::CniError);
  World w;
  auto out = w.run("ADD", network(w, "net-a"), on("abcdefghijklmn"));
  REQUIRE(out.exit_code == 1);
  CHECK(Json::parse(out.stdout_text)["code"] == 7);
  CHECK(w.calls().empty());
  CHECK(w.cache.list().empty());
}

TEST_CASE("the runtime's IP=, MAC=, ips and mac reach the cluster network only", "[plugin][commands]") {
  World w;
  Json config = network(w, "net-a");
  config["runtimeConfig"] = {
      {"ips", {"10.244.0.77/24"}}, {"mac", "02:00:00:00:00:77"}, {"portMappings", Json::array()}};
  for (auto& d : config["delegates"]) d["capabilities"] = {{"ips", true}, {"mac", true}, {"portMappings", true}};
  REQUIRE(w.run("ADD", config, on("eth0", "IP=10.244.0.77;MAC=02:00:00:00:00:77;K8S_POD_NAME=p")).exit_code == 0);
  auto in = delegate_inputs(w, 0);
  CHECK(in["eth0"].first == "IgnoreUnknown=true;IP=10.244.0.77;MAC=02:00:00:00:00:77;K8S_POD_NAME=p");
  CHECK(in["eth0"].second.contains("ips"));
  CHECK(in["eth0"].second.contains("mac"));
  CHECK(in["net1"].first == "IgnoreUnknown=true;K8S_POD_NAME=p");
  CHECK_FALSE(in["net1"].second.contains("ips"));
  CHECK_FALSE(in["net1"].second.contains("mac"));
  CHECK(in["net1"].second.contains("portMappings"));  // other capabilities still reach every delegate
  // DEL replays what ADD cached: the secondary never sees them either.
  size_t before = w.calls().size();
  REQUIRE(w.run("DEL", config, on("eth0", "IP=10.244.0.77;MAC=02:00:00:00:00:77;K8S_POD_NAME=p")).exit_code == 0);
  CHECK(delegate_inputs(w, before)["net1"].first == "IgnoreUnknown=true;K8S_POD_NAME=p");
}

TEST_CASE("a meta config without a name is error 7 and runs nothing", "[plugin][commands]") {
  World w;
  Json config = network(w, "net-a");
  config.erase("name");
  auto out = w.run("ADD", config);
  REQUIRE(out.exit_code == 1);
  CHECK(Json::parse(out.stdout_text)["code"] == 7);
  CHECK(Json::parse(out.stdout_text)["msg"].get<std::string>().find("\"name\"") != std::string::npos);
  config["name"] = "";
  CHECK(w.run("DEL", config).exit_code == 1);
  CHECK(w.calls().empty());
}

TEST_CASE("GC needs cni.dev/valid-attachments and collects only its own network", "[plugin][commands]") {
  World w;
  Json a = network(w, "net-a"), b = network(w, "net-b");
  a["cniVersion"] = b["cniVersion"] = "1.1.0";
  REQUIRE(w.run("ADD", a, on("eth0")).exit_code == 0);
  REQUIRE(w.run("ADD", b, on("eth1")).exit_code == 0);
  size_t before = w.calls().size();
  Json gc = a;
  auto missing = w.run("GC", gc, manifold::test::Env{"", "", std::string(), "", "/nonexistent/cni/bin"});
  REQUIRE(missing.exit_code == 1);
  CHECK(Json::parse(missing.stdout_text)["code"] == 7);
  gc["cni.dev/valid-attachments"] = nullptr;
  CHECK(w.run("GC", gc, manifold::test::Env{"", "", std::string(), "", "/nonexistent/cni/bin"}).exit_code == 1);
  CHECK(w.calls().size() == before);  // nothing was DELeted
  CHECK(w.cache.list().size() == 2);

  gc["cni.dev/valid-attachments"] = Json::array();
  REQUIRE(w.run("GC", gc, manifold::test::Env{"", "", std::string(), "", "/nonexistent/cni/bin"}).exit_code == 0);
  CHECK(w.cache.list() == std::vector<manifold::store::EntryKey>{{"ctr1", "net-b", "eth1"}});
  Strings dels;
  for (const Call& c : w.calls_since(before))
    if (c.command == "DEL") dels.push_back(c.brief());
  CHECK(dels == Strings{"macvlan DEL net1", "bridge DEL eth0"});
}

TEST_CASE("the auxiliary chain runs passthru and the plugins beside clusterNetwork", "[plugin][commands]") {
  World w;
  std::filesystem::path dir = w.work.path() / "net.d";
  std::filesystem::create_directories(dir / "aux-chain");
  std::ofstream(dir / "10-cluster.conf") << R"({"cniVersion":"1.0.0","name":"cluster","type":"bridge"})";
  std::ofstream(dir / "aux-chain" / "10-tuning.conf") << R"({"type":"tuning","sysctl":{"net.core.somaxconn":"512"}})";
  Json config = network(w, "net-a");
  config.erase("delegates");
  config["clusterNetwork"] = (dir / "10-cluster.conf").string();
  config["auxiliaryCNIChainName"] = "aux-chain";
  auto out = w.run("ADD", config);
  INFO(out.stdout_text);
  REQUIRE(out.exit_code == 0);
  // passthru is not installed: manifold answered for it, and tuning got its (empty) result.
  CHECK(w.briefs_since(0) == Strings{"bridge ADD eth0", "tuning ADD net1"});
  Json tuning = w.calls().back().config();
  CHECK(tuning["name"] == "aux-chain");
  CHECK(tuning["prevResult"] == Json{{"cniVersion", "1.0.0"}});
  size_t before = w.calls().size();
  REQUIRE(w.run("DEL", config).exit_code == 0);
  CHECK(w.briefs_since(before) == Strings{"tuning DEL net1", "bridge DEL eth0"});

  SECTION("an empty chain directory adds nothing") {
    std::filesystem::remove(dir / "aux-chain" / "10-tuning.conf");
    before = w.calls().size();
    REQUIRE(w.run("ADD", config).exit_code == 0);
    CHECK(w.briefs_since(before) == Strings{"bridge ADD eth0"});
  }
  SECTION("clusterNetwork that is not a path is error 7") {
    config["clusterNetwork"] = "cluster";
    config["confDir"] = dir.string();
    auto bad = w.run("ADD", config);
    REQUIRE(bad.exit_code == 1);
    CHECK(Json::parse(bad.stdout_text)["code"] == 7);
  }
}
