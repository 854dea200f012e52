// Reading the parts of a policy spec below the rule lists: one ingress or egress rule, its peers
// (ipBlock, pod and namespace selectors) and its ports — strictly, each problem a PolicyError
// naming its JSON path. Internal to the policy module (policy.cpp reads the object around them).
#pragma once

#include <string>

#include "policy/policy.h"
#include "util/json.h"

namespace manifold::policy {

/// Reads one element of `spec.ingress` (peers under "from") or `spec.egress` (under "to") at path
/// `where`. Throws PolicyError.
PolicyRule read_rule(const Json& rule, const std::string& where, const char* peers_key);

/// Reads an `ipBlock` object at path `where`. Throws PolicyError.
IpBlock read_ip_block(const Json& block, const std::string& where);

/// Reads one element of `ports` at path `where`. Throws PolicyError.
PolicyPort read_port(const Json& port, const std::string& where);

}  // namespace manifold::policy
