// The NetworkAttachmentDefinitions one invocation reads, each fetched once. An ADD names every NAD
// the pod will use up front (prefetch), and they are fetched in one batch: one round trip to the API
// server however many networks the pod asks for. A NAD's own failure (missing, forbidden, unreachable)
// is kept and thrown when resolution asks for that NAD, in resolution's order, so a batch changes
// when a NAD is read but not which error an ADD reports. Also here: the delegate config of a NAD
// (its spec.config, or for an empty spec the confDir network of the NAD's name).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cni/netconf.h"
#include "k8s/api_client.h"
#include "engine/kube_access.h"
#include "util/json.h"

namespace manifold::engine {

/// The NAD a clusterNetwork/defaultNetworks value names: `value` in multusNamespace when it has no
/// '/' (else it is a file or directory, never a NAD); none for an empty value (no such setting).
std::optional<k8s::ObjectKey> named_nad(const cni::MetaConfig& config, const std::string& value);

/// Fetches NADs once each (a batch of them in one round trip) and turns them into delegate configs.
class NadResolver {
 public:
  /// Reads through `kube`; `config` gives confDir and must outlive the resolver.
  NadResolver(KubeAccess& kube, const cni::MetaConfig& config) : kube_(kube), config_(config) {}

  /// Fetches, in one batch, every NAD of `keys` not fetched yet. Nothing is thrown here: what a
  /// NAD's fetch failed with (a failure of the whole batch included) is kept for fetch() to throw.
  void prefetch(const std::vector<k8s::ObjectKey>& keys);

  /// The NAD `ns/name` (owned by this resolver, fetched once): null when it does not exist and
  /// `allow_missing`. Throws CniError(NetworkNotFound) when it does not exist otherwise, and what
  /// its fetch failed with for any other failure.
  const Json* fetch(const std::string& ns, const std::string& name, bool allow_missing);

  /// The delegate config of a fetched NAD (an empty spec is looked up in confDir by NAD name).
  /// Throws CniError(NetworkNotFound) when there is neither.
  Json delegate_of(const Json& nad, const std::string& ns, const std::string& name) const;

 private:
  KubeAccess& kube_;
  const cni::MetaConfig& config_;
  std::map<std::string, k8s::ApiOutcome> cache_;
};

}  // namespace manifold::engine
