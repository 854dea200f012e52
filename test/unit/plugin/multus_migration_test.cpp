// Tests for the DEL of a container Multus thin attached before its node moved to manifold
// (engine/multus_cache.h), through cni::dispatch with every side effect faked: Multus's scratch
// file and libcni's result files as Multus v4 writes them give each delegate, in reverse, the DEL
// of the config it was added with, under Multus's interface name, in the runtime's namespace, with
// its cached result and CNI_ARGS; the files go afterwards (with retryDeleteOnError only when every
// DEL succeeded); a malformed file falls back to the best-effort DEL; multusCniDir "" never looks.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "plugin/fakes.h"

using manifold::Json;
using manifold::test::Call;
using manifold::test::cni_error_answer;
using manifold::test::World;
using Strings = std::vector<std::string>;

namespace {

constexpr const char* kDir = "/var/lib/cni/multus";
constexpr const char* kId = "ctr1";

/// manifold's config after the migration: it wraps the same cluster network Multus wrapped.
Json migrated_config(const World& w) {
  Json c = Json::parse(R"({"cniVersion": "1.0.0", "name": "multus-cni-network", "type": "manifold",
    "cniDir": "/var/lib/cni/manifold-test", "logToStderr": false,
    "delegates": [{"cniVersion": "1.0.0", "name": "cluster", "plugins": [{"type": "bridge", "bridge": "cni0"}]}]})");
  c["binDir"] = w.bin.str();
  return c;
}

std::string base64(const std::string& in) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    if (i + 2 < in.size()) v |= static_cast<unsigned char>(in[i + 2]);
    out += t[(v >> 18) & 63];
    out += t[(v >> 12) & 63];
    out += i + 1 < in.size() ? t[(v >> 6) & 63] : '=';
    out += i + 2 < in.size() ? t[v & 63] : '=';
  }
  return out;
}

/// One DelegateNetConf as Go's encoding/json writes it (the parsed copies Multus keeps beside the
/// raw bytes included, as Multus writes them).
Json delegate(const std::string& name, const std::string& config, const std::string& ifname_request = "") {
  Json d = {{"Conf", {{"cniVersion", ""}, {"name", ""}, {"type", ""}}},
            {"ConfList", {{"cniVersion", ""}, {"name", ""}, {"plugins", nullptr}}},
            {"CNINetworkConfigList", {{"Name", ""}, {"CNIVersion", ""}, {"Plugins", nullptr}, {"Bytes", nullptr}}},
            {"Name", name}};
  if (!ifname_request.empty()) d["ifnameRequest"] = ifname_request;
  d["IsFilterV4Gateway"] = false;
  d["IsFilterV6Gateway"] = false;
  d["Bytes"] = base64(config);
  return d;
}

const std::string kCluster = R"({"cniVersion":"1.0.0","name":"cluster","plugins":[{"type":"bridge","bridge":"cni0"}]})";
const std::string kStorage = R"({"cniVersion":"1.0.0","name":"storage","type":"macvlan","master":"eth1"})";
const std::string kChain = R"({"name":"chain","plugins":[{"type":"ptp"},{"type":"tuning","mtu":1400}]})";

/// A libcni cniCacheV1 result file of one delegate.
std::string libcni_cache(const std::string& network, const std::string& ifname, const std::string& address) {
  Json result = {{"cniVersion", "1.0.0"},
                 {"interfaces", Json::array({Json{{"name", ifname}, {"sandbox", "/var/run/netns/p"}}})},
                 {"ips", Json::array({Json{{"address", address}, {"interface", 0}}})}};
  Json cache = {
      {"kind", "cniCacheV1"},
      {"containerId", kId},
      {"config", base64("{}")},
      {"ifName", ifname},
      {"networkName", network},
      {"cniArgs", Json::array({Json::array({"IgnoreUnknown", "true"}), Json::array({"K8S_POD_NAMESPACE", "default"}),
                               Json::array({"K8S_POD_NAME", "web"})})},
      {"result", result}};
  return cache.dump();
}

void add_file(World& w, const std::string& path, const std::string& contents) {
  w.files->add(path, contents);
  w.existing_files.insert(path);
}

/// Multus's cache of a pod with the cluster network, `storage` as net1 and `chain` as data0.
void multus_attached(World& w) {
  Json delegates = Json::array({delegate("cluster", kCluster), delegate("default/storage", kStorage),
                                delegate("default/chain", kChain, "data0")});
  add_file(w, std::string(kDir) + "/" + kId, delegates.dump());
  add_file(w, std::string(kDir) + "/results/cluster-ctr1-eth0", libcni_cache("cluster", "eth0", "10.244.0.5/24"));
  add_file(w, std::string(kDir) + "/results/storage-ctr1-net1", libcni_cache("storage", "net1", "192.0.2.5/24"));
}

bool multus_files_left(const World& w) {
  for (const char* f : {"/ctr1", "/results/cluster-ctr1-eth0", "/results/storage-ctr1-net1"})
    if (w.files->contains(std::string(kDir) + f)) return true;
  return false;
}

}  // namespace

TEST_CASE("DEL of a container Multus attached replays Multus's cache", "[plugin][commands][multus]") {
  World w;
  multus_attached(w);
  auto out = w.run("DEL", migrated_config(w));
  INFO(out.stdout_text);
  REQUIRE(out.exit_code == 0);
  auto calls = w.calls();
  REQUIRE(w.briefs_since(0) == Strings{"tuning DEL data0", "ptp DEL data0", "macvlan DEL net1", "bridge DEL eth0"});
  for (const Call& c : calls) CHECK(c.netns == w.netns_path);  // the cache proves the links are theirs
  // The chain has no result file: the runtime's CNI_ARGS, no prevResult, Multus's cniVersion added.
  CHECK(calls[0].config()["cniVersion"] == "1.0.0");
  CHECK_FALSE(calls[0].config().contains("prevResult"));
  CHECK(calls[0].config()["mtu"] == 1400);
  // The others: libcni's cached CNI_ARGS and result.
  CHECK(calls[2].args == "IgnoreUnknown=true;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web");
  CHECK(calls[2].config()["master"] == "eth1");
  CHECK(calls[2].config()["prevResult"]["ips"][0]["address"] == "192.0.2.5/24");
  CHECK(calls[3].config()["prevResult"]["ips"][0]["address"] == "10.244.0.5/24");
  CHECK_FALSE(multus_files_left(w));
  CHECK(w.cache.list().empty());
}

TEST_CASE("DEL of a Multus-attached container keeps Multus's files for a retry only with retryDeleteOnError",
          "[plugin][commands][multus]") {
  World w;
  multus_attached(w);
  w.intercept = [](const Call& c) -> std::optional<manifold::exec::ProcessResult> {
    if (c.command == "DEL" && c.type == "macvlan") return cni_error_answer(11, "macvlan is busy");
    return std::nullopt;
  };
  Json config = migrated_config(w);
  SECTION("off: the files go, the error is reported") {
    auto out = w.run("DEL", config);
    CHECK(out.exit_code == 1);
    CHECK(w.briefs_since(0).size() == 4);
    CHECK_FALSE(multus_files_left(w));
  }
  SECTION("on: the files stay until every DEL succeeded") {
    config["retryDeleteOnError"] = true;
    CHECK(w.run("DEL", config).exit_code == 1);
    CHECK(multus_files_left(w));
    w.intercept = nullptr;
    size_t before = w.call_count();
    CHECK(w.run("DEL", config).exit_code == 0);
    CHECK(w.briefs_since(before).size() == 4);
    CHECK_FALSE(multus_files_left(w));
  }
}

TEST_CASE("DEL with a malformed Multus cache falls back to the best-effort DEL", "[plugin][commands][multus]") {
  World w;
  std::string scratch = std::string(kDir) + "/" + kId;
  SECTION("not JSON") { add_file(w, scratch, "[{\"Bytes\": "); }
  SECTION("not a list") { add_file(w, scratch, "{}"); }
  SECTION("Bytes not base64") { add_file(w, scratch, R"([{"Name": "cluster", "Bytes": "%%%"}])"); }
  SECTION("an interface name that is no interface name") {
    add_file(w, scratch,
             Json::array({delegate("cluster", kCluster), delegate("default/storage", kStorage, "../../x")}).dump());
  }
  SECTION("a config without a type") {
    add_file(w, scratch, Json::array({delegate("cluster", R"({"name": "cluster"})")}).dump());
  }
  auto out = w.run("DEL", migrated_config(w));
  CHECK(out.exit_code == 0);
  auto calls = w.calls();
  REQUIRE(w.briefs_since(0) == Strings{"bridge DEL eth0"});
  CHECK_FALSE(calls[0].netns);              // nothing proves the links are ours
  CHECK_FALSE(w.files->contains(scratch));  // it can never be used: it goes
}

TEST_CASE("multusCniDir \"\" never reads Multus's cache", "[plugin][commands][multus]") {
  World w;
  multus_attached(w);
  Json config = migrated_config(w);
  config["multusCniDir"] = "";
  CHECK(w.run("DEL", config).exit_code == 0);
  CHECK(w.briefs_since(0) == Strings{"bridge DEL eth0"});
  CHECK(multus_files_left(w));
}
