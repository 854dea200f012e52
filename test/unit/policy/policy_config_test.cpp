// Unit tests for the `multiNetworkPolicy` meta-config key: defaults, every setting, and errors
// that name the field (thrown for a CNI call, all collected for `manifold validate`).
#include <catch2/catch.hpp>

#include "cni_error_of.h"
#include "policy/policy_config.h"

using namespace manifold;
using namespace manifold::policy;

TEST_CASE("policy: without the key nothing is enforced", "[policy]") {
  CHECK(read_policy_config(Json(nullptr)) == PolicyConfig{});
  CHECK_FALSE(read_policy_config(Json::object()).enabled);
  CHECK_FALSE(PolicyConfig{}.forced_backend().has_value());
}

TEST_CASE("policy: every setting is read", "[policy]") {
  const PolicyConfig cfg = read_policy_config(
      Json::parse(R"({"enabled": true, "iptablesMode": "legacy", "lockWaitSeconds": 5, "denyAction": "reject"})"));
  CHECK(cfg.enabled);
  CHECK(cfg.forced_backend() == std::optional<firewall::Backend>(firewall::Backend::Legacy));
  CHECK(cfg.lock_wait_seconds == 5);
  CHECK(cfg.deny == DenyAction::Reject);
  CHECK(read_policy_config(Json::parse(R"({"iptablesMode": "nft"})")).forced_backend() ==
        std::optional<firewall::Backend>(firewall::Backend::Nft));
}

TEST_CASE("policy: a bad setting is error 7 naming the field", "[policy]") {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"([])", "invalid multiNetworkPolicy: not an object"},
      {R"({"enabled": "yes"})", "invalid multiNetworkPolicy.enabled: \"yes\" is not a boolean"},
      {R"({"iptablesMode": "iptables"})", "invalid multiNetworkPolicy.iptablesMode: \"iptables\" is not one of"},
      {R"({"lockWaitSeconds": 0})", "invalid multiNetworkPolicy.lockWaitSeconds: 0 is out of range (1-600)"},
      {R"({"denyAction": "DROP"})",
       "invalid multiNetworkPolicy.denyAction: \"DROP\" is not one of \"drop\", \"reject\""},
      {R"({"enable": true})", "invalid multiNetworkPolicy.enable: unknown key"},
  };
  for (const auto& c : cases) {
    INFO(c.first);
    std::string msg;
    CHECK(test::code_of([&] { (void)read_policy_config(Json::parse(c.first)); }, &msg) == 7);
    CHECK_THAT(msg, Catch::StartsWith(c.second));
  }
}

TEST_CASE("policy: validation collects every problem with its path", "[policy]") {
  cni::Problems problems;
  validate_policy_config(Json::parse(R"({"enabled": 1, "denyAction": "x", "other": 2})"), "$.multiNetworkPolicy",
                         problems);
  REQUIRE(problems.size() == 3);
  CHECK(problems[0].path == "$.multiNetworkPolicy.other");
  CHECK(problems[1].path == "$.multiNetworkPolicy.enabled");
  CHECK(problems[2].path == "$.multiNetworkPolicy.denyAction");
}
