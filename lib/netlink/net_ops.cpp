// Implementation of the NetOps public surface: input validation and canonicalisation in front of
// the do_* hooks, the free-table search, and the default-route helpers built on list/add/delete.
#include "netlink/net_ops.h"

#include <sys/socket.h>

#include <algorithm>
#include <climits>

#include "cni/error.h"
#include "netlink/family.h"
#include "util/log.h"

namespace manifold::netlink {
namespace {

using cni::CniError;
using cni::ErrorCode;

void check_family(std::string_view operation, int family, bool allow_unspec) {
  if (is_ip_family(family) || (allow_unspec && family == AF_UNSPEC)) return;
  throw CniError(ErrorCode::InvalidConfig, std::string(operation) + ": unsupported address " + family_name(family));
}

}  // namespace

std::vector<LinkInfo> NetOps::list_links() {
  std::vector<LinkInfo> links = do_list_links();
  std::sort(links.begin(), links.end(), [](const LinkInfo& a, const LinkInfo& b) { return a.index < b.index; });
  return links;
}

std::optional<LinkInfo> NetOps::find_link(std::string_view name) {
  validate_ifname(name);
  return do_find_link(std::string(name));
}

bool NetOps::is_ifname_free(std::string_view name) { return !find_link(name).has_value(); }

std::vector<AddressInfo> NetOps::list_addresses(int ifindex) {
  if (ifindex < 0) throw CniError(ErrorCode::InvalidConfig, "list addresses: negative ifindex");
  return do_list_addresses(ifindex);
}

std::vector<RouteSpec> NetOps::list_routes(int family, int table) {
  check_family("list routes", family, true);
  if (table < 0) throw CniError(ErrorCode::InvalidConfig, "list routes: invalid table " + std::to_string(table));
  return do_list_routes(family, table);
}

AddOutcome NetOps::add_route(const RouteSpec& route, RouteAddMode mode) {
  const RouteSpec r = normalize_route(route);
  if (!r.gw && r.ifindex == 0) {
    throw CniError(ErrorCode::InvalidConfig,
                   "invalid route (" + to_string(r) + "): a route needs a gateway or an interface");
  }
  const AddOutcome outcome = do_add_route(r, mode);
  util::log_debug("netlink: add route ", to_string(r), " in ", netns_path(), ": ", to_string(outcome));
  return outcome;
}

DeleteOutcome NetOps::delete_route(const RouteSpec& route) {
  const RouteSpec r = normalize_route(route);
  const DeleteOutcome outcome = do_delete_route(r);
  util::log_debug("netlink: delete route ", to_string(r), " in ", netns_path(), ": ", to_string(outcome));
  return outcome;
}

std::vector<RuleSpec> NetOps::list_rules(int family) {
  check_family("list rules", family, true);
  return do_list_rules(family);
}

AddOutcome NetOps::add_rule(const RuleSpec& rule) {
  const RuleSpec r = normalize_rule(rule);
  const AddOutcome outcome = do_add_rule(r);
  util::log_debug("netlink: add rule ", to_string(r), " in ", netns_path(), ": ", to_string(outcome));
  return outcome;
}

DeleteOutcome NetOps::delete_rule(const RuleSpec& rule) {
  const RuleSpec r = normalize_rule(rule);
  const DeleteOutcome outcome = do_delete_rule(r);
  util::log_debug("netlink: delete rule ", to_string(r), " in ", netns_path(), ": ", to_string(outcome));
  return outcome;
}

int NetOps::find_free_table(int base) {
  if (base < 1) {
    throw CniError(ErrorCode::InvalidConfig, "routing table base must be 1..2147483647, got " + std::to_string(base));
  }
  return first_free_table(base, do_tables_in_use());
}

std::vector<RouteSpec> NetOps::delete_default_routes(int family, int except_ifindex) {
  check_family("delete default routes", family, false);
  if (except_ifindex < 0) throw CniError(ErrorCode::InvalidConfig, "delete default routes: negative ifindex");
  std::vector<RouteSpec> deleted;
  for (const RouteSpec& route : list_routes(family, kMainTable)) {
    if (route.dst) continue;
    if (except_ifindex != 0 && route.ifindex == except_ifindex) continue;
    // The listed route is an exact pattern: only this very route can match it.
    if (delete_route(route) == DeleteOutcome::Deleted) deleted.push_back(route);
  }
  return deleted;
}

AddOutcome NetOps::add_default_route(int family, const std::optional<util::IpAddress>& gw, int ifindex, int table) {
  check_family("add default route", family, false);
  RouteSpec route;
  route.family = family;
  route.gw = gw;
  route.ifindex = ifindex;
  route.table = table;
  return add_route(route);
}

int first_free_table(int base, const std::set<int>& used) {
  if (base < 1) {
    throw CniError(ErrorCode::InvalidConfig, "routing table base must be 1..2147483647, got " + std::to_string(base));
  }
  for (long long table = base; table <= INT_MAX; ++table) {
    if (table >= kDefaultTable && table <= kLocalTable) continue;  // reserved: default, main, local
    if (used.count(static_cast<int>(table)) == 0) return static_cast<int>(table);
  }
  throw CniError(ErrorCode::Netlink, "netlink: no free routing table at or above " + std::to_string(base));
}

}  // namespace manifold::netlink
