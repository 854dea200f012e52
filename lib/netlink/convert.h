// Internal helpers shared by route.cpp, rule.cpp and address.cpp: converting between util::IpPrefix
// values and libnl's nl_addr objects, and reading the fields of the canonical JSON forms strictly
// (so a corrupt or hostile cache file is rejected with a clear CniError(Decoding) instead of
// reaching the kernel).
// Not for use outside lib/netlink.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "netlink/handles.h"
#include "util/ip.h"
#include "util/json.h"

namespace manifold::netlink::detail {

/// A new nl_addr holding `prefix` (address and prefix length). Throws CniError(Internal) on OOM.
NlAddrHandle to_nl_addr(const util::IpPrefix& prefix);

/// A new nl_addr holding the bare address `ip` (its host prefix).
NlAddrHandle to_nl_addr(const util::IpAddress& ip);

/// A new zero-length nl_addr of `family`: how libnl spells "default" (no RTA_DST attribute).
NlAddrHandle default_nl_addr(int family);

/// Builds a prefix from raw bytes as libnl or the kernel report them: `family` AF_INET/AF_INET6,
/// `size` 4/16 (or 0: the all-zero address, how libnl represents "default"), `length` in range for
/// the family. nullopt when the family or the sizes do not fit.
std::optional<util::IpPrefix> prefix_from_bytes(int family, const void* data, std::size_t size, int length);

/// The value of a libnl address of an IP family; a zero-length address gives the all-zero address.
/// nullopt for other families or malformed sizes.
std::optional<util::IpPrefix> from_nl_addr(nl_addr* addr);

/// 4 for AF_INET, 6 for AF_INET6 (the JSON spelling of a family).
int family_to_json(int family);

/// Reads `json[key]` as an integer in [lo, hi]; `fallback` when absent. Throws CniError(Decoding)
/// naming `what` and the key when the value has the wrong type or range.
int json_int(const Json& json, std::string_view what, const char* key, long long lo, long long hi,
             std::optional<int> fallback);

/// Reads `json[key]` as a string of at most `max_size` bytes; "" when absent. Throws
/// CniError(Decoding).
std::string json_string(const Json& json, std::string_view what, const char* key, std::size_t max_size);

/// Reads `json[key]` as an IP prefix ("address/length", or a bare address meaning its host
/// prefix); nullopt when absent or "". Throws CniError(Decoding) for anything else.
std::optional<util::IpPrefix> json_prefix(const Json& json, std::string_view what, const char* key);

/// Reads `json[key]` as a bare IP address; nullopt when absent or "". Throws CniError(Decoding).
std::optional<util::IpAddress> json_address(const Json& json, std::string_view what, const char* key);

/// Reads "family" (4 or 6) and returns AF_INET / AF_INET6. Throws CniError(Decoding).
int json_family(const Json& json, std::string_view what);

}  // namespace manifold::netlink::detail
