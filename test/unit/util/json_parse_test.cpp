// Tests for lib/util/json_parse: invalid text, a NUL byte and documents nested past the bound are
// a discarded value, never an exception; documents at the bound parse.
#include "util/json_parse.h"

#include <catch2/catch.hpp>
#include <string>

using manifold::util::parse_json_bounded;

TEST_CASE("bounded JSON parsing: invalid or too deep text is discarded, never thrown", "[util]") {
  CHECK(parse_json_bounded(R"({"a": [1, 2]})") == manifold::Json::parse(R"({"a": [1, 2]})"));
  CHECK(parse_json_bounded("").is_discarded());
  CHECK(parse_json_bounded("{\"a\":").is_discarded());
  CHECK(parse_json_bounded(std::string("{}\0{}", 5)).is_discarded());
  CHECK_FALSE(parse_json_bounded(std::string(4, '[') + std::string(4, ']'), 3).is_discarded());
  CHECK(parse_json_bounded(std::string(5, '[') + std::string(5, ']'), 3).is_discarded());
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK(parse_json_bounded(deep).is_discarded());
}
