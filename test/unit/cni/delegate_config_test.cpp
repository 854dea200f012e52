// Unit tests for delegate config building: capability-filtered runtimeConfig, conflist plugin
// stdin, and byte-preserving prevResult splicing.
#include <catch2/catch.hpp>

#include "cni/delegate_config.h"
#include "cni/error.h"

using namespace manifold;
using namespace manifold::cni;

TEST_CASE("runtimeConfig reaches only declared capabilities", "[cni]") {
  Json rc = Json::parse(R"({"portMappings":[{"hostPort":80}],"mac":"aa:bb:cc:dd:ee:ff","ips":["10.0.0.1/24"]})");
  Json plugin = Json::parse(R"({"type":"x","capabilities":{"mac":true,"ips":false,"bandwidth":true}})");
  Json out = inject_runtime_config(plugin, rc);
  CHECK(out["runtimeConfig"] == Json::parse(R"({"mac":"aa:bb:cc:dd:ee:ff"})"));
  Json none = inject_runtime_config(Json::parse(R"({"type":"x"})"), rc);
  CHECK_FALSE(none.contains("runtimeConfig"));
  Json unmatched = inject_runtime_config(Json::parse(R"({"type":"x","capabilities":{"bandwidth":true}})"), rc);
  CHECK_FALSE(unmatched.contains("runtimeConfig"));
}

TEST_CASE("prepare_delegate injects per plugin and fills cniVersion", "[cni]") {
  Json rc = Json::parse(R"({"mac":"aa:bb:cc:dd:ee:ff"})");
  Json list =
      Json::parse(R"({"name":"l","plugins":[{"type":"macvlan"},{"type":"tuning","capabilities":{"mac":true}}]})");
  Json out = prepare_delegate(list, rc, "1.0.0");
  CHECK(out["cniVersion"] == "1.0.0");
  CHECK_FALSE(out["plugins"][0].contains("runtimeConfig"));
  CHECK(out["plugins"][1]["runtimeConfig"]["mac"] == "aa:bb:cc:dd:ee:ff");
  Json conf = prepare_delegate(Json::parse(R"({"cniVersion":"0.3.1","type":"bridge"})"), rc, "1.0.0");
  CHECK(conf["cniVersion"] == "0.3.1");
}

TEST_CASE("conflist plugins get name, cniVersion and prevResult", "[cni]") {
  Json plugin = Json::parse(R"({"type":"tuning","mac":"x"})");
  CHECK(chain_plugin_stdin(plugin, "l", "0.4.0", Json()) ==
        R"({"type":"tuning","mac":"x","name":"l","cniVersion":"0.4.0"})");
  CHECK(chain_plugin_stdin(plugin, "l", "0.4.0", Json::parse(R"({"cniVersion":"0.4.0"})")) ==
        R"({"type":"tuning","mac":"x","name":"l","cniVersion":"0.4.0","prevResult":{"cniVersion":"0.4.0"}})");
}

TEST_CASE("prevResult is spliced without touching other bytes", "[cni]") {
  std::string cached = "{\"cniVersion\": \"1.0.0\",  \"type\":\"bridge\", \"x\":1.50}\n";
  std::string out = with_prev_result(cached, R"({"cniVersion":"1.0.0","ips":[]})");
  CHECK(out ==
        "{\"cniVersion\": \"1.0.0\",  \"type\":\"bridge\", "
        "\"x\":1.50,\"prevResult\":{\"cniVersion\":\"1.0.0\",\"ips\":[]}}\n");
  CHECK(Json::parse(out)["prevResult"]["ips"].is_array());
  CHECK(with_prev_result("{ }", "{}") == "{ \"prevResult\":{}}");
  std::string replaced = with_prev_result(R"({"type":"a","prevResult":{"old":1}})", R"({"new":2})");
  CHECK(Json::parse(replaced)["prevResult"] == Json::parse(R"({"new":2})"));
  CHECK_THROWS_AS(with_prev_result("[1]", "{}"), CniError);
}

TEST_CASE("version comparison helpers", "[cni]") {
  CHECK(version_at_least("0.4.0", 0, 4));
  CHECK(version_at_least("1.1.0", 1, 1));
  CHECK_FALSE(version_at_least("1.0.0", 1, 1));
  CHECK_FALSE(version_at_least("", 0, 4));
  CHECK_FALSE(version_at_least("garbage", 0, 1));
  CHECK(delegate_version(Json::parse(R"({"cniVersion":"0.3.1"})")) == "0.3.1");
}
