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
