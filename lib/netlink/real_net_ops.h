// RealNetOps: NetOps on a real network namespace through libnl. The namespace file is opened and
// validated when the object is constructed (so a missing namespace surfaces as NetnsNotFound right
// away, which DEL treats as success). On the first operation the calling thread enters the
// namespace with a NetnsGuard just long enough to create the netlink socket; because a netlink
// socket stays bound to the namespace it was created in, every later operation goes through that
// socket without entering the namespace again, and the thread is never left in the pod's namespace.
#pragma once

#include <optional>
#include <string>

#include "netlink/net_ops.h"
#include "netlink/netns.h"
#include "netlink/nl_socket.h"

namespace manifold::netlink {

/// NetOps acting on the network namespace at a path.
class RealNetOps final : public NetOps {
 public:
  /// Opens the namespace at `netns_path`. Throws NetnsNotFound, NotANetns or CniError(InvalidEnv).
  explicit RealNetOps(const std::string& netns_path);

  /// The path given at construction.
  const std::string& netns_path() const noexcept override { return netns_.path(); }

  /// A factory creating RealNetOps, for injection into the core.
  static NetOpsFactory factory();

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
  /// The socket bound to the namespace, created inside it on first use.
  NlSocket& socket();

  NetnsFile netns_;
  std::optional<NlSocket> socket_;
};

}  // namespace manifold::netlink
