// IP addresses and prefixes as plain values. Every address that enters the netlink layer (route
// destinations and gateways, rule sources, interface addresses) is parsed here first, strictly, and
// re-printed in one canonical form (inet_ntop: dotted quad, lower-case compressed IPv6), so that a
// route read back from the kernel compares equal, as text, to the route we asked for. Hostile input
// (garbage, zone IDs, out-of-range prefix lengths, overlong strings) is rejected here, before
// anything reaches the kernel.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace manifold::netlink {

/// An IPv4 or IPv6 address with a prefix length ("192.0.2.5/24", "2001:db8::/64").
struct IpPrefix {
  int family = 0;                        ///< AF_INET or AF_INET6
  std::array<std::uint8_t, 16> bytes{};  ///< address in network byte order (IPv4 uses 4 bytes)
  int length = 0;                        ///< prefix length, 0..32 or 0..128

  /// Number of address bytes for the family (4 or 16).
  std::size_t address_size() const noexcept;
  /// Largest prefix length for the family (32 or 128).
  int max_length() const noexcept;
  /// The address alone, canonical ("2001:db8::1").
  std::string address() const;
  /// Address and prefix length ("2001:db8::1/64").
  std::string to_string() const;
  /// The same prefix with every host bit cleared ("192.0.2.5/24" → "192.0.2.0/24").
  IpPrefix masked() const;
  /// True when no host bit is set (the value names a network, as a route destination must).
  bool is_masked() const;
  /// True when `other` (same family, at least as long) lies inside this prefix.
  bool contains(const IpPrefix& other) const;

  /// Field-wise equality.
  friend bool operator==(const IpPrefix&, const IpPrefix&) = default;
};

/// Parses a bare IPv4/IPv6 address; the prefix length is the full length. nullopt on any error.
std::optional<IpPrefix> parse_ip(std::string_view text);

/// Parses "address/length", or a bare address meaning a host prefix. nullopt on any error.
std::optional<IpPrefix> parse_cidr(std::string_view text);

/// Builds a value from raw bytes as libnl or the kernel report them; nullopt when the family or the
/// sizes do not fit.
std::optional<IpPrefix> prefix_from_bytes(int family, const void* data, std::size_t size,
                                          int length);

/// "IPv4", "IPv6" or "family <n>", for messages.
std::string family_name(int family);

/// True for AF_INET and AF_INET6.
bool is_ip_family(int family) noexcept;

}  // namespace manifold::netlink
