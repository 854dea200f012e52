// Tests for util/json_error: parse failures worded for people — where, and what was found — with
// none of the library's tags.
#include "util/json_error.h"

#include <catch2/catch.hpp>
#include <string>

using manifold::Json;
using manifold::util::describe_json_error;

namespace {

std::string described(const std::string& text) {
  try {
    (void)Json::parse(text);
  } catch (const Json::exception& e) {
    return describe_json_error(e);
  }
  FAIL("parsed: " << text);
  return {};
}

}  // namespace

TEST_CASE("json error: a syntax error says where and what was read", "[util]") {
  CHECK(described("[{\"name\": blue}]") == "not valid JSON at line 1, column 11: invalid literal near '\"name\": b'");
  CHECK(described("[{\"name\":\"a\"}") == "not valid JSON at line 1, column 14: unexpected end of input; expected ']'");
  CHECK(described("{\n  \"a\": 1,\n}") ==
        "not valid JSON at line 3, column 1: unexpected '}'; expected string literal");
  CHECK(described("") ==
        "not valid JSON at line 1, column 1: unexpected end of input; expected '[', '{', or a literal");
}

TEST_CASE("json error: no library tag, and long tokens are cut", "[util]") {
  for (const char* text : {"[1,", "{\"a\" 1}", "\"\\uD800\"", "[1e999]", "tru", "[\"abc"}) {
    const std::string d = described(text);
    INFO(text << " -> " << d);
    CHECK(d.find("json.exception") == std::string::npos);
    CHECK(d.find("last read") == std::string::npos);
    CHECK(d.rfind("not valid JSON", 0) == 0);
  }
  const std::string d = described("[\"" + std::string(500, 'x'));
  CHECK(d.size() < 160);
}

TEST_CASE("json error: a number out of range names the number", "[util]") {
  CHECK(described("[1e999]") == "not valid JSON: the number 1e999 is out of range");
}
