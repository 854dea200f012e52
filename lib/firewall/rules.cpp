// The mesh rule builders: chain names, chain bodies in canonical iptables-save form, multiport
// splitting, and the ADD payload that reconciles the current nat table with the wanted chains
// (flush + refill bodies, keep a correct jump, replace stale or misplaced ones, drop the chain of a
// direction that was switched off). No side effects; the runner applies the text.
#include "firewall/rules.h"

#include "cni/error.h"
#include "firewall/save_text.h"

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

// What the ADD payload does about one of our two chain names.
struct ChainPlan {
  std::string name;
  const MeshChain* wanted = nullptr;      // null: this direction is disabled
  bool exists = false;                    // declared in the current nat table
  bool keep_jump = false;                 // the current jump is exactly right
  std::vector<ChainReference> to_delete;  // references to remove with -D
};

ChainPlan plan_chain(const SavedTable* nat, const std::string& name, const MeshChain* wanted, const std::string& in,
                     const std::string& out) {
  ChainPlan plan{name, wanted, false, false, {}};
  if (nat == nullptr) return plan;
  plan.exists = nat->find(name) != nullptr;
  for (ChainReference& ref : references_to(*nat, name)) {
    if (ref.chain == in || ref.chain == out) continue;  // flushed by the chain line anyway
    plan.to_delete.push_back(std::move(ref));
  }
  if (wanted != nullptr && plan.to_delete.size() == 1) {
    const ChainReference& ref = plan.to_delete.front();
    const SavedChain* hook = nat->find(wanted->hook);
    if (ref.chain == wanted->hook && ref.spec == wanted->jump_spec && hook != nullptr &&
        ref.index < first_foreign_mesh_jump(*hook)) {
      plan.keep_jump = true;
      plan.to_delete.clear();
    }
  }
  return plan;
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
  const std::vector<MeshChain> chains = mesh_chains(ifname, cfg, family);
  const std::string in = inbound_chain_name(ifname);
  const std::string out = outbound_chain_name(ifname);
  const SaveText saved = parse_save_text(current_save);
  const SavedTable* nat = saved.find("nat");

  auto wanted = [&](const std::string& name) -> const MeshChain* {
    for (const MeshChain& c : chains)
      if (c.name == name) return &c;
    return nullptr;
  };
  const ChainPlan plans[] = {plan_chain(nat, in, wanted(in), in, out), plan_chain(nat, out, wanted(out), in, out)};

  std::string payload = "*nat\n";
  for (const ChainPlan& p : plans)
    if (p.wanted != nullptr || p.exists) payload += ":" + p.name + " - [0:0]\n";
  for (const ChainPlan& p : plans)
    for (const ChainReference& ref : p.to_delete) payload += "-D " + ref.chain + " " + ref.spec + "\n";
  for (const ChainPlan& p : plans)
    if (p.wanted != nullptr)
      for (const std::string& rule : p.wanted->body) payload += "-A " + p.name + " " + rule + "\n";
  for (const ChainPlan& p : plans)
    if (p.wanted != nullptr && !p.keep_jump) payload += "-I " + p.wanted->hook + " 1 " + p.wanted->jump_spec + "\n";
  for (const ChainPlan& p : plans)
    if (p.wanted == nullptr && p.exists) payload += "-X " + p.name + "\n";
  payload += "COMMIT\n";
  return payload;
}

}  // namespace manifold::firewall
