// Implementation of RealNetOps: each hook forwards to the libnl operation of
// link/address/route/rule on the namespace-bound socket.
#include "netlink/real_net_ops.h"

namespace manifold::netlink {

RealNetOps::RealNetOps(const std::string& netns_path) : netns_(NetnsFile::open(netns_path)) {}

NetOpsFactory RealNetOps::factory() {
  return
      [](const std::string& netns_path) -> std::unique_ptr<NetOps> { return std::make_unique<RealNetOps>(netns_path); };
}

NlSocket& RealNetOps::socket() {
  if (!socket_) {
    // The socket must be created inside the namespace: it stays bound to the namespace that is
    // current at creation, and the guard returns this thread to its own namespace right after.
    NetnsGuard guard(netns_);
    socket_.emplace("netns " + netns_.path());
  }
  return *socket_;
}

std::vector<LinkInfo> RealNetOps::do_list_links() { return netlink::list_links(socket()); }

std::optional<LinkInfo> RealNetOps::do_find_link(const std::string& name) { return netlink::find_link(socket(), name); }

std::vector<AddressInfo> RealNetOps::do_list_addresses(int ifindex) {
  return netlink::list_addresses(socket(), ifindex);
}

std::vector<RouteSpec> RealNetOps::do_list_routes(int family, int table) {
  return netlink::list_routes(socket(), family, table);
}

AddOutcome RealNetOps::do_add_route(const RouteSpec& route, RouteAddMode mode) {
  return netlink::add_route(socket(), route, mode);
}

DeleteOutcome RealNetOps::do_delete_route(const RouteSpec& route) { return netlink::delete_route(socket(), route); }

std::vector<RuleSpec> RealNetOps::do_list_rules(int family) { return netlink::list_rules(socket(), family); }

AddOutcome RealNetOps::do_add_rule(const RuleSpec& rule) { return netlink::add_rule(socket(), rule); }

DeleteOutcome RealNetOps::do_delete_rule(const RuleSpec& rule) { return netlink::delete_rule(socket(), rule); }

std::set<int> RealNetOps::do_tables_in_use() {
  std::set<int> used = route_tables_in_use(socket());
  used.merge(rule_tables_in_use(socket()));
  return used;
}

}  // namespace manifold::netlink
