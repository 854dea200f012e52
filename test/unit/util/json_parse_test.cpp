// Tests for lib/util/json_parse: invalid text, a NUL byte and documents nested past the bound are
// a discarded value, never an exception; documents at the bound parse; json_type_bounded agrees
// with parse_json_bounded on every such text.
#include "util/json_parse.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

using manifold::util::json_type_bounded;
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

TEST_CASE("json_type_bounded: the type parse_json_bounded would return, without the document", "[util]") {
  using T = manifold::Json::value_t;
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::vector<std::pair<std::string, int>> texts = {{R"({"a": [1, 2]})", 256},
                                                          {"", 256},
                                                          {"{\"a\":", 256},
                                                          {std::string("{}\0{}", 5), 256},
                                                          {"[[[[]]]]", 3},
                                                          {"[[[[[]]]]]", 3},
                                                          {"[[[[1]]]]", 3},
                                                          {R"([[[{"k":1}]]])", 3},
                                                          {R"([[[{}]]])", 3},
                                                          {"null", 256},
                                                          {" 42 ", 256},
                                                          {"-1", 256},
                                                          {"1.5", 256},
                                                          {"\"s\"", 256},
                                                          {"true", 256},
                                                          {"{} x", 256},
                                                          {deep, 256}};
  for (const auto& [text, depth] : texts) {
    INFO(text.substr(0, 40) << " depth " << depth);
    CHECK(json_type_bounded(text, depth) == parse_json_bounded(text, depth).type());
  }
  CHECK(json_type_bounded(R"({"a": [1, 2]})") == T::object);
  CHECK(json_type_bounded("{\"a\":") == T::discarded);
}
