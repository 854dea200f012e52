// Go-compatible renderings for the network-status annotation, so it is byte-identical to what
// Multus (a Go program) writes: a writer reproducing encoding/json's MarshalIndent output (HTML-safe
// string escaping, invalid UTF-8 replaced, Go's float format, 4-space indent) and net.IP.String()'s
// address forms.
#include "k8s/go_json.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "cni/error.h"
#include "util/quote.h"
#include "util/utf8.h"

namespace manifold::k8s {
namespace {

constexpr const char* kIndent = "    ";
constexpr int kMaxRenderDepth = 64;

using util::utf8_length;

void write_go_string(std::string& out, std::string_view s) {
  static const char* hex = "0123456789abcdef";
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (const char* escape = util::short_escape(c)) {
        out += escape;
      } else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 0xF];
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    const std::size_t n = utf8_length(s, i);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    // U+2028 and U+2029 are E2 80 A8 / E2 80 A9.
    if (n == 3 && c == 0xE2 && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
        (static_cast<unsigned char>(s[i + 2]) == 0xA8 || static_cast<unsigned char>(s[i + 2]) == 0xA9)) {
      out += static_cast<unsigned char>(s[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029";
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  out += '"';
}

void write_go_float(std::string& out, double d) {
  if (!std::isfinite(d)) {  // Go refuses to marshal these; nlohmann writes null, so do we.
    out += "null";
    return;
  }
  char buf[64];
  const double abs = std::fabs(d);
  const bool exp = abs != 0 && (abs < 1e-6 || abs >= 1e21);
  auto res = std::to_chars(buf, buf + sizeof buf, d, exp ? std::chars_format::scientific : std::chars_format::fixed);
  std::string text(buf, res.ptr);
  if (exp) {  // Go writes e-7, not e-07.
    const std::size_t n = text.size();
    if (n >= 4 && text[n - 4] == 'e' && text[n - 3] == '-' && text[n - 2] == '0') text.erase(n - 2, 1);
  }
  out += text;
}

void newline(std::string& out, int depth) {
  out += '\n';
  for (int i = 0; i < depth; ++i) out += kIndent;
}

void write_go_value(std::string& out, const Json& v, int depth);

// An object or an array as Go's MarshalIndent writes it: each member on its own line, empty ones as
// {} and [].
void write_go_container(std::string& out, const Json& v, int depth) {
  const bool object = v.is_object();
  if (v.empty()) {
    out += object ? "{}" : "[]";
    return;
  }
  out += object ? '{' : '[';
  bool first = true;
  for (const auto& member : v.items()) {
    if (!first) out += ',';
    first = false;
    newline(out, depth + 1);
    if (object) {
      write_go_string(out, member.key());
      out += ": ";
    }
    write_go_value(out, member.value(), depth + 1);
  }
  newline(out, depth);
  out += object ? '}' : ']';
}

void write_go_value(std::string& out, const Json& v, int depth) {
  if (depth > kMaxRenderDepth) {
    throw cni::CniError(cni::ErrorCode::Internal, "network-status: value nested too deeply to render");
  }
  switch (v.type()) {
    case Json::value_t::object:
    case Json::value_t::array:
      write_go_container(out, v, depth);
      return;
    case Json::value_t::string:
      write_go_string(out, v.get_ref<const std::string&>());
      return;
    case Json::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      return;
    case Json::value_t::number_integer:
      out += std::to_string(v.get<int64_t>());
      return;
    case Json::value_t::number_unsigned:
      out += std::to_string(v.get<uint64_t>());
      return;
    case Json::value_t::number_float:
      write_go_float(out, v.get<double>());
      return;
    default:
      out += "null";
      return;  // null, discarded, binary
  }
}

}  // namespace

std::string go_marshal_indent(const Json& value) {
  std::string out;
  write_go_value(out, value, 0);
  return out;
}

std::string go_ip_string(const std::string& text) {
  const std::string bare = text.substr(0, text.find('/'));
  if (bare.empty() || bare.size() > 64 || bare.find('\0') != std::string::npos) return bare;
  std::array<unsigned char, 16> b{};
  char buf[INET6_ADDRSTRLEN];
  if (inet_pton(AF_INET, bare.c_str(), b.data()) == 1) {
    return inet_ntop(AF_INET, b.data(), buf, sizeof buf) ? std::string(buf) : bare;
  }
  if (inet_pton(AF_INET6, bare.c_str(), b.data()) != 1) return bare;
  const bool v4_mapped =
      std::all_of(b.begin(), b.begin() + 10, [](unsigned char c) { return c == 0; }) && b[10] == 0xff && b[11] == 0xff;
  if (v4_mapped) return inet_ntop(AF_INET, b.data() + 12, buf, sizeof buf) ? std::string(buf) : bare;
  // RFC 5952: the longest run (first on ties) of at least two zero groups becomes "::".
  std::array<unsigned, 8> group{};
  for (int g = 0; g < 8; ++g) group[g] = (b[2 * g] << 8) | b[2 * g + 1];
  int best_start = -1, best_len = 0;
  for (int g = 0; g < 8;) {
    if (group[g] != 0) {
      ++g;
      continue;
    }
    int end = g;
    while (end < 8 && group[end] == 0) ++end;
    if (end - g > best_len) {
      best_start = g;
      best_len = end - g;
    }
    g = end;
  }
  if (best_len < 2) best_start = -1;
  std::string out;
  for (int g = 0; g < 8; ++g) {
    if (g == best_start) {
      out += "::";
      g += best_len - 1;
      continue;
    }
    if (!out.empty() && out.back() != ':') out += ':';
    char hex[8];
    std::snprintf(hex, sizeof hex, "%x", group[g]);
    out += hex;
  }
  return out;
}

}  // namespace manifold::k8s
