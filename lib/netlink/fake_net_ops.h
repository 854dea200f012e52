// FakeNetOps: NetOps over an in-memory namespace, for unit tests of the core, CHECK and network
// scoping without root. The state lives in a FakeNetnsState shared by every FakeNetOps opened on
// it, so a test keeps the state, hands FakeNetOps to the code under test (for example through a
// NetOpsFactory lambda) and inspects the tables afterwards.
//
// The fake follows the kernel's observable rules, checked against real namespaces by the netlink
// integration tests: routes are reported as the kernel reports them after an add (route_as_added),
// NLM_F_EXCL identity (family, table, dst, metric) yields Exists, deletes match the way the kernel
// matches (route_matches / rule_matches), a route's interface must exist and be up, a gateway must
// be reachable through an address of that (up) interface or be IPv6 link-local, with the kernel's
// errnos (ENODEV, ENETDOWN, ENETUNREACH for IPv4, EHOSTUNREACH for IPv6), a rule added without a
// priority gets the kernel's default one, and adding an address adds its connected route. Failures
// can be injected per operation; every successful change is recorded in a journal.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "netlink/net_ops.h"

namespace manifold::netlink {

/// The operations of FakeNetOps, for failure injection.
enum class FakeOp {
  ListLinks,
  FindLink,
  ListAddresses,
  ListRoutes,
  AddRoute,
  DeleteRoute,
  ListRules,
  AddRule,
  DeleteRule,
  TablesInUse,
};

/// The in-memory tables of one fake network namespace.
struct FakeNetnsState {
  std::vector<LinkInfo> links;         ///< links, any order
  std::vector<AddressInfo> addresses;  ///< addresses, canonical cidr
  std::vector<RouteSpec> routes;       ///< routes in their as-listed form, insertion order
  std::vector<RuleSpec> rules;         ///< rules in kernel order (priority, then insertion)
  std::set<int> extra_tables;          ///< tables used by objects the specs cannot describe
  std::map<FakeOp, int> failures;      ///< next call of an op fails with this libnl error (once)
  std::vector<std::string> journal;    ///< successful changes: "add route …", "delete rule …"

  /// A namespace as the kernel creates it: "lo" (ifindex 1, up) and the default rules
  /// (IPv4: 0 local, 32766 main, 32767 default; IPv6: 0 local, 32766 main).
  static std::shared_ptr<FakeNetnsState> with_defaults();

  /// Adds a link with the next free ifindex (up, MTU 1500, a locally administered MAC) and returns
  /// its index. Throws CniError(InvalidConfig) for an invalid or duplicate name.
  int add_link(const std::string& name, const std::string& kind = "veth", bool up = true);
  /// Adds `cidr` (e.g. "192.0.2.2/24") to link `ifindex` and, as the kernel does, its connected
  /// route in main (IPv4: proto kernel scope link src <ip>, none for /32; IPv6: proto kernel metric
  /// 256).
  void add_address(int ifindex, const std::string& cidr);
  /// Removes a link with its addresses and every route through it, as the kernel does.
  void remove_link(const std::string& name);
  /// Makes the next call of `op` throw CniError(Netlink) with libnl error `nl_error`.
  void fail_next(FakeOp op, int nl_error);
};

/// NetOps over a FakeNetnsState.
class FakeNetOps final : public NetOps {
 public:
  /// Operates on `state` (a fresh default namespace when omitted), reporting `netns_path`.
  explicit FakeNetOps(std::shared_ptr<FakeNetnsState> state = FakeNetnsState::with_defaults(),
                      std::string netns_path = "/var/run/netns/fake");

  /// The path given at construction.
  const std::string& netns_path() const noexcept override { return netns_path_; }
  /// The shared state.
  FakeNetnsState& state() noexcept { return *state_; }

 protected:
  std::vector<LinkInfo> do_list_links() override;
  std::optional<LinkInfo> do_find_link(const std::string& name) override;
  std::vector<AddressInfo> do_list_addresses(int ifindex) override;
  std::vector<RouteSpec> do_list_routes(int family, int table) override;
  AddOutcome do_add_route(const RouteSpec& route, RouteAddMode mode) override;
  DeleteOutcome do_delete_route(const RouteSpec& route) override;
  std::vector<RuleSpec> do_list_rules(int family) override;
  AddOutcome do_add_rule(const RuleSpec& rule) override;
  DeleteOutcome do_delete_rule(const RuleSpec& rule) override;
  std::set<int> do_tables_in_use() override;

 private:
  /// Throws the injected failure for `op`, if any, consuming it.
  void maybe_fail(FakeOp op, const std::string& operation, const std::string& object);
  /// Throws CniError(Netlink) as the real implementation would for `nl_error` (and the kernel's
  /// errno).
  [[noreturn]] void fail(const std::string& operation, const std::string& object, int nl_error,
                         int kernel_errno = 0) const;
  const LinkInfo* link_by_index(int ifindex) const;

  std::shared_ptr<FakeNetnsState> state_;
  std::string netns_path_;
};

}  // namespace manifold::netlink
