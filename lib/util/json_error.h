// The one wording of a JSON parse failure for people: nlohmann's exception texts carry the
// library's tag ("[json.exception.parse_error.101]") and its parser's vocabulary, and they reach
// events on pods, CNI errors and logs. This says where the text broke and what was there instead.
#pragma once

#include <string>

#include "util/json.h"

namespace manifold::util {

/// What is wrong with JSON text that nlohmann refused, in a reader's terms, without the library's
/// tag: "not valid JSON at line 1, column 3: invalid literal near 'bl'" for a syntax error;
/// "not valid JSON: the number 1e999 is out of range" for a number beyond a double; otherwise the
/// library's own sentence without its tag.
std::string describe_json_error(const Json::exception& e);

}  // namespace manifold::util
