// Result codec: the only place that knows how CNI results look on the wire in each spec version.
// 0.1.0/0.2.0 results are {ip4, ip6, dns}; 0.3.0/0.3.1/0.4.0 results have interfaces, ips with a
// "version" field, routes and dns; 1.0.0 drops the ips' "version"; 1.1.0 adds interface mtu,
// socketPath and pciID and route mtu, advmss, priority, table and scope. Decoding validates every
// address and index and yields the internal model (cni/result.h); encoding writes the model in any
// target version with libcni's field order and omissions, so conversions match what libcni prints.
//
// Conversion rules (libcni's): going down to 0.1/0.2 keeps only the first IP of each family and the
// routes of families that still have an IP, and fails if no IP is left; going up from 0.1/0.2 gives
// a result without interfaces or interface indexes. Fields a target version does not define (the
// 1.1.0 ones below 1.1.0, interfaces and indexes below 0.3.0) are dropped. Decoding is lenient in
// the same way libcni is: the 1.1.0 fields are read wherever they appear, unknown keys are ignored.
#pragma once

#include <string_view>

#include "cni/result.h"
#include "util/json.h"

namespace manifold::cni {

/// Decodes a plugin's result JSON. The version is the result's "cniVersion"; if absent or empty,
/// `fallback_version` (the config's version) is used, as libcni does; if that is empty too, 0.1.0.
/// Addresses are canonicalised ("2001:DB8::1/64" → "2001:db8::1/64"); mtu/advmss/priority of 0
/// mean "unset" (as libcni's omitempty). Throws CniError(Decoding=6) on malformed shapes, wrong
/// types, bad IPs/CIDRs, family mismatches and out-of-range interface indexes;
/// CniError(IncompatibleVersion=1) on an unsupported version.
Result decode_result(const Json& j, std::string_view fallback_version);

/// Same, from text (invalid JSON, absurd nesting or size → Decoding error naming the problem).
Result decode_result_text(std::string_view text, std::string_view fallback_version);

/// Encodes in `target_version`'s shape with "cniVersion": target ("" means 0.1.0, as in libcni).
/// Field order: cniVersion, interfaces, ips, routes, dns; empty optional fields are omitted and
/// "dns" is always written (as `{}` when empty), like libcni's Go structs. Throws
/// CniError(IncompatibleVersion=1) when it cannot be converted (unsupported target, or a 0.1/0.2
/// target when the result has no IP address at all), CniError(Internal=100) if the model holds an
/// address or interface index that decode_result would never have produced.
Json encode_result(const Result& r, std::string_view target_version);

}  // namespace manifold::cni
