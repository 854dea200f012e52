// Internal helpers shared by route.cpp and rule.cpp: converting between IpPrefix values and libnl's
// nl_addr objects, and reading the fields of the canonical JSON forms strictly (so a corrupt or
// hostile cache file is rejected with a clear CniError(Decoding) instead of reaching the kernel).
// Not for use outside lib/netlink.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "netlink/handles.h"
#include "netlink/ip_prefix.h"
#include "util/json.h"

namespace manifold::netlink::detail {

/// A new nl_addr holding `prefix` (address and prefix length). Throws CniError(Internal) on OOM.
NlAddrHandle to_nl_addr(const IpPrefix& prefix);

/// A new zero-length nl_addr of `family`: how libnl spells "default" (no RTA_DST attribute).
NlAddrHandle default_nl_addr(int family);

/// The value of a libnl address of an IP family; a zero-length address gives the all-zero address.
/// nullopt for other families or malformed sizes.
std::optional<IpPrefix> from_nl_addr(nl_addr* addr);

/// Canonical text of a parsed address or prefix, or "" for nullopt.
std::string prefix_text(const std::optional<IpPrefix>& prefix);

/// 4 for AF_INET, 6 for AF_INET6 (the JSON spelling of a family).
int family_to_json(int family);

/// Reads `json[key]` as an integer in [lo, hi]; `fallback` when absent. Throws CniError(Decoding)
/// naming `what` and the key when the value has the wrong type or range.
int json_int(const Json& json, std::string_view what, const char* key, long long lo, long long hi,
             std::optional<int> fallback);

/// Reads `json[key]` as a string of at most `max_size` bytes; "" when absent. Throws
/// CniError(Decoding).
std::string json_string(const Json& json, std::string_view what, const char* key,
                        std::size_t max_size);

/// Reads "family" (4 or 6) and returns AF_INET / AF_INET6. Throws CniError(Decoding).
int json_family(const Json& json, std::string_view what);

}  // namespace manifold::netlink::detail
