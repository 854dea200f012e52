// Implementation of describe_json_error: rewords nlohmann's parse and range error texts.
#include "util/json_error.h"

#include <string_view>

namespace manifold::util {

namespace {

/// `text` after `marker`, or "" when `marker` is not in it.
std::string_view after(std::string_view text, std::string_view marker) {
  const auto at = text.find(marker);
  return at == std::string_view::npos ? std::string_view() : text.substr(at + marker.size());
}

/// At most 40 bytes of a token the parser quotes (it can be a whole long string literal).
std::string shortened(std::string_view token) {
  return token.size() <= 40 ? std::string(token) : std::string(token.substr(0, 40)) + "…";
}

/// "invalid literal; last read: 'bl'" → "invalid literal near 'bl'"; "unexpected end of input;
/// expected ']'" stays as it is.
std::string reword_detail(std::string_view detail) {
  const auto at = detail.find("; last read: '");
  if (at == std::string_view::npos) return std::string(detail);
  std::string_view token = detail.substr(at + 14);
  std::string_view rest;
  if (const auto close = token.find("'"); close != std::string_view::npos) {
    rest = token.substr(close + 1);
    token = token.substr(0, close);
  }
  std::string out(detail.substr(0, at));
  if (!token.empty()) out += " near '" + shortened(token) + "'";
  return out + std::string(rest);
}

}  // namespace

std::string describe_json_error(const Json::exception& e) {
  std::string_view what = e.what();
  if (const auto tag_end = what.find("] "); what.starts_with("[json.exception.") && tag_end != std::string_view::npos)
    what.remove_prefix(tag_end + 2);
  if (dynamic_cast<const Json::parse_error*>(&e) != nullptr) {
    std::string_view where = after(what, "parse error ");
    std::string_view detail;
    if (const auto colon = where.find(": "); colon != std::string_view::npos) {
      detail = where.substr(colon + 2);
      where = where.substr(0, colon);
    }
    if (std::string_view d = after(detail, " - "); !d.empty()) detail = d;
    std::string out = "not valid JSON";
    if (!where.empty()) out += " " + std::string(where);
    return detail.empty() ? out : out + ": " + reword_detail(detail);
  }
  if (dynamic_cast<const Json::out_of_range*>(&e) != nullptr && what.starts_with("number overflow parsing '")) {
    std::string_view number = after(what, "parsing '");
    return "not valid JSON: the number " + shortened(number.substr(0, number.find('\''))) + " is out of range";
  }
  return std::string(what);
}

}  // namespace manifold::util
