// The `default-route` selection of the Network Plumbing WG spec, done right (Multus deletes no
// default routes, misses IPv6 and leaves its result stale):
// for each address family some attachment asks for, the main table ends up with exactly one
// default route, on the chosen interface, through the given gateway; that family's default routes
// on every other interface are removed. Two requests for one family (across attachments, or two
// gateways of one family in one element) are CniError(InvalidConfig): there is no ECMP default.
//
// plan_default_routes() validates the requests before any delegate runs; apply_default_routes()
// runs after all ADDs and reports what changed (undo_default_routes() puts it back if a later step
// fails); rewrite_default_routes() is the pure helper that makes each attachment's CNI result
// tell the same story, so the returned result and the network-status `gateway` lists are true.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cni/result.h"
#include "netlink/net_ops.h"
#include "util/ip.h"

namespace manifold::scoping {

/// One validated request: attachment `ifname` carries the default route of `family` via `gateway`;
/// or, without a `gateway`, the pod has no default route of `family` at all (a selection
/// element's `"default-route": []`, as Multus leaves such a pod; `ifname` names who asked).
struct DefaultRouteRequest {
  std::string ifname;                      ///< the chosen interface (the asking one for a "no default route" request)
  int family = 0;                          ///< AF_INET or AF_INET6
  std::optional<util::IpAddress> gateway;  ///< the gateway; nullopt: "no default route of family"

  /// True for a "no default route of this family" request.
  bool none() const { return !gateway; }

  /// Field-wise equality.
  friend bool operator==(const DefaultRouteRequest&, const DefaultRouteRequest&) = default;
};

/// The `default-route` lists of the attachments, as (ifname, gateways as given in the selection).
using DefaultRouteSelections = std::vector<std::pair<std::string, std::vector<std::string>>>;

/// Validates the selections and returns one request per (attachment, family). Throws
/// CniError(InvalidConfig) for an invalid interface name, a gateway that is not an IP address, two
/// gateways of one family in one element, or two attachments asking for the same family.
std::vector<DefaultRouteRequest> plan_default_routes(const DefaultRouteSelections& selections);

/// The "no default route" requests of `families` (AF_INET/AF_INET6) asked for by `ifname`, except
/// for the families some request of `gateways` already decides.
std::vector<DefaultRouteRequest> no_default_route_requests(const std::string& ifname, const std::vector<int>& families,
                                                           const std::vector<DefaultRouteRequest>& gateways);

/// What apply_default_routes() changed for one request.
struct DefaultRouteChange {
  DefaultRouteRequest request;              ///< the request
  int ifindex = 0;                          ///< the chosen interface's index
  std::vector<netlink::RouteSpec> removed;  ///< main-table default routes deleted, as listed
  bool added = false;                       ///< the route via the gateway was added (false: already there)
};

/// The main-table default route a request wants, in the kernel's as-added form.
netlink::RouteSpec wanted_default_route(const DefaultRouteRequest& request, int ifindex);

/// Applies the requests in order: deletes every main-table default route of the family that is not
/// the wanted one (other interfaces, other gateways or metrics), then adds the wanted one ("exists"
/// is fine); a "no default route" request only deletes. On failure, what this call changed is undone before the error propagates. Throws
/// CniError(Netlink) when the interface is missing or the kernel refuses the route (e.g. the
/// gateway is not reachable through the interface).
std::vector<DefaultRouteChange> apply_default_routes(netlink::NetOps& ops,
                                                     const std::vector<DefaultRouteRequest>& requests);

/// Undoes `changes` in reverse: deletes the routes added, re-adds the routes removed. Errors are
/// logged, not thrown (it runs while another error is being reported).
void undo_default_routes(netlink::NetOps& ops, const std::vector<DefaultRouteChange>& changes);

/// CHECK of one request: the main table must hold exactly one default route of the family, on the
/// chosen interface, via the gateway (none at all for a "no default route" request). Returns the
/// differences (empty = fine).
std::vector<std::string> check_default_route(netlink::NetOps& ops, const DefaultRouteRequest& request);

/// Rewrites the routes of the result of attachment `ifname` to match `requests`: for every family
/// requested, the result's default routes of that family are dropped, and the attachment that was
/// chosen gets one default route ("0.0.0.0/0" or "::/0") via the gateway (nobody does for a "no
/// default route" request). Families nobody asked for are left alone. Pure.
void rewrite_default_routes(cni::Result& result, const std::string& ifname,
                            const std::vector<DefaultRouteRequest>& requests);

}  // namespace manifold::scoping
