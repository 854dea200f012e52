// Regression tests for the stdin config found while fuzzing (fuzz_stdin_config with hand-made deep
// inputs beyond its -max_len): a config nested hundreds of thousands of levels deep parsed fine
// and then overflowed the stack when parse_meta_config copied it (every verb copies and prints the
// config). The dispatcher now rejects nesting deeper than 128 levels as a decoding error. Also a
// NUL byte: nlohmann's parser ends the document there, so "{...}\0junk" was accepted as a config
// and with_prev_result spliced prevResult into the junk after the NUL (the spliced text then parsed
// without it); found by fuzz_stdin_config (corpus/stdin_config/nul-after-object.json).
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "cni/delegate_config.h"
#include "cni/error.h"
#include "cni/netconf.h"
#include "cni/skel.h"

using namespace manifold;

namespace {

/// Copies the config the way the real verbs do.
struct CopyingHandlers final : cni::Handlers {
  std::string answer(const cni::Invocation& inv) {
    cni::MetaConfig m = cni::parse_meta_config(inv.config);
    return "{\"delegates\":" + std::to_string(m.delegates.size()) + "}";
  }
  std::string add(const cni::Invocation& inv) override { return answer(inv); }
  std::string del(const cni::Invocation& inv) override { return answer(inv); }
  std::string check(const cni::Invocation& inv) override { return answer(inv); }
  std::string gc(const cni::Invocation& inv) override { return answer(inv); }
  std::string status(const cni::Invocation& inv) override { return answer(inv); }
};

std::map<std::string, std::string> add_env() {
  return {{"CNI_COMMAND", "ADD"},
          {"CNI_CONTAINERID", "c1"},
          {"CNI_NETNS", "/var/run/netns/x"},
          {"CNI_IFNAME", "eth0"},
          {"CNI_PATH", "/opt/cni/bin"}};
}

std::string config_nested(std::size_t depth) {
  return R"({"cniVersion":"1.0.0","name":"n","type":"manifold","delegates":[{"type":"bridge","x":)" +
         std::string(depth, '[') + std::string(depth, ']') + "}]}";
}

}  // namespace

TEST_CASE("fuzz: a stdin config nested far too deep is a decoding error, not a stack overflow", "[fuzz]") {
  CopyingHandlers h;
  const std::string deep = config_nested(400000);  // 800 KB, under the 1 MiB bound
  REQUIRE(deep.size() < cni::kMaxStdinBytes);
  cni::DispatchOutput out = cni::dispatch(add_env(), deep, h);
  REQUIRE(out.exit_code == 1);
  Json error = Json::parse(out.stdout_text);
  CHECK(error["code"] == 6);
  CHECK(error["msg"].get<std::string>().find("nested deeper than 128 levels") != std::string::npos);
}

TEST_CASE("fuzz: the nesting bound of the stdin config is 128 levels", "[fuzz]") {
  CopyingHandlers h;
  // The delegate's "x" sits inside 3 containers (config object, delegates list, delegate object),
  // so its innermost list is inside 3 + 125 = 128 containers: the deepest accepted.
  cni::DispatchOutput ok = cni::dispatch(add_env(), config_nested(126), h);
  CHECK(ok.exit_code == 0);
  CHECK(ok.stdout_text == "{\"delegates\":1}");
  cni::DispatchOutput deep = cni::dispatch(add_env(), config_nested(127), h);
  CHECK(deep.exit_code == 1);
  CHECK(Json::parse(deep.stdout_text)["code"] == 6);
}

TEST_CASE("fuzz: VERSION still answers for a deeply nested stdin", "[fuzz]") {
  CopyingHandlers h;
  auto env = add_env();
  env["CNI_COMMAND"] = "VERSION";
  cni::DispatchOutput out = cni::dispatch(env, config_nested(400000), h);
  CHECK(out.exit_code == 0);
  CHECK(Json::parse(out.stdout_text)["cniVersion"] == "1.0.0");
}

TEST_CASE("fuzz: a stdin config with a NUL byte is a decoding error", "[fuzz]") {
  CopyingHandlers h;
  const std::string conf = R"({"cniVersion":"1.1.0","name":"n","type":"manifold","delegates":[{"type":"bridge"}]})";
  for (const std::string& stdin_text :
       {conf + std::string(1, '\0'), conf + std::string(8, '\0') + R"(": "x"}]})", std::string(1, '\0') + conf}) {
    cni::DispatchOutput out = cni::dispatch(add_env(), stdin_text, h);
    REQUIRE(out.exit_code == 1);
    Json error = Json::parse(out.stdout_text);
    CHECK(error["code"] == 6);
  }
  CHECK(cni::dispatch(add_env(), conf, h).exit_code == 0);
}

TEST_CASE("fuzz: with_prev_result refuses config text with a NUL byte", "[fuzz]") {
  const std::string prev = R"({"cniVersion":"1.0.0","ips":[{"address":"10.1.2.3/24"}]})";
  const std::string conf = R"({"cniVersion":"1.0.0","type":"bridge"})";
  CHECK_THROWS_AS(cni::with_prev_result(conf + std::string(1, '\0') + "}", prev), cni::CniError);
  CHECK_THROWS_AS(cni::with_prev_result(conf + std::string(4, '\0'), prev), cni::CniError);
  Json spliced = Json::parse(cni::with_prev_result(conf, prev));
  CHECK(spliced["prevResult"] == Json::parse(prev));
}
