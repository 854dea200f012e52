// Unit tests for the printable renderings of untrusted text: the bound, the replacement or escape of
// every byte outside printable ASCII, and the "..." marker only when text was cut.
#include <catch2/catch.hpp>

#include <string>

#include "util/quote.h"

using manifold::Json;
using manifold::util::hex_lower;
using manifold::util::printable;
using manifold::util::quote_bytes;
namespace util = manifold::util;

TEST_CASE("printable replaces unprintable bytes and bounds the length", "[util]") {
  CHECK(printable("eth0") == "eth0");
  CHECK(printable("a\nb\x01\xc3\xa9") == "a?b???");
  CHECK(printable(std::string(64, 'x')) == std::string(64, 'x'));
  CHECK(printable(std::string(65, 'x')) == std::string(64, 'x') + "...");
  CHECK(printable("abcdef", 3) == "abc...");
}

TEST_CASE("quote_bytes escapes quotes, backslashes and unprintable bytes as \\xNN", "[util]") {
  CHECK(quote_bytes("10.0.0.1") == "\"10.0.0.1\"");
  CHECK(quote_bytes("a\"b\\c") == "\"a\\x22b\\x5cc\"");
  CHECK(quote_bytes("\n\x7f\xff") == "\"\\x0a\\x7f\\xff\"");
  CHECK(quote_bytes("") == "\"\"");
  CHECK(quote_bytes(std::string(64, 'y')) == "\"" + std::string(64, 'y') + "\"");
  CHECK(quote_bytes(std::string(65, 'y')) == "\"" + std::string(64, 'y') + "...\"");
  CHECK(quote_bytes("abcd", 2) == "\"ab...\"");
}

TEST_CASE("printable_json quotes strings and renders other values as JSON", "[util]") {
  CHECK(util::printable_json(Json("root")) == "\"root\"");
  CHECK(util::printable_json(Json("a\tb")) == "\"a?b\"");
  CHECK(util::printable_json(Json(70000)) == "70000");
  CHECK(util::printable_json(Json::parse(R"({"a":[1,true]})")) == "{\"a\":[1,true]}");
  CHECK(util::printable_json(Json(std::string(100, 'y'))) == "\"" + std::string(64, 'y') + "...\"");
}

TEST_CASE("short_escape: the seven escapes JSON and Go's %q share, nothing else", "[util]") {
  using manifold::util::short_escape;
  CHECK(std::string(short_escape('"')) == "\\\"");
  CHECK(std::string(short_escape('\\')) == "\\\\");
  CHECK(std::string(short_escape('\b')) == "\\b");
  CHECK(std::string(short_escape('\f')) == "\\f");
  CHECK(std::string(short_escape('\n')) == "\\n");
  CHECK(std::string(short_escape('\r')) == "\\r");
  CHECK(std::string(short_escape('\t')) == "\\t");
  for (unsigned char c : {'\a', '\v', '\0', '\x1f', 'a', '<', '/', '\x7f', '\xe2'}) {
    CAPTURE(static_cast<int>(c));
    CHECK(short_escape(c) == nullptr);
  }
}

TEST_CASE("percent_encode keeps letters, digits and the given characters, %XX for every other byte", "[util]") {
  using manifold::util::percent_encode;
  CHECK(percent_encode("spec.nodeName=node-a_1~", "-._~") == "spec.nodeName%3Dnode-a_1~");
  CHECK(percent_encode("my.net/a b@c%", "_-") == "my%2Enet%2Fa%20b%40c%25");
  CHECK(percent_encode(std::string("\x00\xff", 2), "") == "%00%FF");
  CHECK(percent_encode("", "-") == "");
}

TEST_CASE("hex_lower renders every byte as two lower-case hex digits", "[util]") {
  CHECK(hex_lower("") == "");
  CHECK(hex_lower(std::string("\x00\x0a\xff\x7f", 4)) == "000aff7f");
  CHECK(hex_lower("AZ") == "415a");
}
