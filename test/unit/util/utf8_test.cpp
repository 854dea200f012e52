// Unit tests for the UTF-8 helpers: sequence lengths at the RFC 3629 boundaries (overlong forms,
// surrogates, code points above U+10FFFF, truncated sequences) and the sanitiser's replacements.
#include <catch2/catch.hpp>

#include "util/utf8.h"

using manifold::util::sanitize_utf8;
using manifold::util::utf8_length;

TEST_CASE("utf8_length accepts well-formed sequences only", "[util]") {
  CHECK(utf8_length("a", 0) == 1);
  CHECK(utf8_length("\xc3\xa9", 0) == 2);
  CHECK(utf8_length("\xe2\x82\xac", 0) == 3);
  CHECK(utf8_length("\xf0\x9f\x98\x80", 0) == 4);
  CHECK(utf8_length("\xc0\xaf", 0) == 0);          // overlong '/'
  CHECK(utf8_length("\xe0\x80\xaf", 0) == 0);      // overlong, 3 bytes
  CHECK(utf8_length("\xed\xa0\x80", 0) == 0);      // surrogate U+D800
  CHECK(utf8_length("\xf4\x90\x80\x80", 0) == 0);  // above U+10FFFF
  CHECK(utf8_length("\xe2\x82", 0) == 0);          // truncated
  CHECK(utf8_length("\x80", 0) == 0);              // lone continuation byte
}

TEST_CASE("sanitize_utf8 replaces each bad byte with U+FFFD and keeps the rest", "[util]") {
  CHECK(sanitize_utf8("plain") == "plain");
  CHECK(sanitize_utf8("") == "");
  CHECK(sanitize_utf8("a\xff"
                      "b") ==
        "a\xEF\xBF\xBD"
        "b");
  CHECK(sanitize_utf8("\xe2\x82") == "\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(sanitize_utf8("\xc3\xa9\xf0\x9f\x98\x80") == "\xc3\xa9\xf0\x9f\x98\x80");
}
