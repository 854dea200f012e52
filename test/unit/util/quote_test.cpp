// Unit tests for the printable renderings of untrusted text.
#include <catch2/catch.hpp>

#include "util/quote.h"

using namespace manifold;

TEST_CASE("printable replaces control bytes and bounds the length", "[util]") {
  CHECK(util::printable("plain") == "plain");
  CHECK(util::printable("a\nb\x01\xff") == "a?b??");
  CHECK(util::printable(std::string(70, 'x')) == std::string(64, 'x') + "...");
  CHECK(util::printable("abcdef", 3) == "abc...");
}

TEST_CASE("printable_json quotes strings and renders other values as JSON", "[util]") {
  CHECK(util::printable_json(Json("root")) == "\"root\"");
  CHECK(util::printable_json(Json("a\tb")) == "\"a?b\"");
  CHECK(util::printable_json(Json(70000)) == "70000");
  CHECK(util::printable_json(Json::parse(R"({"a":[1,true]})")) == "{\"a\":[1,true]}");
  CHECK(util::printable_json(Json(std::string(100, 'y'))) == "\"" + std::string(64, 'y') + "...\"");
}
