// NetOps: every netlink operation manifold performs, for ONE network namespace, behind an abstract
// interface. The core, CHECK and network scoping talk only to NetOps; RealNetOps (real_net_ops.h)
// performs the operations in a real namespace through libnl, FakeNetOps (fake_net_ops.h) keeps
// in-memory tables that follow the kernel's rules, so orchestration and scoping logic are
// unit-testable without root.
//
// The public methods are non-virtual: they validate and canonicalise their input once (throwing
// CniError(InvalidConfig) for bad input, before anything reaches the kernel) and then call the
// protected do_* hooks an implementation provides. Helpers built from the primitives (default-route
// selection) therefore behave identically on both implementations.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "netlink/address.h"
#include "netlink/error.h"
#include "netlink/link.h"
#include "netlink/route.h"
#include "netlink/rule.h"

namespace manifold::netlink {

/// Netlink operations on one network namespace. Errors are CniError: InvalidConfig for bad input,
/// Netlink (105) naming the operation, the object and libnl's text for kernel failures. An instance
/// is not thread-safe: use it from one thread at a time.
class NetOps {
 public:
  virtual ~NetOps() = default;

  /// The namespace path the operations act on.
  virtual const std::string& netns_path() const noexcept = 0;

  /// Every link, ordered by ifindex.
  std::vector<LinkInfo> list_links();
  /// The link called `name` (validated), or nullopt when there is none. The kernel also matches
  /// alternative names, so the returned link's name may differ; the name is taken either way.
  std::optional<LinkInfo> find_link(std::string_view name);
  /// True when no link is called `name`: the core's check before each delegate ADD.
  bool is_ifname_free(std::string_view name);

  /// IPv4/IPv6 addresses of every link (ifindex 0) or of one.
  std::vector<AddressInfo> list_addresses(int ifindex = 0);

  /// Unicast routes of `table` (kAllTables for all) and `family` (AF_UNSPEC for both: IPv4 first),
  /// each next hop of an IPv6 multipath route on its own. Order within a family is unspecified
  /// (kernel: trie order; fake: insertion).
  std::vector<RouteSpec> list_routes(int family, int table = kMainTable);
  /// Adds a route; by default Exists when one with the same identity is there (RouteAddMode).
  [[nodiscard]] AddOutcome add_route(const RouteSpec& route, RouteAddMode mode = RouteAddMode::Exclusive);
  /// Deletes the first route matching `route`; NotFound when there is none.
  [[nodiscard]] DeleteOutcome delete_route(const RouteSpec& route);

  /// Source-only lookup rules of `family` (AF_UNSPEC for both), in priority order.
  std::vector<RuleSpec> list_rules(int family);
  /// Adds a rule (NLM_F_EXCL semantics); Exists when an identical rule is there.
  [[nodiscard]] AddOutcome add_rule(const RuleSpec& rule);
  /// Deletes one rule matching `rule`; NotFound when there is none.
  [[nodiscard]] DeleteOutcome delete_rule(const RuleSpec& rule);

  /// The first table ID >= `base` (1..2^31-1) that no rule points at and no route (any type or
  /// family) lives in; the kernel's reserved IDs 253–255 are never returned.
  int find_free_table(int base);

  /// Deletes every main-table default route of `family` whose interface is not `except_ifindex`
  /// (0: delete all) and returns the routes deleted, as listed, so a caller can restore them.
  std::vector<RouteSpec> delete_default_routes(int family, int except_ifindex);
  /// Adds "default via `gw` dev `ifindex`" (gw nullopt = directly connected) to `table`.
  [[nodiscard]] AddOutcome add_default_route(int family, const std::optional<util::IpAddress>& gw, int ifindex,
                                             int table = kMainTable);

 protected:
  /// Lists links (unordered is fine).
  virtual std::vector<LinkInfo> do_list_links() = 0;
  /// Finds a link by a validated name.
  virtual std::optional<LinkInfo> do_find_link(const std::string& name) = 0;
  /// Lists addresses; ifindex 0 = all.
  virtual std::vector<AddressInfo> do_list_addresses(int ifindex) = 0;
  /// Lists routes; family AF_INET, AF_INET6 or AF_UNSPEC, table >= 0 (kAllTables).
  virtual std::vector<RouteSpec> do_list_routes(int family, int table) = 0;
  /// Adds a normalized route that has a gateway or an interface.
  virtual AddOutcome do_add_route(const RouteSpec& route, RouteAddMode mode) = 0;
  /// Deletes by a normalized pattern.
  virtual DeleteOutcome do_delete_route(const RouteSpec& route) = 0;
  /// Lists rules; family AF_INET, AF_INET6 or AF_UNSPEC.
  virtual std::vector<RuleSpec> do_list_rules(int family) = 0;
  /// Adds a normalized rule.
  virtual AddOutcome do_add_rule(const RuleSpec& rule) = 0;
  /// Deletes by a normalized pattern.
  virtual DeleteOutcome do_delete_rule(const RuleSpec& rule) = 0;
  /// Every table ID used by any rule or route of any kind.
  virtual std::set<int> do_tables_in_use() = 0;
};

/// The first table ID >= `base` not in `used`, skipping the reserved IDs 253, 254, 255. Throws
/// CniError(InvalidConfig) for base outside 1..2^31-1, CniError(Netlink) when none is left.
int first_free_table(int base, const std::set<int>& used);

/// Creates the NetOps for a namespace path; the core receives one so tests can inject fakes.
using NetOpsFactory = std::function<std::unique_ptr<NetOps>(const std::string& netns_path)>;

}  // namespace manifold::netlink
