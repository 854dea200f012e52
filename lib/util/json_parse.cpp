// Bounded, exception-free JSON parsing (see json_parse.h).
#include "util/json_parse.h"

namespace manifold::util {

Json parse_json_bounded(const std::string& text, int max_depth) {
  // nlohmann's parser ends the document at a NUL byte and ignores the rest: refuse it instead.
  if (text.find('\0') != std::string::npos) return Json(Json::value_t::discarded);
  struct TooDeep {};
  try {
    return Json::parse(
        text,
        [max_depth](int depth, Json::parse_event_t, Json&) {
          if (depth > max_depth) throw TooDeep{};
          return true;
        },
        false);
  } catch (const TooDeep&) {
    return Json(Json::value_t::discarded);
  }
}

}  // namespace manifold::util
