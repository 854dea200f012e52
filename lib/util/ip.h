// IP address, CIDR and MAC text helpers. CNI results, pod annotations and NAD configs carry
// addresses as text; these pure functions parse them strictly (inet_pton, no zones, no leading
// zeros, no stray bytes), render them canonically (inet_ntop) and answer the few questions the
// rest of manifold asks about them (is this a default route? is this a MAC?). No side effects.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace manifold::util {

/// An IPv4 or IPv6 address. IPv4 addresses use the first 4 bytes; the rest stay zero.
struct IpAddress {
  int family = 4;                        ///< 4 or 6
  std::array<std::uint8_t, 16> bytes{};  ///< network byte order

  /// Canonical text: "10.1.2.3", "2001:db8::1".
  std::string str() const;
  /// Number of meaningful bytes: 4 for IPv4, 16 for IPv6.
  std::size_t size() const { return family == 4 ? 4 : 16; }
  /// True for 0.0.0.0 and ::.
  bool is_unspecified() const;

  bool operator==(const IpAddress&) const = default;
};

/// An address with a prefix length, host bits kept ("10.1.2.3/24" stays "10.1.2.3/24").
struct IpPrefix {
  IpAddress address;
  int prefix_len = 0;  ///< 0..32 for IPv4, 0..128 for IPv6

  /// Canonical text with the host bits: "10.1.2.3/24".
  std::string str() const;
  /// Canonical text of the network (host bits cleared): "10.1.2.0/24".
  std::string network_str() const;

  bool operator==(const IpPrefix&) const = default;
};

/// Parses a bare IPv4 or IPv6 address. Rejects empty or oversized text, embedded NULs,
/// zone suffixes ("%eth0"), prefixes and anything inet_pton refuses.
std::optional<IpAddress> parse_ip(std::string_view text);

/// Parses "address/length": length ≤ 32 (IPv4) or ≤ 128 (IPv6), decimal, no leading zeros.
std::optional<IpPrefix> parse_cidr(std::string_view text);

/// True if `text` is a default-route destination: an all-zero address with prefix length 0
/// ("0.0.0.0/0", "::/0", "::0/0").
bool is_default_route_dst(std::string_view text);

/// True if `text` is a hardware address in a form Go's net.ParseMAC accepts: 6, 8 or 20 bytes
/// (EUI-48, EUI-64, 20-byte InfiniBand) as hex pairs separated by ':' or '-', or hex quads
/// separated by '.'.
bool valid_mac(std::string_view text);

}  // namespace manifold::util
