// Namespace policy of the meta-plugin config: `namespaceIsolation` (a pod may only reference NADs in
// its own namespace or in a global one), `globalNamespaces` (a comma-separated string replacing the
// default global list ["default"]) and `systemNamespaces` (pods there get no defaultNetworks and no
// network-status). Unlike Multus, system namespaces are checked against the pod's namespace, not its
// name (Multus issue #1205). The keys are read (and type-checked) by parse_meta_config; this module
// turns the parsed values into the policy. Pure: no I/O.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cni/netconf.h"

namespace manifold::k8s {

/// The namespace rules from the meta-plugin config.
struct NamespacePolicy {
  bool isolation = false;                                     ///< `namespaceIsolation`
  std::vector<std::string> global_namespaces{"default"};      ///< from `globalNamespaces`
  std::vector<std::string> system_namespaces{"kube-system"};  ///< `systemNamespaces`
};

/// Splits a `globalNamespaces` value on ',' and trims each item; empty items are dropped. An empty
/// or all-blank value yields the default list ["default"], as in Multus.
std::vector<std::string> parse_global_namespaces(std::string_view value);

/// The policy of a parsed meta-plugin config: `namespaceIsolation`, `globalNamespaces` split by
/// parse_global_namespaces (unset = ["default"]) and `systemNamespaces` (unset = ["kube-system"],
/// [] = none).
NamespacePolicy namespace_policy_from_config(const cni::MetaConfig& config);

/// With isolation on, throws CniError(InvalidConfig) with Multus's message unless `target_ns` equals
/// `pod_ns` or is one of the global namespaces. Does nothing with isolation off.
void check_isolation(const NamespacePolicy& policy, const std::string& pod_ns, const std::string& target_ns);

/// True if the pod's namespace is one of the system namespaces.
bool is_system_namespace(const NamespacePolicy& policy, const std::string& pod_ns);

}  // namespace manifold::k8s
