// Implementation of the namespace policy: parsing the three config keys with type checks, the
// isolation check with Multus's error text, and the system-namespace test by namespace.
#include "k8s/isolation.h"

#include <algorithm>

#include "cni/error.h"

namespace manifold::k8s {
namespace {

std::string_view trim(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

bool contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

[[noreturn]] void bad_type(const char* key, const char* expected) {
  throw cni::CniError(cni::ErrorCode::InvalidConfig, std::string("config key \"") + key + "\" must be " + expected);
}

}  // namespace

std::vector<std::string> parse_global_namespaces(std::string_view value) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t comma = value.find(',', start);
    if (comma == std::string_view::npos) comma = value.size();
    std::string_view item = trim(value.substr(start, comma - start));
    if (!item.empty()) out.emplace_back(item);
    start = comma + 1;
  }
  if (out.empty()) out.emplace_back("default");
  return out;
}

NamespacePolicy namespace_policy_from_config(const Json& netconf) {
  NamespacePolicy policy;
  if (!netconf.is_object()) return policy;
  if (auto it = netconf.find("namespaceIsolation"); it != netconf.end() && !it->is_null()) {
    if (!it->is_boolean()) bad_type("namespaceIsolation", "a boolean");
    policy.isolation = it->get<bool>();
  }
  if (auto it = netconf.find("globalNamespaces"); it != netconf.end() && !it->is_null()) {
    if (!it->is_string()) bad_type("globalNamespaces", "a comma-separated string");
    policy.global_namespaces = parse_global_namespaces(it->get_ref<const std::string&>());
  }
  if (auto it = netconf.find("systemNamespaces"); it != netconf.end() && !it->is_null()) {
    if (!it->is_array()) bad_type("systemNamespaces", "a list of strings");
    policy.system_namespaces.clear();
    for (const Json& ns : *it) {
      if (!ns.is_string()) bad_type("systemNamespaces", "a list of strings");
      policy.system_namespaces.push_back(ns.get<std::string>());
    }
  }
  return policy;
}

void check_isolation(const NamespacePolicy& policy, const std::string& pod_ns, const std::string& target_ns) {
  if (!policy.isolation || target_ns == pod_ns || contains(policy.global_namespaces, target_ns)) return;
  throw cni::CniError(cni::ErrorCode::InvalidConfig,
                      "GetNetworkDelegates: namespace isolation enabled, annotation violates permission, pod is in "
                      "namespace " + pod_ns + " but refers to target namespace " + target_ns);
}

bool is_system_namespace(const NamespacePolicy& policy, const std::string& pod_ns) {
  return contains(policy.system_namespaces, pod_ns);
}

}  // namespace manifold::k8s
