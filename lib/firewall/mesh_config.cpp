// The parts of the mesh configuration the rule builders need besides its fields: port-range
// spelling, the per-family subnet lists, interface-name validation, the families to install and the
// forced backend. Reading the configuration from JSON is the scoping module's (scoping/mesh_config).
#include "firewall/mesh_config.h"

#include <algorithm>

#include "cni/error.h"
#include "util/quote.h"
#include "util/ifname.h"

namespace manifold::firewall {

std::string PortRange::str() const {
  std::string s = std::to_string(first);
  if (is_range()) s += ":" + std::to_string(last);
  return s;
}

const std::vector<util::IpPrefix>& MeshConfig::inbound_subnets(Family family) const {
  return family == Family::V4 ? inbound_subnets_to_ignore_v4 : inbound_subnets_to_ignore_v6;
}

const std::vector<util::IpPrefix>& MeshConfig::outbound_subnets(Family family) const {
  return family == Family::V4 ? outbound_subnets_to_ignore_v4 : outbound_subnets_to_ignore_v6;
}

void validate_ifname(std::string_view ifname) {
  if (!util::is_valid_ifname(ifname))
    cni::throw_invalid_config("invalid interface name \"" + util::printable(ifname) +
                              "\" for mesh rules: must be 1-15 characters of [A-Za-z0-9_.-]");
}

std::vector<Family> mesh_families(const MeshConfig& cfg, bool has_ipv4, bool has_ipv6) {
  std::vector<Family> families;
  const bool v6 = cfg.ipv6 == Ipv6Mode::Always || (cfg.ipv6 == Ipv6Mode::Auto && has_ipv6);
  if (has_ipv4 || !v6) families.push_back(Family::V4);
  if (v6) families.push_back(Family::V6);
  return families;
}

std::optional<Backend> forced_backend(const MeshConfig& cfg) {
  switch (cfg.iptables_mode) {
    case IptablesMode::Legacy:
      return Backend::Legacy;
    case IptablesMode::Nft:
      return Backend::Nft;
    case IptablesMode::Auto:
      break;
  }
  return std::nullopt;
}

}  // namespace manifold::firewall
