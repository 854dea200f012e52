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

const char* short_escape(unsigned char c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      return nullptr;
  }
}

std::string hex_lower(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

std::string quote_bytes(std::string_view text, std::size_t max) {
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (char c : text.substr(0, max)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '"' && c != '\\') {
      out += c;
    } else {
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 0xf];
    }
  }
  if (text.size() > max) out += "...";
  return out + "\"";
}

std::string percent_encode(std::string_view text, std::string_view keep) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum || keep.find(c) != std::string_view::npos) {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 0xF];
    }
  }
  return out;
}

std::string printable_json(const Json& value, std::size_t max) {
  if (value.is_string()) return "\"" + printable(value.get_ref<const std::string&>(), max) + "\"";
  return printable(value.dump(-1, ' ', false, Json::error_handler_t::replace), max);
}

}  // namespace manifold::util
