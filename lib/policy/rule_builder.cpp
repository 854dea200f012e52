// Implementation of the policy rule builder: chain names, the fixed head of each chain (replies,
// neighbour discovery, DHCP), one rule per allow, the deny, and the payload over the saved table.
#include "policy/rule_builder.h"

#include "cni/error.h"
#include "firewall/mesh_config.h"
#include "firewall/rules.h"

namespace manifold::policy {

using firewall::Family;
using firewall::OwnedChain;

namespace {

constexpr std::string_view kPrefixIn = "MNP-IN-";
constexpr std::string_view kPrefixOut = "MNP-OUT-";
constexpr std::size_t kMaxComment = 255;  // xt_comment holds 256 bytes with the NUL
// ICMPv6 types always allowed: MLD query/report/done (130-132), router and neighbour solicitation
// and advertisement, redirect (133-137), MLDv2 report (143).
constexpr int kNeighbourDiscovery[] = {130, 131, 132, 133, 134, 135, 136, 137, 143};

std::string chain_name(std::string_view prefix, std::string_view ifname) {
  firewall::validate_ifname(ifname);
  std::string name(prefix);
  name += ifname;
  if (name.size() > firewall::kMaxChainNameLength)
    throw cni::CniError(cni::ErrorCode::Internal, "chain name " + name + " exceeds 28 characters");
  return name;
}

// ` -m comment --comment "mnp/<if>/<what>"`, cut to what xt_comment holds. Policy names are DNS
// subdomains, so the text needs no escaping.
std::string comment(std::string_view ifname, std::string_view what) {
  std::string text = "mnp/";
  text += ifname;
  text += '/';
  text += what;
  if (text.size() > kMaxComment) text.resize(kMaxComment);
  return " -m comment --comment \"" + text + "\"";
}

std::string accept(const std::string& match, std::string_view ifname, std::string_view what) {
  std::string rule = match + comment(ifname, what) + " -j ACCEPT";
  return rule.front() == ' ' ? rule.substr(1) : rule;
}

// The fixed head: replies, then what the network needs in this family and direction.
std::vector<std::string> head(std::string_view ifname, Family family, bool ingress) {
  std::vector<std::string> body{accept("-m conntrack --ctstate RELATED,ESTABLISHED", ifname, "replies")};
  if (family == Family::V6) {
    for (int type : kNeighbourDiscovery)
      body.push_back(
          accept("-p ipv6-icmp -m icmp6 --icmpv6-type " + std::to_string(type), ifname, "neighbour-discovery"));
    body.push_back(accept(ingress ? "-p udp -m udp --sport 547 --dport 546" : "-p udp -m udp --sport 546 --dport 547",
                          ifname, "dhcpv6"));
  } else {
    body.push_back(accept(ingress ? "-p udp -m udp --sport 67 --dport 68" : "-p udp -m udp --sport 68 --dport 67",
                          ifname, "dhcp"));
  }
  return body;
}

std::string port_text(const PortMatch& m) {
  std::string text = std::to_string(m.first);
  if (m.last != m.first) text += ":" + std::to_string(m.last);
  return text;
}

// The match of one allow: peer prefix, protocol, port (ingress: the original destination port).
std::string allow_match(const Allow& allow, bool ingress) {
  std::string match;
  if (allow.peer && allow.peer->prefix_len != 0)  // iptables-save leaves a /0 match out
    match += std::string(ingress ? " -s " : " -d ") + allow.peer->network_str();
  if (allow.port) {
    const std::string proto(protocol_name(allow.port->protocol));
    match += " -p " + proto;
    if (allow.port->first != 0)
      match += ingress ? " -m conntrack --ctorigdstport " + port_text(*allow.port)
                       : " -m " + proto + " --dport " + port_text(*allow.port);
  }
  return match;
}

std::string deny(std::string_view ifname, Family family, DenyAction action) {
  if (action == DenyAction::Drop) return comment(ifname, "deny").substr(1) + " -j DROP";
  return comment(ifname, "deny").substr(1) + " -j REJECT --reject-with " +
         (family == Family::V4 ? "icmp-admin-prohibited" : "icmp6-adm-prohibited");
}

OwnedChain chain_for(std::string_view ifname, const DirectionRules& rules, Family family, DenyAction action,
                     bool ingress) {
  OwnedChain chain;
  chain.name = ingress ? ingress_chain_name(ifname) : egress_chain_name(ifname);
  chain.hook = ingress ? "INPUT" : "OUTPUT";
  chain.jump_spec = std::string(ingress ? "-i " : "-o ") + std::string(ifname) +
                    comment(ifname, ingress ? "ingress" : "egress") + " -j " + chain.name;
  chain.body = head(ifname, family, ingress);
  const int version = family == Family::V4 ? 4 : 6;
  for (const Allow& allow : rules.allows) {
    if (allow.peer && allow.peer->address.family != version) continue;
    chain.body.push_back(accept(allow_match(allow, ingress), ifname, allow.origin));
  }
  chain.body.push_back(deny(ifname, family, action));
  return chain;
}

}  // namespace

std::string ingress_chain_name(std::string_view ifname) { return chain_name(kPrefixIn, ifname); }

std::string egress_chain_name(std::string_view ifname) { return chain_name(kPrefixOut, ifname); }

std::vector<std::string> policy_chain_names(std::string_view ifname) {
  return {ingress_chain_name(ifname), egress_chain_name(ifname)};
}

std::vector<OwnedChain> policy_chains(std::string_view ifname, const AttachmentRules& rules, Family family,
                                      DenyAction deny) {
  std::vector<OwnedChain> chains;
  if (rules.ingress.isolated) chains.push_back(chain_for(ifname, rules.ingress, family, deny, true));
  if (rules.egress.isolated) chains.push_back(chain_for(ifname, rules.egress, family, deny, false));
  return chains;
}

std::string build_policy_payload(std::string_view ifname, const AttachmentRules& rules, Family family, DenyAction deny,
                                 std::string_view current_save) {
  return firewall::build_chains_payload(firewall::Table::Filter, policy_chain_names(ifname),
                                        policy_chains(ifname, rules, family, deny), current_save);
}

}  // namespace manifold::policy
