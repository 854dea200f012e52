// The lexical helpers of the selection parsers (selection_syntax.h) and the public syntax checks of
// selection.h: interface names, Go-compatible IP, CIDR and hardware-address parsing.
#include "k8s/selection_syntax.h"

#include <arpa/inet.h>

#include <algorithm>

#include "cni/error.h"
#include "util/quote.h"
#include "util/utf8.h"

namespace manifold::k8s::selection_syntax {

[[noreturn]] void fail(const std::string& msg) {
  throw cni::CniError(cni::ErrorCode::InvalidConfig, util::sanitize_utf8(msg));
}

namespace {

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

}  // namespace

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_ascii_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ascii_space(s.back())) s.remove_suffix(1);
  return s;
}

/// Shortens untrusted text quoted in an error message (never inside a UTF-8 sequence).
std::string shown(std::string_view s) {
  if (s.size() <= kMaxQuotedLength) return std::string(s);
  std::size_t cut = kMaxQuotedLength;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return std::string(s.substr(0, cut)) + "...";
}

/// Quotes like Go's %q for the texts we quote (ASCII escapes; UTF-8 kept).
std::string go_quote(std::string_view raw) {
  std::size_t cut = std::min(raw.size(), kMaxQuotedLength);
  while (cut < raw.size() && cut > 0 && (static_cast<unsigned char>(raw[cut]) & 0xC0) == 0x80) --cut;
  std::string_view s = raw.substr(0, cut);
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : s) {
    if (const char* escape = util::short_escape(c)) {
      out += escape;
    } else if (c == '\a' || c == '\v') {  // Go's %q has these two short escapes, JSON has not
      out += c == '\a' ? "\\a" : "\\v";
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
  if (raw.size() > kMaxQuotedLength) out += "...";
  return out;
}

namespace {

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

}  // namespace

/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$` (DNS-1123 label characters, no length bound).
bool matches_dns_label(std::string_view s) {
  if (s.empty() || !is_lower_alnum(s.front()) || !is_lower_alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return is_lower_alnum(c) || c == '-'; });
}

/// A DNS-1123 subdomain: labels joined by '.', at most 253 characters.
bool is_dns_subdomain(std::string_view s) {
  if (s.empty() || s.size() > kMaxNameLength) return false;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = s.find('.', start);
    if (!matches_dns_label(s.substr(start, dot == std::string_view::npos ? dot : dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// Parses an IP like Go's net.ParseIP; returns the family (AF_INET/AF_INET6) or 0.
int ip_family(std::string_view text) {
  if (text.empty() || text.size() > 64 || text.find('\0') != std::string_view::npos) return 0;
  std::string z(text);
  unsigned char buf[16];
  if (inet_pton(AF_INET, z.c_str(), buf) == 1) return AF_INET;
  if (inet_pton(AF_INET6, z.c_str(), buf) == 1) return AF_INET6;
  return 0;
}

}  // namespace manifold::k8s::selection_syntax

namespace manifold::k8s {

using selection_syntax::hex_value;
using selection_syntax::ip_family;

bool is_valid_ip(std::string_view text) { return ip_family(text) != 0; }

bool is_valid_cidr(std::string_view text) {
  std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) return false;
  int family = ip_family(text.substr(0, slash));
  std::string_view mask = text.substr(slash + 1);
  if (family == 0 || mask.empty() || mask.size() > 3) return false;
  int bits = 0;
  for (char c : mask) {
    if (c < '0' || c > '9') return false;
    bits = bits * 10 + (c - '0');
  }
  return bits <= (family == AF_INET ? 32 : 128);
}

bool is_valid_hardware_address(std::string_view s) {
  if (s.size() < 14) return false;
  auto octets_ok = [](std::size_t n) { return n == 6 || n == 8 || n == 20; };
  if (s[2] == ':' || s[2] == '-') {
    if ((s.size() + 1) % 3 != 0 || !octets_ok((s.size() + 1) / 3)) return false;
    const char sep = s[2];
    for (std::size_t x = 0; x < s.size(); x += 3) {
      if (hex_value(s[x]) < 0 || hex_value(s[x + 1]) < 0) return false;
      if (x + 2 < s.size() && s[x + 2] != sep) return false;
    }
    return true;
  }
  if (s[4] == '.') {
    if ((s.size() + 1) % 5 != 0 || !octets_ok(2 * (s.size() + 1) / 5)) return false;
    for (std::size_t x = 0; x < s.size(); x += 5) {
      for (std::size_t k = 0; k < 4; ++k) {
        if (hex_value(s[x + k]) < 0) return false;
      }
      if (x + 4 < s.size() && s[x + 4] != '.') return false;
    }
    return true;
  }
  return false;
}

}  // namespace manifold::k8s
