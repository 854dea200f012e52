// Implementation of the IP address and prefix values on top of inet_pton/inet_ntop, with the bit
// arithmetic for masking and containment, and the MAC text check. Input is copied into a bounded,
// NUL-terminated buffer before it reaches libc, so hostile text (embedded NULs, huge strings) is
// rejected here rather than silently truncated.
#include "util/ip.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

namespace manifold::util {

namespace {

// Longest textual IPv6 address, e.g. "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255".
constexpr std::size_t kMaxIpText = INET6_ADDRSTRLEN - 1;

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Parses a prefix length: 1–3 decimal digits, no sign, no leading zero (except "0").
std::optional<int> parse_prefix_len(std::string_view s) {
  if (s.empty() || s.size() > 3) return std::nullopt;
  if (s.size() > 1 && s[0] == '0') return std::nullopt;
  int value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

}  // namespace

std::string IpAddress::str() const {
  char buf[INET6_ADDRSTRLEN] = {};
  const int af = family == 4 ? AF_INET : AF_INET6;
  if (inet_ntop(af, bytes.data(), buf, sizeof(buf)) == nullptr) return {};
  return buf;
}

bool IpAddress::is_unspecified() const {
  return std::all_of(bytes.begin(), bytes.begin() + static_cast<long>(size()), [](std::uint8_t b) { return b == 0; });
}

bool IpAddress::is_ipv6_link_local() const { return family == 6 && bytes[0] == 0xfe && (bytes[1] & 0xc0) == 0x80; }

std::string IpPrefix::str() const { return address.str() + "/" + std::to_string(prefix_len); }

std::string IpPrefix::network_str() const { return masked().str(); }

IpPrefix IpPrefix::masked() const {
  IpPrefix out = *this;
  const int total_bits = static_cast<int>(out.address.bytes.size()) * 8;
  const int keep = std::min(std::max(prefix_len, 0), address.bits());
  for (int bit = keep; bit < total_bits; ++bit)
    out.address.bytes[static_cast<std::size_t>(bit / 8)] &= static_cast<std::uint8_t>(~(0x80u >> (bit % 8)));
  return out;
}

bool IpPrefix::contains(const IpPrefix& other) const {
  if (other.address.family != address.family || other.prefix_len < prefix_len) return false;
  const IpPrefix shortened{other.address, prefix_len};
  return shortened.masked().address == masked().address;
}

std::optional<IpAddress> parse_ip(std::string_view text) {
  if (text.empty() || text.size() > kMaxIpText) return std::nullopt;
  if (text.find('\0') != std::string_view::npos) return std::nullopt;
  char buf[INET6_ADDRSTRLEN] = {};
  std::memcpy(buf, text.data(), text.size());
  IpAddress ip;
  if (text.find(':') == std::string_view::npos) {
    ip.family = 4;
    if (inet_pton(AF_INET, buf, ip.bytes.data()) != 1) return std::nullopt;
  } else {
    ip.family = 6;
    if (inet_pton(AF_INET6, buf, ip.bytes.data()) != 1) return std::nullopt;
  }
  return ip;
}

std::optional<IpPrefix> parse_cidr(std::string_view text) {
  const auto slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto ip = parse_ip(text.substr(0, slash));
  if (!ip) return std::nullopt;
  auto len = parse_prefix_len(text.substr(slash + 1));
  if (!len || *len > static_cast<int>(ip->size()) * 8) return std::nullopt;
  return IpPrefix{*ip, *len};
}

std::optional<IpPrefix> parse_ip_or_cidr(std::string_view text) {
  if (text.find('/') != std::string_view::npos) return parse_cidr(text);
  const std::optional<IpAddress> ip = parse_ip(text);
  if (!ip) return std::nullopt;
  return IpPrefix::host(*ip);
}

bool is_default_route_dst(std::string_view text) {
  auto prefix = parse_cidr(text);
  return prefix && prefix->prefix_len == 0 && prefix->address.is_unspecified();
}

bool valid_mac(std::string_view s) {
  // Same grammar as Go's net.ParseMAC.
  if (s.size() < 14) return false;
  std::size_t groups = 0;
  std::size_t group_len = 0;
  char sep = 0;
  if (s[2] == ':' || s[2] == '-') {
    if ((s.size() + 1) % 3 != 0) return false;
    groups = (s.size() + 1) / 3;
    group_len = 2;
    sep = s[2];
  } else if (s[4] == '.') {
    if ((s.size() + 1) % 5 != 0) return false;
    groups = (s.size() + 1) / 5;
    group_len = 4;
    sep = '.';
  } else {
    return false;
  }
  const std::size_t bytes = groups * group_len / 2;
  if (bytes != 6 && bytes != 8 && bytes != 20) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const bool at_sep = (i + 1) % (group_len + 1) == 0;
    if (at_sep ? s[i] != sep : !is_hex(s[i])) return false;
  }
  return true;
}

}  // namespace manifold::util
