// Network scoping of one pod's attachments — the façade the attachment engine calls. It ties
// together the three per-attachment features:
//  - the `default-route` selection (scoping/default_route.h), across all attachments, after ADD;
//  - source routing (scoping/source_routing.h): a routing table and `from <ip>` rule per IP;
//  - the mesh redirect (scoping/mesh.h): CNIMESH-IN/OUT-<ifname> nat chains.
// Configuration comes in three layers — the top-level manifold config, the delegate config's
// "sourceRouting"/"mesh" keys (stripped before the delegate sees its config), and the pod's
// selection-element `cni-args` — merged per key (later wins) and validated into a ScopingPlan
// BEFORE any delegate runs, so a bad config creates nothing.
//
// The cached state of an attachment (AttachmentRecord::extra["scoping"]) is one JSON object:
//   {"ifname": "net1", "plan": <ScopingPlan::to_json>,
//    "sourceRouting": <SourceRoutingState::to_json>,   (once applied, when enabled)
//    "mesh": <MeshState::to_json>}                     (once applied, when active)
// initial_scoping_state() gives the first two keys, to be cached before the delegate's ADD, so a
// DEL after a crash still knows what may exist; apply_scoping() returns the complete object.
// Without the applied parts, DEL works from the plan and the attachment's IPs (prevResult).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cni/result.h"
#include "scoping/mesh.h"
#include "firewall/mesh_config.h"
#include "firewall/runner.h"
#include "scoping/default_route.h"
#include "netlink/net_ops.h"
#include "scoping/source_routing.h"
#include "util/json.h"

namespace manifold::scoping {

/// Creates an iptables runner for the pod namespace with a given legacy lock wait (seconds).
using IptablesFactory = std::function<std::unique_ptr<firewall::IptablesRunner>(int lock_wait_seconds)>;

/// Hands out one iptables runner per lock wait, created on first use, so an attachment without a
/// mesh never runs an iptables binary.
class IptablesRunnerPool {
 public:
  /// Uses `factory` to create runners.
  explicit IptablesRunnerPool(IptablesFactory factory) : factory_(std::move(factory)) {}
  /// A pool of RealIptablesRunner for the namespace at `netns_path`.
  static IptablesRunnerPool real(const std::string& netns_path);
  /// The runner for `lock_wait_seconds` (created on the first call).
  firewall::IptablesRunner& get(int lock_wait_seconds);

 private:
  IptablesFactory factory_;
  std::map<int, std::unique_ptr<firewall::IptablesRunner>> runners_;
};

/// The side effects scoping needs in one pod namespace.
struct ScopingEnv {
  netlink::NetOps& net;          ///< netlink operations in the pod namespace
  IptablesRunnerPool& iptables;  ///< iptables runners in the pod namespace
};

/// The validated scoping configuration of one attachment.
struct ScopingPlan {
  std::string ifname;                      ///< the attachment's interface in the pod
  SourceRoutingConfig source_routing;      ///< merged `sourceRouting`
  Json mesh_json = Json::object();         ///< merged `mesh` object, as validated
  firewall::MeshConfig mesh;               ///< `mesh_json` parsed
  std::vector<std::string> default_route;  ///< the selection's `default-route` gateways
  /// Families (AF_INET, AF_INET6) this attachment's `"default-route": []` leaves without a default
  /// route: both, minus those another attachment chose a gateway for (plan_attachments_scoping).
  std::vector<int> no_default_route;

  /// True when the attachment has anything to scope (source routing enabled, an active mesh or a
  /// default-route request).
  bool active() const;
  /// {"ifname","sourceRouting":{…},"mesh":{…},"defaultRoute":[…]} and, when set,
  /// "noDefaultRoute": [4, 6] (the families as IP versions).
  Json to_json() const;
  /// Reads to_json()'s form back, re-validating everything. Throws CniError(Decoding).
  static ScopingPlan from_json(const Json& j);
};

/// Removes the "sourceRouting" and "mesh" keys from a delegate config — a conf, or a conflist and
/// each of its plugins — and returns them as {"sourceRouting":…, "mesh":…} (only the keys found;
/// several occurrences are merged per key in the order list, plugins). Throws
/// CniError(InvalidConfig) when a value is neither an object nor null; the keys are removed from
/// `delegate` even then.
Json strip_scoping_keys(Json& delegate);

/// Builds and validates the plan of one attachment from the top-level config's scoping keys
/// (MetaConfig::scoping: {"sourceRouting":…, "mesh":…}), the keys strip_scoping_keys() returned
/// and the selection element's `cni-args` (object or null; its "sourceRouting"/"mesh" keys are
/// read), plus the element's `default-route` gateways (`default_route_none`: it was `[]`). Throws
/// CniError(InvalidConfig) naming the offending field (bad port, non-numeric UID, wrong-family CIDR,
/// invalid interface name, …).
ScopingPlan plan_scoping(const Json& top_scoping, const Json& delegate_keys, const Json& cni_args,
                         const std::string& ifname, const std::vector<std::string>& default_route = {},
                         bool default_route_none = false);

/// The default-route requests of all attachments, validated across them (two attachments asking
/// for one family is CniError(InvalidConfig)), followed by the "no default route" requests of the
/// families nobody chose a gateway for. Call it before any delegate runs.
std::vector<DefaultRouteRequest> default_route_requests(const std::vector<ScopingPlan>& plans);

/// The state to cache before the delegate's ADD: {"ifname","plan"}, or null when the plan is not
/// active (nothing to cache, nothing to undo).
Json initial_scoping_state(const ScopingPlan& plan);

/// The attachment's addresses in `result`: the IPs whose interface is `ifname` (IPs without an
/// interface index when none points at it).
std::vector<AttachmentAddress> attachment_addresses(const cni::Result& result, const std::string& ifname);

/// ADD, after the delegate's ADD: source routing, then the mesh redirect (families from the
/// attachment's addresses). Returns the complete state to cache (null when the plan is not
/// active). On failure, what this call did is undone before the error propagates.
Json apply_scoping(ScopingEnv& env, const ScopingPlan& plan, const cni::Result& result);

/// DEL, before the delegate's DEL: removes the mesh rules and the source routing of the
/// attachment `ifname`. With the applied parts of `state`, exactly what they record; with only the
/// plan, the mesh chains by name (both backends) and the rules at the plan's priority whose source
/// is one of the IPs of `prev_result` (may be null) or an address still on the interface; with a
/// null state, those rules at the default priority. Idempotent. The caller skips it when the
/// namespace is gone (everything died with it).
void remove_scoping(ScopingEnv& env, const Json& state, const std::string& ifname, const cni::Result* prev_result);

/// CHECK: every difference between the pod namespace and the cached `state` (source routing rules
/// and tables, mesh chains and jumps, the default route). Empty when everything matches or the
/// state is null.
std::vector<std::string> check_scoping(ScopingEnv& env, const Json& state);

/// The default-route step after all ADDs: applies `requests` and rewrites the result of every
/// attachment (ifname, result) to match. On failure nothing is changed (neither routes nor
/// results). Returns what changed, for undo_default_routes() if a later step fails.
std::vector<DefaultRouteChange> apply_default_route_step(
    ScopingEnv& env, const std::vector<DefaultRouteRequest>& requests,
    const std::vector<std::pair<std::string, cni::Result*>>& results);

/// The extra network-status fields of an attachment with this cached state: the mesh fields
/// (mesh_status_fields) when its mesh rules are installed, else an empty object.
Json scoping_status_fields(const Json& state);

}  // namespace manifold::scoping
