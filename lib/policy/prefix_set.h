// Prefix arithmetic for ipBlock peers: a CIDR without its `except` prefixes, as the list of prefixes
// that cover exactly the addresses left (10.0.0.0/8 except 10.1.2.0/24 is 16 prefixes, one per bit
// between the two lengths). Rules then match with plain `-s`/`-d` prefixes, so an `except` narrows
// only its own rule and never denies what another rule or policy allows. Pure functions.
#pragma once

#include <vector>

#include "util/ip.h"

namespace manifold::policy {

/// The prefixes covering `cidr` minus every prefix of `except` (same family as `cidr`; others are
/// ignored), masked, in address order. Empty when the excepts cover all of `cidr`.
std::vector<util::IpPrefix> subtract_prefixes(const util::IpPrefix& cidr, const std::vector<util::IpPrefix>& except);

}  // namespace manifold::policy
