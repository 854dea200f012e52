// Reading a MultiNetworkPolicy object: metadata, the policy-for annotation, the spec, with the
// fail-closed fallback for whatever does not validate.
#include "policy/policy.h"

#include <algorithm>

#include "k8s/api_status.h"
#include "policy/policy_error.h"
#include "policy/policy_rules_reader.h"
#include "util/quote.h"

namespace manifold::policy {

namespace {

constexpr std::size_t kMaxRules = 10000;  // a bound on hostile input; no real policy comes close

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// metadata.namespace and metadata.name; a missing namespace is the listed one.
void read_identity(const Json& object, std::string_view listed_ns, MultiNetworkPolicy& out) {
  out.ns = std::string(listed_ns);
  const Json* ns = json_at(object, {"metadata", "namespace"});
  if (ns != nullptr && ns->is_string() && k8s::is_dns1123_label(ns->get_ref<const std::string&>()))
    out.ns = ns->get<std::string>();
  else if (listed_ns.empty())
    throw PolicyError("metadata.namespace", "must be the policy's namespace (a DNS-1123 label)");
  const Json* name = json_at(object, {"metadata", "name"});
  if (name == nullptr || !name->is_string() || !k8s::is_dns1123_subdomain(name->get_ref<const std::string&>()))
    throw PolicyError("metadata.name", "must be the policy's name (a DNS-1123 subdomain)");
  out.name = name->get<std::string>();
}

void read_networks(const Json& object, MultiNetworkPolicy& out) {
  const Json* annotations = json_at(object, {"metadata", "annotations"});
  if (annotations == nullptr || annotations->is_null()) return;
  if (!annotations->is_object()) throw PolicyError("metadata.annotations", "must be an object of strings");
  const auto it = annotations->find(std::string(kPolicyForAnnotation));
  if (it == annotations->end()) return;
  if (!it->is_string()) throw PolicyError(kPolicyForPath, "must be a string");
  out.networks = parse_policy_for(it->get_ref<const std::string&>(), out.ns);
}

void read_policy_types(const Json& spec, MultiNetworkPolicy& out) {
  const auto types = spec.find("policyTypes");
  const bool given = types != spec.end() && !types->is_null() && !(types->is_array() && types->empty());
  if (!given) {  // NetworkPolicy's defaulting
    out.ingress = true;
    out.egress = !out.egress_rules.empty();
    return;
  }
  if (!types->is_array() || types->size() > 2)
    throw PolicyError("spec.policyTypes", "must be a list of at most two of Ingress, Egress");
  for (std::size_t i = 0; i < types->size(); ++i) {
    const Json& t = (*types)[i];
    if (t == "Ingress") {
      out.ingress = true;
    } else if (t == "Egress") {
      out.egress = true;
    } else {
      throw PolicyError(path_index("spec.policyTypes", i),
                        "must be Ingress or Egress, found " + util::printable_json(t));
    }
  }
}

std::vector<PolicyRule> read_rules(const Json& spec, const char* key, const char* peers_key) {
  std::vector<PolicyRule> rules;
  const auto list = spec.find(key);
  if (list == spec.end() || list->is_null()) return rules;
  const std::string where = path_key("spec", key);
  if (!list->is_array() || list->size() > kMaxRules) throw PolicyError(where, "must be a list of rules");
  for (std::size_t i = 0; i < list->size(); ++i)
    rules.push_back(read_rule((*list)[i], path_index(where, i), peers_key));
  return rules;
}

void read_spec(const Json& object, MultiNetworkPolicy& out) {
  const Json* spec = json_at(object, {"spec"});
  if (spec == nullptr || !spec->is_object()) throw PolicyError("spec", "is required (an object)");
  for (const auto& [name, value] : spec->items())
    if (name != "podSelector" && name != "policyTypes" && name != "ingress" && name != "egress")
      throw PolicyError(path_key("spec", name),
                        "is not a field of a MultiNetworkPolicy spec (podSelector, policyTypes, ingress, egress)");
  const auto selector = spec->find("podSelector");
  if (selector == spec->end() || selector->is_null())
    throw PolicyError("spec.podSelector", "is required ({} selects every pod of the namespace)");
  out.pod_selector = read_label_selector(*selector, "spec.podSelector");
  out.ingress_rules = read_rules(*spec, "ingress", "from");
  out.egress_rules = read_rules(*spec, "egress", "to");
  read_policy_types(*spec, out);
}

void fail(MultiNetworkPolicy& out, const PolicyError& e) {
  if (out.error.empty()) out.error = e.what();
}

}  // namespace

const std::string kPolicyForPath = "metadata.annotations[\"k8s.v1.cni.cncf.io/policy-for\"]";

void invalidate_policy(MultiNetworkPolicy& p, std::string error) {
  if (p.error.empty()) p.error = std::move(error);
  p.all_networks = true;
  p.ingress = p.egress = true;
  p.ingress_rules.clear();
  p.egress_rules.clear();
}

std::string_view protocol_name(Protocol protocol) {
  switch (protocol) {
    case Protocol::Tcp:
      return "tcp";
    case Protocol::Udp:
      return "udp";
    case Protocol::Sctp:
      return "sctp";
  }
  return "tcp";
}

bool MultiNetworkPolicy::covers(std::string_view network) const {
  return all_networks ||
         std::any_of(networks.begin(), networks.end(), [&](const NetworkRef& n) { return n.str() == network; });
}

MultiNetworkPolicy read_policy(const Json& object, std::string_view listed_ns) {
  MultiNetworkPolicy out;
  try {
    if (!object.is_object()) throw PolicyError("(object)", "is not a JSON object");
    read_identity(object, listed_ns, out);
  } catch (const PolicyError& e) {
    fail(out, e);
  }
  try {
    read_networks(object, out);
  } catch (const PolicyError& e) {
    out.networks.clear();
    out.all_networks = true;
    fail(out, e);
  }
  if (out.valid()) {
    try {
      read_spec(object, out);
    } catch (const PolicyError& e) {
      fail(out, e);
    }
  }
  if (!out.valid()) {  // fail closed: isolate both directions, allow nothing
    out.ingress = out.egress = true;
    out.ingress_rules.clear();
    out.egress_rules.clear();
  }
  return out;
}

std::vector<NetworkRef> parse_policy_for(std::string_view annotation, const std::string& policy_ns) {
  std::vector<NetworkRef> out;
  if (trim(annotation).empty()) return out;
  std::size_t start = 0;
  while (start <= annotation.size()) {
    const std::size_t comma = annotation.find(',', start);
    const std::string_view entry =
        trim(annotation.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    const std::size_t slash = entry.find('/');
    NetworkRef ref{policy_ns, std::string(slash == std::string_view::npos ? entry : entry.substr(slash + 1))};
    if (slash != std::string_view::npos) ref.ns = std::string(entry.substr(0, slash));
    if (entry.empty() || !k8s::is_dns1123_label(ref.ns) || !k8s::is_dns1123_subdomain(ref.name))
      throw PolicyError(kPolicyForPath, util::quote_bytes(entry) +
                                            " is not a network attachment definition: expected name or "
                                            "namespace/name, comma-separated");
    if (std::find(out.begin(), out.end(), ref) == out.end()) out.push_back(std::move(ref));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

bool is_port_name(std::string_view text) {
  if (text.empty() || text.size() > 15 || text.front() == '-' || text.back() == '-') return false;
  if (text.find("--") != std::string_view::npos) return false;
  bool letter = false;
  for (char c : text) {
    if (c >= 'a' && c <= 'z') {
      letter = true;
    } else if (!(c >= '0' && c <= '9') && c != '-') {
      return false;
    }
  }
  return letter;
}

}  // namespace manifold::policy
