// Implementation of FakeNetOps and FakeNetnsState: in-memory tables that follow the kernel's rules
// for identity, matching, next-hop validation and default rule priorities.
#include "netlink/fake_net_ops.h"

#include <netlink/errno.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "cni/error.h"
#include "netlink/family.h"

namespace manifold::netlink {
namespace {

using cni::CniError;
using cni::ErrorCode;

// Metric the kernel gives the connected route of an IPv6 address (IP6_RT_PRIO_ADDRCONF).
constexpr int kIpv6AddrconfMetric = 256;

RuleSpec make_rule(int family, int priority, int table) {
  RuleSpec rule;
  rule.family = family;
  rule.priority = priority;
  rule.table = table;
  return rule;
}

}  // namespace

// ---- FakeNetnsState ----

std::shared_ptr<FakeNetnsState> FakeNetnsState::with_defaults() {
  auto state = std::make_shared<FakeNetnsState>();
  state->links.push_back(LinkInfo{1, "lo", "00:00:00:00:00:00", 65536, true, ""});
  state->rules = {make_rule(AF_INET, 0, kLocalTable), make_rule(AF_INET6, 0, kLocalTable),
                  make_rule(AF_INET, 32766, kMainTable), make_rule(AF_INET6, 32766, kMainTable),
                  make_rule(AF_INET, 32767, kDefaultTable)};
  return state;
}

int FakeNetnsState::add_link(const std::string& name, const std::string& kind, bool up) {
  validate_ifname(name);
  int index = 1;
  for (const LinkInfo& link : links) {
    if (link.name == name) throw CniError(ErrorCode::InvalidConfig, "fake netns: link " + name + " already exists");
    index = std::max(index, link.index + 1);
  }
  const unsigned char mac[6] = {
      0x02, 0x00, 0x00, 0x00, static_cast<unsigned char>(index >> 8), static_cast<unsigned char>(index)};
  links.push_back(LinkInfo{index, name, format_mac(mac, sizeof mac), 1500, up, kind});
  return index;
}

void FakeNetnsState::add_address(int ifindex, const std::string& cidr) {
  const bool link_exists =
      std::any_of(links.begin(), links.end(), [&](const LinkInfo& l) { return l.index == ifindex; });
  if (!link_exists) throw CniError(ErrorCode::InvalidConfig, "fake netns: no link #" + std::to_string(ifindex));
  const std::optional<util::IpPrefix> prefix = util::parse_ip_or_cidr(cidr);
  if (!prefix) throw CniError(ErrorCode::InvalidConfig, "fake netns: invalid address " + cidr);
  const int family = family_of(prefix->address);
  addresses.push_back(AddressInfo{family, ifindex, *prefix});

  RouteSpec connected;
  connected.family = family;
  connected.dst = prefix->masked();
  connected.ifindex = ifindex;
  connected.protocol = kProtoKernel;
  if (family == AF_INET) {
    if (prefix->prefix_len == 32) return;  // the kernel adds no prefix route for a /32
    connected.scope = kScopeLink;
    connected.prefsrc = prefix->address;
  } else {
    connected.scope = kScopeUniverse;
    connected.priority = kIpv6AddrconfMetric;
  }
  routes.push_back(connected);
}

void FakeNetnsState::remove_link(const std::string& name) {
  const auto it = std::find_if(links.begin(), links.end(), [&](const LinkInfo& l) { return l.name == name; });
  if (it == links.end()) return;
  const int index = it->index;
  links.erase(it);
  std::erase_if(addresses, [&](const AddressInfo& a) { return a.ifindex == index; });
  std::erase_if(routes, [&](const RouteSpec& r) { return r.ifindex == index; });
}

void FakeNetnsState::fail_next(FakeOp op, int nl_error) { failures[op] = -std::abs(nl_error); }

// ---- FakeNetOps ----

FakeNetOps::FakeNetOps(std::shared_ptr<FakeNetnsState> state, std::string netns_path)
    : state_(std::move(state)), netns_path_(std::move(netns_path)) {
  if (!state_) state_ = FakeNetnsState::with_defaults();
}

void FakeNetOps::maybe_fail(FakeOp op, const std::string& operation, const std::string& object) {
  const auto it = state_->failures.find(op);
  if (it == state_->failures.end()) return;
  const int err = it->second;
  state_->failures.erase(it);
  fail(operation, object, err);
}

void FakeNetOps::fail(const std::string& operation, const std::string& object, int nl_error, int kernel_errno) const {
  throw netlink_error(operation, object, nl_error, "netns " + netns_path_, kernel_errno);
}

const LinkInfo* FakeNetOps::link_by_index(int ifindex) const {
  for (const LinkInfo& link : state_->links) {
    if (link.index == ifindex) return &link;
  }
  return nullptr;
}

std::vector<LinkInfo> FakeNetOps::do_list_links() {
  maybe_fail(FakeOp::ListLinks, "dump", "links");
  return state_->links;
}

std::optional<LinkInfo> FakeNetOps::do_find_link(const std::string& name) {
  maybe_fail(FakeOp::FindLink, "get link", name);
  for (const LinkInfo& link : state_->links) {
    if (link.name == name) return link;
  }
  return std::nullopt;
}

std::vector<AddressInfo> FakeNetOps::do_list_addresses(int ifindex) {
  maybe_fail(FakeOp::ListAddresses, "dump", "addresses");
  std::vector<AddressInfo> out;
  for (const AddressInfo& a : state_->addresses) {
    if (ifindex == 0 || a.ifindex == ifindex) out.push_back(a);
  }
  std::stable_sort(out.begin(), out.end(), [](const AddressInfo& a, const AddressInfo& b) {
    if (a.ifindex != b.ifindex) return a.ifindex < b.ifindex;
    return a.family < b.family;
  });
  return out;
}

std::vector<RouteSpec> FakeNetOps::do_list_routes(int family, int table) {
  maybe_fail(FakeOp::ListRoutes, "dump", "routes");
  std::vector<RouteSpec> out;
  for (int fam : {AF_INET, AF_INET6}) {
    if (family != AF_UNSPEC && family != fam) continue;
    for (const RouteSpec& r : state_->routes) {
      if (r.family == fam && (table == kAllTables || r.table == table)) out.push_back(r);
    }
  }
  return out;
}

AddOutcome FakeNetOps::do_add_route(const RouteSpec& route, RouteAddMode mode) {
  const std::string object = to_string(route);
  maybe_fail(FakeOp::AddRoute, "add route", object);
  RouteSpec added = route;
  const std::optional<util::IpAddress>& gw = route.gw;
  // The kernel's answer when a gateway is not reachable: ENETUNREACH (IPv4), EHOSTUNREACH (IPv6).
  const int unreachable = route.family == AF_INET ? ENETUNREACH : EHOSTUNREACH;

  // A gateway on a subnet of the up interface `ifindex` (through its addresses or link routes).
  auto on_link = [&](int ifindex) {
    const LinkInfo* link = link_by_index(ifindex);
    if (link == nullptr || !link->up) return false;
    for (const AddressInfo& a : state_->addresses) {
      if (a.ifindex == ifindex && a.cidr.contains(*gw)) return true;
    }
    for (const RouteSpec& r : state_->routes) {
      if (r.ifindex == ifindex && !r.gw && r.table == kMainTable && r.dst && r.dst->contains(*gw)) return true;
    }
    return false;
  };

  if (added.ifindex == 0) {
    // The kernel resolves the interface through the gateway's connected subnet; an IPv6
    // link-local gateway cannot be resolved ("Egress device not specified").
    if (gw->is_ipv6_link_local()) fail("add route", object, -NLE_INVAL, EINVAL);
    for (const LinkInfo& link : state_->links) {
      if (on_link(link.index)) {
        added.ifindex = link.index;
        break;
      }
    }
    if (added.ifindex == 0) fail("add route", object, -NLE_FAILURE, unreachable);
  }
  const LinkInfo* link = link_by_index(added.ifindex);
  if (link == nullptr) fail("add route", object, -NLE_NODEV, ENODEV);
  // IPv4 validates the gateway first, IPv6 the device state first.
  const bool gw_ok = !gw || gw->is_ipv6_link_local() || on_link(added.ifindex);
  if (route.family == AF_INET && !gw_ok) fail("add route", object, -NLE_FAILURE, unreachable);
  if (!link->up) fail("add route", object, -NLE_FAILURE, ENETDOWN);
  if (!gw_ok) fail("add route", object, -NLE_FAILURE, unreachable);

  added = route_as_added(added);
  for (const RouteSpec& existing : state_->routes) {
    const bool same_next_hop = existing.gw == added.gw && existing.ifindex == added.ifindex;
    if (same_route_identity(existing, added) && (mode == RouteAddMode::Exclusive || same_next_hop))
      return AddOutcome::Exists;
  }
  state_->routes.push_back(added);
  state_->journal.push_back("add route " + to_string(added));
  return AddOutcome::Added;
}

DeleteOutcome FakeNetOps::do_delete_route(const RouteSpec& route) {
  maybe_fail(FakeOp::DeleteRoute, "delete route", to_string(route));
  const auto it = std::find_if(state_->routes.begin(), state_->routes.end(),
                               [&](const RouteSpec& candidate) { return route_matches(route, candidate); });
  if (it == state_->routes.end()) return DeleteOutcome::NotFound;
  state_->journal.push_back("delete route " + to_string(*it));
  state_->routes.erase(it);
  return DeleteOutcome::Deleted;
}

std::vector<RuleSpec> FakeNetOps::do_list_rules(int family) {
  maybe_fail(FakeOp::ListRules, "dump", "rules");
  std::vector<RuleSpec> out;
  for (int fam : {AF_INET, AF_INET6}) {
    if (family != AF_UNSPEC && family != fam) continue;
    for (const RuleSpec& r : state_->rules) {
      if (r.family == fam) out.push_back(r);
    }
  }
  return out;
}

AddOutcome FakeNetOps::do_add_rule(const RuleSpec& rule) {
  maybe_fail(FakeOp::AddRule, "add rule", to_string(rule));
  RuleSpec added = rule;
  if (added.priority == kRulePriorityAuto) {
    // The kernel's default: one less than the priority of the family's second rule, else 0.
    std::vector<int> priorities;
    for (const RuleSpec& r : state_->rules) {
      if (r.family == rule.family) priorities.push_back(r.priority);
    }
    added.priority = (priorities.size() >= 2 && priorities[1] > 0) ? priorities[1] - 1 : 0;
  }
  for (const RuleSpec& existing : state_->rules) {
    if (same_rule_identity(existing, added)) return AddOutcome::Exists;
  }
  const auto pos = std::upper_bound(state_->rules.begin(), state_->rules.end(), added,
                                    [](const RuleSpec& a, const RuleSpec& b) { return a.priority < b.priority; });
  state_->rules.insert(pos, added);
  state_->journal.push_back("add rule " + to_string(added));
  return AddOutcome::Added;
}

DeleteOutcome FakeNetOps::do_delete_rule(const RuleSpec& rule) {
  maybe_fail(FakeOp::DeleteRule, "delete rule", to_string(rule));
  const auto it = std::find_if(state_->rules.begin(), state_->rules.end(),
                               [&](const RuleSpec& candidate) { return rule_matches(rule, candidate); });
  if (it == state_->rules.end()) return DeleteOutcome::NotFound;
  state_->journal.push_back("delete rule " + to_string(*it));
  state_->rules.erase(it);
  return DeleteOutcome::Deleted;
}

std::set<int> FakeNetOps::do_tables_in_use() {
  maybe_fail(FakeOp::TablesInUse, "dump", "routes and rules");
  std::set<int> used = state_->extra_tables;
  for (const RouteSpec& r : state_->routes) used.insert(r.table);
  for (const RuleSpec& r : state_->rules) used.insert(r.table);
  return used;
}

}  // namespace manifold::netlink
