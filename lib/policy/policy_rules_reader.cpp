// Implementation of the rule, peer and port readers.
#include "policy/policy_rules_reader.h"

#include <initializer_list>

#include "policy/policy_error.h"
#include "util/quote.h"

namespace manifold::policy {

namespace {

constexpr std::size_t kMaxListLength = 10000;  // a bound on hostile input; no real policy comes close

void only_fields(const Json& object, const std::string& where, std::initializer_list<const char*> fields,
                 const char* what) {
  for (const auto& [name, value] : object.items()) {
    bool known = false;
    for (const char* f : fields) known = known || name == f;
    if (!known) {
      std::string list;
      for (const char* f : fields) list += (list.empty() ? "" : ", ") + std::string(f);
      throw PolicyError(path_key(where, name), std::string("is not a field of ") + what + " (" + list + ")");
    }
  }
}

// The list at `key` of `object` (absent or null: none), checked to be a bounded array.
const Json* list_at(const Json& object, const char* key, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  if (!it->is_array() || it->size() > kMaxListLength) throw PolicyError(path_key(where, key), "must be a list");
  return &*it;
}

util::IpPrefix read_cidr(const Json& value, const std::string& where) {
  if (!value.is_string())
    throw PolicyError(where, "must be a CIDR string such as \"192.0.2.0/24\" or \"2001:db8::/64\"");
  const std::string& text = value.get_ref<const std::string&>();
  const auto prefix = text.find('/') == std::string::npos ? std::nullopt : util::parse_cidr(text);
  if (!prefix)
    throw PolicyError(where,
                      util::quote_bytes(text) + " is not a CIDR (an IPv4 or IPv6 address, '/', a prefix length)");
  return prefix->masked();
}

std::uint16_t read_port_number(const Json& value, const std::string& where) {
  if (!value.is_number_integer() || value.get<long long>() < 1 || value.get<long long>() > 65535)
    throw PolicyError(where, "must be a port number 1-65535, found " + util::printable_json(value));
  return static_cast<std::uint16_t>(value.get<long long>());
}

PolicyPeer read_peer(const Json& peer, const std::string& where) {
  if (!peer.is_object()) throw PolicyError(where, "must be an object (podSelector, namespaceSelector or ipBlock)");
  only_fields(peer, where, {"podSelector", "namespaceSelector", "ipBlock"}, "a peer");
  PolicyPeer out;
  auto present = [&](const char* key) {
    const auto it = peer.find(key);
    return it != peer.end() && !it->is_null();
  };
  if (present("podSelector"))
    out.pod_selector = read_label_selector(peer["podSelector"], path_key(where, "podSelector"));
  if (present("namespaceSelector"))
    out.namespace_selector = read_label_selector(peer["namespaceSelector"], path_key(where, "namespaceSelector"));
  if (present("ipBlock")) {
    if (out.pod_selector || out.namespace_selector)
      throw PolicyError(where, "may hold an ipBlock or selectors (podSelector, namespaceSelector), not both");
    out.ip_block = read_ip_block(peer["ipBlock"], path_key(where, "ipBlock"));
  }
  if (!out.pod_selector && !out.namespace_selector && !out.ip_block)
    throw PolicyError(where, "must name a podSelector, a namespaceSelector or an ipBlock");
  return out;
}

}  // namespace

IpBlock read_ip_block(const Json& block, const std::string& where) {
  if (!block.is_object()) throw PolicyError(where, "must be an object with cidr and except");
  only_fields(block, where, {"cidr", "except"}, "an ipBlock");
  const auto cidr = block.find("cidr");
  if (cidr == block.end() || cidr->is_null()) throw PolicyError(path_key(where, "cidr"), "is required");
  IpBlock out;
  out.cidr = read_cidr(*cidr, path_key(where, "cidr"));
  const std::string except_at = path_key(where, "except");
  if (const Json* except = list_at(block, "except", where)) {
    for (std::size_t i = 0; i < except->size(); ++i) {
      const std::string at = path_index(except_at, i);
      const util::IpPrefix prefix = read_cidr((*except)[i], at);
      if (prefix.address.family != out.cidr.address.family)
        throw PolicyError(at, prefix.str() + " is " + prefix.address.family_name() + " but cidr " + out.cidr.str() +
                                  " is " + out.cidr.address.family_name());
      if (prefix.prefix_len <= out.cidr.prefix_len || !out.cidr.contains(prefix))
        throw PolicyError(at, prefix.str() + " must lie strictly inside cidr " + out.cidr.str());
      out.except.push_back(prefix);
    }
  }
  return out;
}

PolicyPort read_port(const Json& port, const std::string& where) {
  if (!port.is_object()) throw PolicyError(where, "must be an object (protocol, port, endPort)");
  only_fields(port, where, {"protocol", "port", "endPort"}, "a port");
  PolicyPort out;
  if (const auto protocol = port.find("protocol"); protocol != port.end() && !protocol->is_null()) {
    const std::string text = protocol->is_string() ? protocol->get<std::string>() : "";
    if (text == "TCP") {
      out.protocol = Protocol::Tcp;
    } else if (text == "UDP") {
      out.protocol = Protocol::Udp;
    } else if (text == "SCTP") {
      out.protocol = Protocol::Sctp;
    } else {
      throw PolicyError(path_key(where, "protocol"),
                        "must be TCP, UDP or SCTP, found " + util::printable_json(*protocol));
    }
  }
  const std::string port_at = path_key(where, "port");
  if (const auto number = port.find("port"); number != port.end() && !number->is_null()) {
    if (number->is_string()) {
      if (!is_port_name(number->get_ref<const std::string&>()))
        throw PolicyError(port_at, util::quote_bytes(number->get_ref<const std::string&>()) +
                                       " is not a port number or a container port name (1-15 characters of a-z, "
                                       "0-9, '-', with a letter, no leading, trailing or doubled '-')");
      out.named_port = number->get<std::string>();
    } else {
      out.port = read_port_number(*number, port_at);
    }
  }
  if (const auto end = port.find("endPort"); end != port.end() && !end->is_null()) {
    const std::string end_at = path_key(where, "endPort");
    if (out.port == 0)
      throw PolicyError(end_at, "may only be given with a numeric port (a range from port to endPort)");
    out.end_port = read_port_number(*end, end_at);
    if (out.end_port < out.port)
      throw PolicyError(end_at, std::to_string(out.end_port) + " is below port " + std::to_string(out.port));
  }
  return out;
}

PolicyRule read_rule(const Json& rule, const std::string& where, const char* peers_key) {
  if (!rule.is_object()) throw PolicyError(where, std::string("must be an object (") + peers_key + ", ports)");
  only_fields(rule, where, {peers_key, "ports"}, "a rule");
  PolicyRule out;
  if (const Json* peers = list_at(rule, peers_key, where))
    for (std::size_t i = 0; i < peers->size(); ++i)
      out.peers.push_back(read_peer((*peers)[i], path_index(path_key(where, peers_key), i)));
  if (const Json* ports = list_at(rule, "ports", where))
    for (std::size_t i = 0; i < ports->size(); ++i)
      out.ports.push_back(read_port((*ports)[i], path_index(path_key(where, "ports"), i)));
  return out;
}

}  // namespace manifold::policy
