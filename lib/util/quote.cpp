// Implementation of the printable renderings.
#include "util/quote.h"

#include <algorithm>

namespace manifold::util {

std::string printable(std::string_view text, std::size_t max) {
  std::string out;
  out.reserve(std::min(text.size(), max) + 3);
  for (char c : text.substr(0, max)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (text.size() > max) out += "...";
  return out;
}

std::string printable_json(const Json& value, std::size_t max) {
  if (value.is_string()) return "\"" + printable(value.get_ref<const std::string&>(), max) + "\"";
  return printable(value.dump(-1, ' ', false, Json::error_handler_t::replace), max);
}

}  // namespace manifold::util
