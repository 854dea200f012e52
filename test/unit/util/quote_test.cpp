// Unit tests for the printable renderings of untrusted text: the bound, the replacement or escape of
// every byte outside printable ASCII, and the "..." marker only when text was cut.
#include <catch2/catch.hpp>

#include <string>

#include "util/quote.h"

using manifold::util::printable;
using manifold::util::quoted;

TEST_CASE("printable replaces unprintable bytes and bounds the length", "[util]") {
  CHECK(printable("eth0") == "eth0");
  CHECK(printable("a\nb\x01\xc3\xa9") == "a?b???");
  CHECK(printable(std::string(64, 'x')) == std::string(64, 'x'));
  CHECK(printable(std::string(65, 'x')) == std::string(64, 'x') + "...");
  CHECK(printable("abcdef", 3) == "abc...");
}

TEST_CASE("quoted escapes quotes, backslashes and unprintable bytes as \\xNN", "[util]") {
  CHECK(quoted("10.0.0.1") == "\"10.0.0.1\"");
  CHECK(quoted("a\"b\\c") == "\"a\\x22b\\x5cc\"");
  CHECK(quoted("\n\x7f\xff") == "\"\\x0a\\x7f\\xff\"");
  CHECK(quoted("") == "\"\"");
  CHECK(quoted(std::string(64, 'y')) == "\"" + std::string(64, 'y') + "\"");
  CHECK(quoted(std::string(65, 'y')) == "\"" + std::string(64, 'y') + "...\"");
  CHECK(quoted("abcd", 2) == "\"ab...\"");
}
