// Unit tests for the CNI dispatcher: env validation, version gates, error JSON rendering and the
// VERSION answer. A recording Handlers fake stands in for the verbs.
#include <catch2/catch.hpp>

#include "cni/error.h"
#include "cni/skel.h"
#include "util/error.h"
#include "util/json.h"

using namespace manifold;
using namespace manifold::cni;

namespace {

struct RecordingHandlers : Handlers {
  std::vector<std::string> calls;
  Invocation last;
  std::function<std::string()> answer = [] { return std::string("{\"ok\":true}"); };
  std::string run(const char* verb, const Invocation& inv) {
    calls.push_back(verb);
    last = inv;
    return answer();
  }
  std::string add(const Invocation& i) override { return run("ADD", i); }
  std::string del(const Invocation& i) override { return run("DEL", i); }
  std::string check(const Invocation& i) override { return run("CHECK", i); }
  std::string gc(const Invocation& i) override { return run("GC", i); }
  std::string status(const Invocation& i) override { return run("STATUS", i); }
};

std::map<std::string, std::string> env_for(const char* cmd) {
  return {{"CNI_COMMAND", cmd},   {"CNI_CONTAINERID", "c1"},    {"CNI_NETNS", "/var/run/netns/x"},
          {"CNI_IFNAME", "eth0"}, {"CNI_PATH", "/opt/cni/bin"}, {"CNI_ARGS", "K8S_POD_NAME=p"}};
}

Json error_of(const DispatchOutput& out) {
  REQUIRE(out.exit_code == 1);
  return Json::parse(out.stdout_text);
}

const char* kConf = R"({"cniVersion":"1.0.0","name":"n","type":"manifold","delegates":[{"type":"bridge"}]})";

}  // namespace

TEST_CASE("dispatch routes each verb to its handler", "[cni]") {
  RecordingHandlers h;
  for (const char* verb : {"ADD", "DEL", "CHECK"}) {
    auto out = dispatch(env_for(verb), kConf, h);
    CHECK(out.exit_code == 0);
    CHECK(h.calls.back() == verb);
  }
  CHECK(h.last.container_id == "c1");
  CHECK(h.last.args.get("K8S_POD_NAME") == std::optional<std::string>("p"));
  CHECK(h.last.version == "1.0.0");
  CHECK(h.last.config["name"] == "n");
}

TEST_CASE("missing env variables are error 4 naming them", "[cni]") {
  RecordingHandlers h;
  auto env = env_for("ADD");
  env.erase("CNI_NETNS");
  env.erase("CNI_IFNAME");
  Json e = error_of(dispatch(env, kConf, h));
  CHECK(e["code"] == 4);
  CHECK(e["msg"] == "required env variables [CNI_NETNS CNI_IFNAME] missing");
  CHECK(e["cniVersion"] == "1.0.0");
  CHECK(h.calls.empty());
}

TEST_CASE("DEL tolerates a missing CNI_NETNS", "[cni]") {
  RecordingHandlers h;
  auto env = env_for("DEL");
  env.erase("CNI_NETNS");
  CHECK(dispatch(env, kConf, h).exit_code == 0);
}

TEST_CASE("bad stdin gets decoding and version errors", "[cni]") {
  RecordingHandlers h;
  CHECK(error_of(dispatch(env_for("ADD"), "{not json", h))["code"] == 6);
  CHECK(error_of(dispatch(env_for("ADD"), "[1,2]", h))["code"] == 6);
  Json e = error_of(dispatch(env_for("ADD"), R"({"cniVersion":"9.9.9","delegates":[]})", h));
  CHECK(e["code"] == 1);
  CHECK(e["cniVersion"] == "1.1.0");
  CHECK(error_of(dispatch(env_for("ADD"), R"({"cniVersion":7})", h))["code"] == 7);
  CHECK(error_of(dispatch(env_for("ADD"), std::string(kMaxStdinBytes + 1, ' '), h))["code"] == 7);
  CHECK(h.calls.empty());
}

TEST_CASE("invalid container IDs and interface names are error 4", "[cni]") {
  RecordingHandlers h;
  auto env = env_for("ADD");
  env["CNI_CONTAINERID"] = "../etc";
  CHECK(error_of(dispatch(env, kConf, h))["code"] == 4);
  env = env_for("ADD");
  env["CNI_IFNAME"] = "this-name-is-too-long";
  CHECK(error_of(dispatch(env, kConf, h))["code"] == 4);
  env["CNI_COMMAND"] = "FROB";
  CHECK(error_of(dispatch(env, kConf, h))["code"] == 4);
}

TEST_CASE("CHECK needs 0.4.0 and GC/STATUS need 1.1.0", "[cni]") {
  RecordingHandlers h;
  auto conf = [](const char* v) {
    return std::string(R"({"cniVersion":")") + v + R"(","delegates":[{"type":"bridge"}]})";
  };
  CHECK(error_of(dispatch(env_for("CHECK"), conf("0.3.1"), h))["code"] == 1);
  CHECK(dispatch(env_for("CHECK"), conf("0.4.0"), h).exit_code == 0);
  CHECK(error_of(dispatch(env_for("GC"), conf("1.0.0"), h))["code"] == 1);
  CHECK(error_of(dispatch(env_for("STATUS"), conf("1.0.0"), h))["code"] == 1);
  CHECK(dispatch(env_for("GC"), conf("1.1.0"), h).exit_code == 0);
  CHECK(dispatch(env_for("STATUS"), conf("1.1.0"), h).exit_code == 0);
}

TEST_CASE("handler errors keep their code, message and details", "[cni]") {
  RecordingHandlers h;
  h.answer = []() -> std::string { throw CniError(11u, "busy", "try later"); };
  Json e = error_of(dispatch(env_for("ADD"), kConf, h));
  CHECK(e == Json::parse(R"({"cniVersion":"1.0.0","code":11,"msg":"busy","details":"try later"})"));
  h.answer = []() -> std::string { throw std::runtime_error("boom"); };
  e = error_of(dispatch(env_for("ADD"), kConf, h));
  CHECK(e["code"] == 100);
  CHECK(e["msg"] == "internal error: boom");
  h.answer = []() -> std::string { throw util::IoError("cannot read /x: No such file or directory"); };
  e = error_of(dispatch(env_for("ADD"), kConf, h));
  CHECK(e["code"] == 5);
  CHECK(e["msg"] == "cannot read /x: No such file or directory");
}

TEST_CASE("VERSION lists every supported version", "[cni]") {
  RecordingHandlers h;
  auto out = dispatch({{"CNI_COMMAND", "VERSION"}}, R"({"cniVersion":"0.4.0"})", h);
  REQUIRE(out.exit_code == 0);
  Json v = Json::parse(out.stdout_text);
  CHECK(v["cniVersion"] == "0.4.0");
  CHECK(v["supportedVersions"] == Json::parse(R"(["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"])"));
  CHECK(Json::parse(dispatch({{"CNI_COMMAND", "VERSION"}}, "", h).stdout_text)["cniVersion"] == "1.1.0");
}

TEST_CASE("error JSON renders every field", "[cni]") {
  CniError e(ErrorCode::InvalidConfig, "bad key", "details here");
  CHECK(e.to_json("0.4.0").dump() == R"({"cniVersion":"0.4.0","code":7,"msg":"bad key","details":"details here"})");
  CHECK(CniError(ErrorCode::Io, "x").to_json("1.0.0").dump() == R"({"cniVersion":"1.0.0","code":5,"msg":"x"})");
}

TEST_CASE("container ID rules", "[cni]") {
  CHECK(valid_container_id("abc-1.2_x"));
  CHECK_FALSE(valid_container_id("-abc"));
  CHECK_FALSE(valid_container_id("a/b"));
  CHECK_FALSE(valid_container_id(std::string(1025, 'a')));
}
