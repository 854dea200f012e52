// Implementation of the namespace policy: the policy of a parsed config, the isolation check with
// Multus's error text, and the system-namespace test by namespace.
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

NamespacePolicy namespace_policy_from_config(const cni::MetaConfig& config) {
  NamespacePolicy policy;
  policy.isolation = config.namespace_isolation;
  if (config.global_namespaces_set) policy.global_namespaces = parse_global_namespaces(config.global_namespaces);
  policy.system_namespaces = config.system_namespaces;
  return policy;
}

void check_isolation(const NamespacePolicy& policy, const std::string& pod_ns, const std::string& target_ns) {
  if (!policy.isolation || target_ns == pod_ns || contains(policy.global_namespaces, target_ns)) return;
  throw cni::CniError(cni::ErrorCode::InvalidConfig,
                      "GetNetworkDelegates: namespace isolation enabled, annotation violates permission, pod is in "
                      "namespace " +
                          pod_ns + " but refers to target namespace " + target_ns);
}

bool is_system_namespace(const NamespacePolicy& policy, const std::string& pod_ns) {
  return contains(policy.system_namespaces, pod_ns);
}

}  // namespace manifold::k8s
