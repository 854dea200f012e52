// The mesh rule builders: chain names, chain bodies in canonical iptables-save form, multiport
// splitting, and the ADD payload that reconciles the current nat table with the wanted chains
// (flush + refill bodies, keep a correct jump, replace stale or misplaced ones, drop the chain of a
// direction that was switched off). No side effects; the runner applies the text.
#include "firewall/rules.h"

#include "cni/error.h"

namespace manifold::firewall {

namespace {

constexpr std::string_view kChainPrefixIn = "CNIMESH-IN-";
constexpr std::string_view kChainPrefixOut = "CNIMESH-OUT-";

std::string chain_name(std::string_view prefix, std::string_view ifname) {
  validate_ifname(ifname);
  std::string name(prefix);
  name += ifname;
  if (name.size() > kMaxChainNameLength)
    throw cni::CniError(cni::ErrorCode::Internal, "chain name " + name + " exceeds 28 characters");
  return name;
}

// ` -m comment --comment "cnimesh/<if>/<purpose>"`: iptables-save quotes it because of the '/'.
std::string comment(std::string_view ifname, std::string_view purpose) {
  std::string c = " -m comment --comment \"cnimesh/";
  c += ifname;
  c += '/';
  c += purpose;
  c += '"';
  return c;
}

// The source/destination match for an ignored subnet; iptables-save omits a /0 match entirely.
std::string subnet_match(std::string_view flag, const util::IpPrefix& subnet) {
  if (subnet.prefix_len == 0) return {};
  return std::string(flag) + " " + subnet.network_str();
}

std::string join_rule(const std::string& match, const std::string& rest) {
  return match.empty() ? rest.substr(1) : match + rest;
}

std::vector<std::string> inbound_body(std::string_view ifname, const MeshConfig& cfg, Family family) {
  std::vector<std::string> body;
  for (const std::string& group : multiport_groups(cfg.inbound_ports_to_ignore))
    body.push_back("-p tcp -m multiport --dports " + group + comment(ifname, "ignore-inbound-ports") + " -j RETURN");
  for (const util::IpPrefix& subnet : cfg.inbound_subnets(family))
    body.push_back(join_rule(subnet_match("-s", subnet), comment(ifname, "ignore-inbound-subnet") + " -j RETURN"));
  body.push_back("-p tcp" + comment(ifname, "redirect-inbound") + " -j REDIRECT --to-ports " +
                 std::to_string(cfg.inbound_port));
  return body;
}

std::vector<std::string> outbound_body(std::string_view ifname, const MeshConfig& cfg, Family family) {
  std::vector<std::string> body;
  if (cfg.proxy_uid)
    body.push_back("-m owner --uid-owner " + std::to_string(*cfg.proxy_uid) + comment(ifname, "ignore-proxy-uid") +
                   " -j RETURN");
  if (cfg.proxy_gid)
    body.push_back("-m owner --gid-owner " + std::to_string(*cfg.proxy_gid) + comment(ifname, "ignore-proxy-gid") +
                   " -j RETURN");
  for (const std::string& group : multiport_groups(cfg.outbound_ports_to_ignore))
    body.push_back("-p tcp -m multiport --dports " + group + comment(ifname, "ignore-outbound-ports") + " -j RETURN");
  for (const util::IpPrefix& subnet : cfg.outbound_subnets(family))
    body.push_back(join_rule(subnet_match("-d", subnet), comment(ifname, "ignore-outbound-subnet") + " -j RETURN"));
  body.push_back("-p tcp" + comment(ifname, "redirect-outbound") + " -j REDIRECT --to-ports " +
                 std::to_string(cfg.outbound_port));
  return body;
}

}  // namespace

std::string inbound_chain_name(std::string_view ifname) { return chain_name(kChainPrefixIn, ifname); }

std::string outbound_chain_name(std::string_view ifname) { return chain_name(kChainPrefixOut, ifname); }

bool is_foreign_mesh_chain(std::string_view target) {
  return target.starts_with("PROXY_INIT_") || target.starts_with("ISTIO_");
}

std::vector<std::string> multiport_groups(const std::vector<PortRange>& ports) {
  std::vector<std::string> groups;
  std::string current;
  std::size_t refs = 0;
  for (const PortRange& port : ports) {
    const std::size_t cost = port.is_range() ? 2 : 1;
    if (refs + cost > kMultiportLimit) {
      groups.push_back(std::move(current));
      current.clear();
      refs = 0;
    }
    if (!current.empty()) current += ',';
    current += port.str();
    refs += cost;
  }
  if (!current.empty()) groups.push_back(std::move(current));
  return groups;
}

std::vector<MeshChain> mesh_chains(std::string_view ifname, const MeshConfig& cfg, Family family) {
  std::vector<MeshChain> chains;
  if (cfg.redirect_inbound) {
    std::string name = inbound_chain_name(ifname);
    std::string jump = "-i " + std::string(ifname) + " -p tcp" + comment(ifname, "jump-inbound") + " -j " + name;
    chains.push_back({name, "PREROUTING", std::move(jump), inbound_body(ifname, cfg, family)});
  }
  if (cfg.redirect_outbound) {
    std::string name = outbound_chain_name(ifname);
    std::string jump = "-o " + std::string(ifname) + " -p tcp" + comment(ifname, "jump-outbound") + " -j " + name;
    chains.push_back({name, "OUTPUT", std::move(jump), outbound_body(ifname, cfg, family)});
  }
  return chains;
}

std::string build_add_payload(std::string_view ifname, const MeshConfig& cfg, Family family,
                              std::string_view current_save) {
  return build_chains_payload(Table::Nat, {inbound_chain_name(ifname), outbound_chain_name(ifname)},
                              mesh_chains(ifname, cfg, family), current_save);
}

}  // namespace manifold::firewall
