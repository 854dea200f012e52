// The Warning events the policy sync sends about invalid MultiNetworkPolicies, as ADD sends them:
// one InvalidMultiNetworkPolicy event per pod and invalid policy, naming every attachment of the
// pod it closes. Each is told once while it lasts; one that was fixed and breaks again is told again.
// The pods' identities (uid, resourceVersion) come from this node's pod watch.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "policysync/policy_sync.h"
#include "util/json.h"

namespace manifold::policysync {

/// What to tell, and what was told.
class PolicyWarnings {
 public:
  /// Records the identity of a pod of this node.
  void set_pod(const std::string& ns, const std::string& name, std::string uid, std::string resource_version);
  /// Forgets a pod of this node.
  void remove_pod(const std::string& ns, const std::string& name);
  /// The Event objects (POST to the pod's namespace) for what `invalid` holds and was not told yet;
  /// forgets what `invalid` no longer holds. Pods whose identity is not known yet wait.
  std::vector<Json> take(const std::vector<InvalidPolicy>& invalid);

 private:
  std::map<std::pair<std::string, std::string>, std::pair<std::string, std::string>> pods_;  ///< → uid, rv
  std::set<std::string> told_;                                                               ///< "ns/name\n<message>"
};

}  // namespace manifold::policysync
