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

namespace {

// A SAX handler that keeps nothing: the type of the top value and the nesting depth, refusing a
// value deeper than the bound exactly where parse_json_bounded's callback would (containers open
// around a value = its depth).
class TypeOnly {
 public:
  explicit TypeOnly(int max_depth) : max_depth_(max_depth) {}
  Json::value_t type() const { return type_; }
  bool null() { return value(Json::value_t::null); }
  bool boolean(bool) { return value(Json::value_t::boolean); }
  bool number_integer(Json::number_integer_t) { return value(Json::value_t::number_integer); }
  bool number_unsigned(Json::number_unsigned_t) { return value(Json::value_t::number_unsigned); }
  bool number_float(Json::number_float_t, const std::string&) { return value(Json::value_t::number_float); }
  bool string(std::string&) { return value(Json::value_t::string); }
  bool binary(Json::binary_t&) { return value(Json::value_t::binary); }
  bool start_object(std::size_t) { return open(Json::value_t::object); }
  bool key(std::string&) { return depth_ <= max_depth_; }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(Json::value_t::array); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

 private:
  bool value(Json::value_t t) {
    if (depth_ == 0) type_ = t;
    return depth_ <= max_depth_;
  }
  bool open(Json::value_t t) {
    if (!value(t)) return false;
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    return true;
  }

  int max_depth_;
  int depth_ = 0;
  Json::value_t type_ = Json::value_t::discarded;
};

}  // namespace

Json::value_t json_type_bounded(const std::string& text, int max_depth) {
  if (text.find('\0') != std::string::npos) return Json::value_t::discarded;
  TypeOnly sax(max_depth);
  if (!Json::sax_parse(text, &sax)) return Json::value_t::discarded;
  return sax.type();
}

}  // namespace manifold::util
