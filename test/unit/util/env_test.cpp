// Tests of the environment sources: the map-backed fake and the getenv-backed real one.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "util/env.h"

using namespace manifold::util;

TEST_CASE("FakeEnv distinguishes unset from empty", "[util]") {
  FakeEnv env({{"A", "1"}, {"EMPTY", ""}});
  CHECK(env.get("A") == std::optional<std::string>("1"));
  CHECK(env.get("EMPTY") == std::optional<std::string>(""));
  CHECK_FALSE(env.get("B"));
  env.set("B", "2");
  env.unset("A");
  CHECK(env.get("B") == std::optional<std::string>("2"));
  CHECK_FALSE(env.get("A"));
}

TEST_CASE("ProcessEnv reads the process environment", "[util]") {
  ::setenv("MANIFOLD_ENV_TEST_VAR", "value", 1);
  ProcessEnv env;
  CHECK(env.get("MANIFOLD_ENV_TEST_VAR") == std::optional<std::string>("value"));
  ::unsetenv("MANIFOLD_ENV_TEST_VAR");
  CHECK_FALSE(env.get("MANIFOLD_ENV_TEST_VAR"));
}

TEST_CASE("environment name patterns: names and prefixes ending in *", "[util]") {
  using manifold::util::env_name_matches;
  using manifold::util::is_env_name_pattern;
  for (const char* ok : {"PATH", "HTTPS_PROXY", "no_proxy", "_X", "CORP_*", "A1"}) {
    CAPTURE(ok);
    CHECK(is_env_name_pattern(ok));
  }
  for (const char* bad : {"", "*", "1A", "A-B", "A B", "A=B", "A*B", "**", "A**"}) {
    CAPTURE(bad);
    CHECK_FALSE(is_env_name_pattern(bad));
  }
  CHECK_FALSE(is_env_name_pattern(std::string(257, 'A')));
  CHECK(env_name_matches("CORP_*", "CORP_X"));
  CHECK(env_name_matches("CORP_*", "CORP_"));
  CHECK_FALSE(env_name_matches("CORP_*", "CORP"));
  CHECK(env_name_matches("PATH", "PATH"));
  CHECK_FALSE(env_name_matches("PATH", "PATH2"));
}
