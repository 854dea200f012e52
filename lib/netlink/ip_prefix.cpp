// Implementation of the IpPrefix value: strict parsing through inet_pton, canonical printing
// through inet_ntop, and the bit arithmetic for masking and containment.
#include "netlink/ip_prefix.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cstring>

namespace manifold::netlink {
namespace {

// Longest text we accept: a full IPv6 address with an embedded IPv4 tail plus "/128".
constexpr std::size_t kMaxText = 64;

bool allowed_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '.' ||
         c == ':';
}

// Parses 1-3 decimal digits without sign or superfluous leading zero.
std::optional<int> parse_length(std::string_view text) {
  if (text.empty() || text.size() > 3) return std::nullopt;
  if (text.size() > 1 && text[0] == '0') return std::nullopt;
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

}  // namespace

std::size_t IpPrefix::address_size() const noexcept { return family == AF_INET ? 4 : 16; }

int IpPrefix::max_length() const noexcept { return family == AF_INET ? 32 : 128; }

std::string IpPrefix::address() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (!is_ip_family(family) || inet_ntop(family, bytes.data(), buf, sizeof buf) == nullptr) {
    return "<invalid>";
  }
  return buf;
}

std::string IpPrefix::to_string() const { return address() + "/" + std::to_string(length); }

IpPrefix IpPrefix::masked() const {
  IpPrefix out = *this;
  const std::size_t n = address_size();
  for (std::size_t i = 0; i < n; ++i) {
    const int bit_start = static_cast<int>(i) * 8;
    if (bit_start >= length) {
      out.bytes[i] = 0;
    } else if (bit_start + 8 > length) {
      const int keep = length - bit_start;
      out.bytes[i] = static_cast<std::uint8_t>(out.bytes[i] & (0xFF << (8 - keep)));
    }
  }
  for (std::size_t i = n; i < out.bytes.size(); ++i) out.bytes[i] = 0;
  return out;
}

bool IpPrefix::is_masked() const { return masked() == *this; }

bool IpPrefix::contains(const IpPrefix& other) const {
  if (other.family != family || other.length < length) return false;
  IpPrefix shortened = other;
  shortened.length = length;
  return shortened.masked().bytes == masked().bytes;
}

std::optional<IpPrefix> parse_ip(std::string_view text) {
  if (text.empty() || text.size() > kMaxText) return std::nullopt;
  for (char c : text) {
    if (!allowed_char(c)) return std::nullopt;
  }
  const std::string copy(text);
  IpPrefix out;
  const int family = copy.find(':') != std::string::npos ? AF_INET6 : AF_INET;
  if (inet_pton(family, copy.c_str(), out.bytes.data()) != 1) return std::nullopt;
  out.family = family;
  out.length = out.max_length();
  return out;
}

std::optional<IpPrefix> parse_cidr(std::string_view text) {
  if (text.size() > kMaxText) return std::nullopt;
  const std::size_t slash = text.find('/');
  std::optional<IpPrefix> out = parse_ip(text.substr(0, slash));
  if (!out || slash == std::string_view::npos) return out;
  const std::optional<int> length = parse_length(text.substr(slash + 1));
  if (!length || *length > out->max_length()) return std::nullopt;
  out->length = *length;
  return out;
}

std::optional<IpPrefix> prefix_from_bytes(int family, const void* data, std::size_t size,
                                          int length) {
  if (!is_ip_family(family)) return std::nullopt;
  IpPrefix out;
  out.family = family;
  if (length < 0 || length > out.max_length()) return std::nullopt;
  // A zero-length address is how libnl represents "default" (no RTA_DST attribute).
  if (size != 0 && size != out.address_size()) return std::nullopt;
  if (size != 0 && data == nullptr) return std::nullopt;
  if (size != 0) std::memcpy(out.bytes.data(), data, size);
  out.length = length;
  return out;
}

std::string family_name(int family) {
  if (family == AF_INET) return "IPv4";
  if (family == AF_INET6) return "IPv6";
  return "family " + std::to_string(family);
}

bool is_ip_family(int family) noexcept { return family == AF_INET || family == AF_INET6; }

}  // namespace manifold::netlink
