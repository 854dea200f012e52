// IP addresses and prefixes as plain values, and the MAC text check. CNI results, pod annotations,
// NAD configs, cached state and the kernel all carry addresses; every one of them is parsed here
// once, strictly (inet_pton, no zones, no leading zeros, no stray bytes), into IpAddress / IpPrefix,
// and rendered in one canonical form (inet_ntop: dotted quad, lower-case compressed IPv6), so two
// values compare equal exactly when they name the same address. The prefix carries the bit
// arithmetic the routing code needs (masking, containment). Pure functions, no side effects.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace manifold::util {

/// An IPv4 or IPv6 address. IPv4 addresses use the first 4 bytes; the rest stay zero.
struct IpAddress {
  int family = 4;                        ///< the IP version: 4 or 6
  std::array<std::uint8_t, 16> bytes{};  ///< network byte order

  /// Canonical text: "10.1.2.3", "2001:db8::1".
  std::string str() const;
  /// Number of meaningful bytes: 4 for IPv4, 16 for IPv6.
  std::size_t size() const { return family == 4 ? 4 : 16; }
  /// Number of address bits, the longest prefix length: 32 for IPv4, 128 for IPv6.
  int bits() const { return family == 4 ? 32 : 128; }
  /// "IPv4" or "IPv6", for messages.
  std::string family_name() const { return family == 4 ? "IPv4" : "IPv6"; }
  /// True for 0.0.0.0 and ::.
  bool is_unspecified() const;
  /// True for an IPv6 link-local address (fe80::/10).
  bool is_ipv6_link_local() const;

  /// Field-wise equality.
  bool operator==(const IpAddress&) const = default;
};

/// An address with a prefix length, host bits kept ("10.1.2.3/24" stays "10.1.2.3/24").
struct IpPrefix {
  IpAddress address;   ///< the address, host bits included
  int prefix_len = 0;  ///< 0..32 for IPv4, 0..128 for IPv6

  /// The host prefix of `ip`: "192.0.2.5/32", "2001:db8::5/128".
  static IpPrefix host(const IpAddress& ip) { return IpPrefix{ip, ip.bits()}; }

  /// Canonical text with the host bits: "10.1.2.3/24".
  std::string str() const;
  /// Canonical text of the network (host bits cleared): "10.1.2.0/24".
  std::string network_str() const;
  /// The same prefix with every host bit cleared ("192.0.2.5/24" → "192.0.2.0/24").
  IpPrefix masked() const;
  /// True when no host bit is set (the value names a network, as a route destination must).
  bool is_masked() const { return masked() == *this; }
  /// True when `other` (same family, at least as long) lies inside this prefix.
  bool contains(const IpPrefix& other) const;
  /// True when `ip` (same family) lies inside this prefix.
  bool contains(const IpAddress& ip) const { return contains(host(ip)); }

  /// Field-wise equality.
  bool operator==(const IpPrefix&) const = default;
};

/// Parses a bare IPv4 or IPv6 address. Rejects empty or oversized text, embedded NULs,
/// zone suffixes ("%eth0"), prefixes and anything inet_pton refuses.
std::optional<IpAddress> parse_ip(std::string_view text);

/// Parses "address/length": length ≤ 32 (IPv4) or ≤ 128 (IPv6), decimal, no leading zeros.
std::optional<IpPrefix> parse_cidr(std::string_view text);

/// Parses "address/length" like parse_cidr, or a bare address meaning its host prefix.
std::optional<IpPrefix> parse_ip_or_cidr(std::string_view text);

/// True if `text` is a default-route destination: an all-zero address with prefix length 0
/// ("0.0.0.0/0", "::/0", "::0/0").
bool is_default_route_dst(std::string_view text);

/// True if `text` is a hardware address in a form Go's net.ParseMAC accepts: 6, 8 or 20 bytes
/// (EUI-48, EUI-64, 20-byte InfiniBand) as hex pairs separated by ':' or '-', or hex quads
/// separated by '.'.
bool valid_mac(std::string_view text);

}  // namespace manifold::util
