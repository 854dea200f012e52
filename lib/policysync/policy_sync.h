// The node agent's MultiNetworkPolicy sync, without its side effects: what the watches report
// (policies, namespaces, peer pods, this node's pods) goes in; for each covered attachment of a
// pod on this node (as its cache entry records it), sync() evaluates the rules the current
// policies generate with the peers filled in, and hands them to the applier only when they differ
// from what it last applied there — so an unrelated change costs no iptables call. The applier
// restores only the families whose tables differ (policy/enforce.h), atomically.
//
// Failing closed: a policy that does not validate, or whose policy-for names a network that does
// not exist (the NAD view does not hold it), isolates what it may select in both directions and
// allows nothing (as at ADD). A pod on this node that the watch
// has not delivered yet keeps the rules ADD installed (closed where peers were needed).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/isolation.h"
#include "policy/enforce.h"
#include "policy/evaluate.h"
#include "policy/policy.h"
#include "policy/policy_config.h"
#include "policy/pod_view.h"
#include "policysync/peer_index.h"
#include "store/record.h"

namespace manifold::policysync {

/// One covered attachment of a pod on this node, as its cache entry records it.
struct LocalAttachment {
  store::EntryKey key;             ///< the cache entry
  std::string pod_ns;              ///< the pod's namespace
  std::string pod_name;            ///< the pod's name
  std::string netns;               ///< the sandbox's network namespace
  policy::PolicyState state;       ///< what ADD (or the last sync) applied: interface, network, backend
  policy::PolicyConfig config;     ///< the entry's multiNetworkPolicy settings
  k8s::NamespacePolicy isolation;  ///< the entry's namespace rules: which networks the pod may ever join

  /// "<entry>/<ifname>": one attachment's identity across syncs.
  std::string id() const { return key.str() + "/" + state.ifname; }
};

/// Puts `rules` in force for `attachment`; returns the number of families restored (0: the
/// tables already held them). Throws cni::CniError when it cannot.
using RuleApplier = std::function<int(const LocalAttachment& attachment, const policy::AttachmentRules& rules)>;

/// An invalid policy isolating an attachment of a pod on this node.
struct InvalidPolicy {
  std::string error;     ///< "ns/name: <json path>: <what was expected>"
  std::string where;     ///< the attachment, as ADD names it: "net1 (ns/blue)"
  std::string pod_ns;    ///< the pod's namespace
  std::string pod_name;  ///< the pod's name

  bool operator==(const InvalidPolicy&) const = default;
};

/// What one sync() did.
struct SyncResult {
  int evaluated = 0;  ///< attachments evaluated
  int changed = 0;    ///< attachments whose rules differed from the last applied
  int restored = 0;   ///< families restored
  int failed = 0;     ///< attachments whose application failed (retried by the next sync)
  /// Each invalid policy isolating a local attachment, for the caller's Warning events.
  std::vector<InvalidPolicy> invalid;
};

/// Which peer views the current policies need for this node's attachments.
struct ViewNeeds {
  bool pods = false;        ///< some podSelector/namespaceSelector peer: every pod's labels and IPs
  bool namespaces = false;  ///< some namespaceSelector: the namespaces' labels
  bool nads = false;        ///< some policy at all: which NADs its policy-for names exist
};

/// The sync's state and its one operation.
class PolicySync {
 public:
  /// Applies rules through `apply`.
  explicit PolicySync(RuleApplier apply);

  /// Stores (or replaces) a policy.
  void put_policy(policy::MultiNetworkPolicy p);
  /// Forgets a policy.
  void remove_policy(std::string_view ns, std::string_view name);
  /// Marks every policy stale until it is put again.
  void begin_policies_relist();
  /// Drops the policies not put since begin_policies_relist().
  void end_policies_relist();

  /// Stores (or replaces) a pod of this node (labels and container ports: its full object).
  void put_local_pod(policy::PodView pod);
  /// Forgets a pod of this node.
  void remove_local_pod(std::string_view ns, std::string_view name);

  /// The peer pods and namespaces.
  PeerIndex& peers() { return peers_; }

  /// Records that a NAD's network ("ns/name") exists (the NAD view put it).
  void put_network(const std::string& network) { networks_.insert(network); }
  /// Records that a NAD's network no longer exists.
  void remove_network(std::string_view network);
  /// Forgets every network (the NAD view relists).
  void clear_networks() { networks_.clear(); }

  /// What the policies of the namespaces of `attachments` (only those can select their pods) need.
  ViewNeeds needs(const std::vector<LocalAttachment>& attachments) const;

  /// Evaluates every attachment and applies what changed (everything with `force`: the periodic
  /// pass that also repairs rules changed behind the agent's back).
  SyncResult sync(const std::vector<LocalAttachment>& attachments, bool force);

  /// Policies kept.
  std::size_t policies() const;

 private:
  struct StoredPolicy {
    policy::MultiNetworkPolicy policy;
    bool fresh = true;
  };
  std::vector<policy::MultiNetworkPolicy> policies_for(const policy::PodView& pod,
                                                       const k8s::NamespacePolicy& isolation) const;
  policy::PeerWorld world_for(std::string_view network, const std::vector<policy::MultiNetworkPolicy>& policies) const;

  RuleApplier apply_;
  std::map<std::string, std::map<std::string, StoredPolicy, std::less<>>, std::less<>> policies_;  ///< ns → name
  std::map<std::string, policy::PodView, std::less<>> local_pods_;                                 ///< "ns/name"
  PeerIndex peers_;
  std::set<std::string, std::less<>> networks_;             ///< the NADs' networks that exist
  std::map<std::string, policy::AttachmentRules> applied_;  ///< LocalAttachment::id() → rules in force
};

}  // namespace manifold::policysync
