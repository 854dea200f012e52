// Implementation of the pure operations on the internal Result model: emptiness of DNS, merging
// several attachment results into one, and extracting default-route gateways.
#include "cni/result.h"

#include <algorithm>

#include "util/ip.h"

namespace manifold::cni {

namespace {

// Canonical text of an address for comparisons; the text itself if it does not parse.
std::string canonical_ip(const std::string& text) {
  auto ip = util::parse_ip(text);
  return ip ? ip->str() : text;
}

}  // namespace

bool Dns::empty() const { return nameservers.empty() && domain.empty() && search.empty() && options.empty(); }

Result merge_results(const std::vector<Result>& results) {
  Result merged;
  if (results.empty()) return merged;
  merged.cni_version = results.front().cni_version;
  bool have_dns = false;
  for (const Result& r : results) {
    const int offset = static_cast<int>(merged.interfaces.size());
    merged.interfaces.insert(merged.interfaces.end(), r.interfaces.begin(), r.interfaces.end());
    for (IpConfig ip : r.ips) {
      if (ip.interface) *ip.interface += offset;
      merged.ips.push_back(std::move(ip));
    }
    for (const Route& route : r.routes)
      if (std::find(merged.routes.begin(), merged.routes.end(), route) == merged.routes.end())
        merged.routes.push_back(route);
    if (!have_dns && !r.dns.empty()) {
      merged.dns = r.dns;
      have_dns = true;
    }
  }
  return merged;
}

std::vector<std::string> default_route_gateways(const Result& result) {
  std::vector<std::string> gateways;
  for (const Route& route : result.routes) {
    if (route.gw.empty() || !util::is_default_route_dst(route.dst)) continue;
    std::string gw = canonical_ip(route.gw);
    if (std::find(gateways.begin(), gateways.end(), gw) == gateways.end()) gateways.push_back(std::move(gw));
  }
  return gateways;
}

}  // namespace manifold::cni
