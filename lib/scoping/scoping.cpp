// Implementation of the network-scoping façade: key stripping, layered planning, the per-attachment
// apply/remove/check sequence over netlink and iptables, the cross-attachment default-route step
// and the cached state's shape.
#include "scoping/scoping.h"

#include <sys/socket.h>

#include <algorithm>
#include <optional>

#include "cni/error.h"
#include "scoping/cached_state.h"
#include "cni/delegate_config.h"
#include "cni/netconf.h"
#include "cni/result_codec.h"
#include "firewall/iptables_types.h"
#include "netlink/link.h"
#include "scoping/mesh_config.h"
#include "util/ip.h"
#include "util/log.h"
#include "util/ifname.h"

namespace manifold::scoping {

namespace {

using cni::CniError;
using cni::ErrorCode;

constexpr const char* kScopingKeys[] = {"sourceRouting", "mesh"};
constexpr std::size_t kMaxDefaultRouteGateways = 2;

// Merges `value` (object or null) into out[key], per key; `where` names the config in errors.
void merge_key(Json& out, const std::string& key, const Json& value, const std::string& where) {
  if (value.is_null()) return;
  if (!value.is_object()) cni::throw_invalid_config("invalid " + where + ": key \"" + key + "\" must be an object");
  if (!out.contains(key)) out[key] = Json::object();
  for (const auto& [k, v] : value.items()) out[key][k] = v;
}

// Removes the scoping keys of one object (a conf, a conflist, or a conflist's plugin) and appends
// them, in order, to `found`. Never throws: validation comes after every key is gone.
void take_keys(Json& object, std::vector<std::pair<std::string, Json>>& found) {
  if (!object.is_object()) return;
  for (const char* key : kScopingKeys) {
    const auto it = object.find(key);
    if (it == object.end()) continue;
    found.emplace_back(key, std::move(*it));
    object.erase(key);
  }
}

// The value of `key` in an object, or null (for null or absent objects and keys).
Json key_of(const Json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? Json(nullptr) : *it;
}

const Json& cni_args_object(const Json& cni_args) {
  static const Json kNull;
  if (cni_args.is_null()) return kNull;
  if (!cni_args.is_object()) cni::throw_invalid_config("invalid cni-args: must be an object");
  return cni_args;
}

// Merges the three `mesh` layers into one object, per key (merge_mesh_layers' order and
// rule), so that the merged object can be cached and re-validated later.
Json merged_mesh_layers(const Json& top, const Json& delegate, const Json& args) {
  Json merged = Json::object();
  for (const Json* layer : {&top, &delegate, &args})
    if (layer->is_object())
      for (const auto& [k, v] : layer->items()) merged[k] = v;
  return merged;
}

std::vector<std::string> ips_of(const cni::Result* result, const std::string& ifname) {
  std::vector<std::string> ips;
  if (result == nullptr) return ips;
  for (const AttachmentAddress& a : attachment_addresses(*result, ifname)) ips.push_back(a.cidr);
  return ips;
}

// Removes the source routing of the attachment; errors propagate.
void remove_source_routing_part(ScopingEnv& env, const Json& state, const ScopingPlan* plan, const std::string& ifname,
                                const cni::Result* prev_result) {
  if (const auto it = state.find("sourceRouting"); state.is_object() && it != state.end()) {
    remove_source_routing(env.net, SourceRoutingState::from_json(*it));
    return;
  }
  if (plan != nullptr && !plan->source_routing.enabled) return;
  const int priority = plan != nullptr ? plan->source_routing.rule_priority : SourceRoutingConfig{}.rule_priority;
  // The runtime's prevResult often lists the cluster network's IPs only: the addresses still on
  // the interface name the attachment's IPs too.
  std::vector<std::string> ips = ips_of(prev_result, ifname);
  if (const auto link = env.net.find_link(ifname))
    for (const netlink::AddressInfo& a : env.net.list_addresses(link->index)) ips.push_back(a.cidr.str());
  remove_source_routing_by_ips(env.net, ifname, priority, ips);
}

void remove_mesh_part(ScopingEnv& env, const Json& state, const ScopingPlan* plan, const std::string& ifname) {
  if (const auto it = state.find("mesh"); state.is_object() && it != state.end()) {
    const MeshState mesh = MeshState::from_json(*it);
    if (!mesh.empty()) remove_mesh(env.iptables.get(mesh.lock_wait_seconds), mesh);
    return;
  }
  if (plan == nullptr || !plan->mesh.active()) return;
  // Not recorded as applied (a crash after the delegate's ADD): our chains are found by name in
  // whichever backend holds them.
  remove_mesh(env.iptables.get(plan->mesh.lock_wait_seconds),
              MeshState::rebuilt(ifname, {firewall::Family::V4, firewall::Family::V6}));
}

}  // namespace

// ---- IptablesRunnerPool ----

IptablesRunnerPool IptablesRunnerPool::real(const std::string& netns_path) {
  return IptablesRunnerPool([netns_path](int lock_wait_seconds) -> std::unique_ptr<firewall::IptablesRunner> {
    firewall::RealIptablesRunner::Options options;
    options.netns_path = netns_path;
    options.lock_wait_seconds = lock_wait_seconds;
    return std::make_unique<firewall::RealIptablesRunner>(options);
  });
}

firewall::IptablesRunner& IptablesRunnerPool::get(int lock_wait_seconds) {
  auto& slot = runners_[lock_wait_seconds];
  if (!slot) slot = factory_(lock_wait_seconds);
  if (!slot) throw CniError(ErrorCode::Internal, "no iptables runner for the pod namespace");
  return *slot;
}

// ---- ScopingPlan ----

bool ScopingPlan::active() const {
  return source_routing.enabled || mesh.active() || !default_route.empty() || !no_default_route.empty();
}

Json ScopingPlan::to_json() const {
  Json j = Json::object();
  j["ifname"] = ifname;
  j["sourceRouting"] = source_routing.to_json();
  j["mesh"] = mesh_json;
  j["defaultRoute"] = default_route;
  if (!no_default_route.empty()) {
    Json versions = Json::array();
    for (int family : no_default_route) versions.push_back(family == AF_INET ? 4 : 6);
    j["noDefaultRoute"] = versions;
  }
  return j;
}

ScopingPlan ScopingPlan::from_json(const Json& j) {
  if (!j.is_object()) throw_bad_cached_state("scoping", "plan", "is not an object");
  ScopingPlan plan;
  const auto ifname = j.find("ifname");
  if (ifname == j.end() || !ifname->is_string() || !util::is_valid_ifname(ifname->get_ref<const std::string&>()))
    throw_bad_cached_state("scoping", "plan.ifname", "is missing or not a valid interface name");
  plan.ifname = ifname->get<std::string>();
  const auto routes = j.find("defaultRoute");
  if (routes != j.end()) {
    if (!routes->is_array() || routes->size() > kMaxDefaultRouteGateways)
      throw_bad_cached_state("scoping", "plan.defaultRoute", "is not a list of at most two gateways");
    for (const Json& gw : *routes) {
      if (!gw.is_string())
        throw_bad_cached_state("scoping", "plan.defaultRoute", "holds something other than a string");
      plan.default_route.push_back(gw.get<std::string>());
    }
  }
  if (const auto none = j.find("noDefaultRoute"); none != j.end()) {
    if (!none->is_array() || none->size() > 2)
      throw_bad_cached_state("scoping", "plan.noDefaultRoute", "is not a list of IP versions");
    for (const Json& v : *none) {
      if (v != 4 && v != 6)
        throw_bad_cached_state("scoping", "plan.noDefaultRoute", "holds something other than 4 or 6");
      plan.no_default_route.push_back(v == 4 ? AF_INET : AF_INET6);
    }
  }
  try {
    plan.source_routing = parse_source_routing_config(key_of(j, "sourceRouting"));
    const Json mesh = key_of(j, "mesh");
    plan.mesh = parse_mesh_config(mesh);
    plan.mesh_json = mesh.is_null() ? Json::object() : mesh;
    (void)plan_default_routes({{plan.ifname, plan.default_route}});
  } catch (const CniError& e) {
    throw_bad_cached_state("scoping", "plan", "does not validate: " + e.msg());
  }
  return plan;
}

// ---- planning ----

Json strip_scoping_keys(Json& delegate) {
  const std::string where = "network config \"" + cni::delegate_name(delegate).substr(0, 64) + "\"";
  // Every key goes first, so that even an invalid one never reaches a delegate (a DEL that plans
  // best-effort still hands the delegates clean configs); then the values are checked and merged.
  std::vector<std::pair<std::string, Json>> found;
  take_keys(delegate, found);
  if (delegate.is_object()) {
    if (const auto plugins = delegate.find("plugins"); plugins != delegate.end() && plugins->is_array())
      for (Json& plugin : *plugins) take_keys(plugin, found);
  }
  Json keys = Json::object();
  for (const auto& [key, value] : found) merge_key(keys, key, value, where);
  return keys;
}

ScopingPlan plan_scoping(const Json& top_scoping, const Json& delegate_keys, const Json& cni_args,
                         const std::string& ifname, const std::vector<std::string>& default_route,
                         bool default_route_none) {
  firewall::validate_ifname(ifname);
  const Json& args = cni_args_object(cni_args);
  ScopingPlan plan;
  plan.ifname = ifname;
  plan.source_routing = merge_source_routing_layers(
      key_of(top_scoping, "sourceRouting"), key_of(delegate_keys, "sourceRouting"), key_of(args, "sourceRouting"));
  const Json top_mesh = key_of(top_scoping, "mesh");
  const Json delegate_mesh = key_of(delegate_keys, "mesh");
  const Json args_mesh = key_of(args, "mesh");
  plan.mesh = merge_mesh_layers(top_mesh, delegate_mesh, args_mesh);
  plan.mesh_json = merged_mesh_layers(top_mesh, delegate_mesh, args_mesh);
  for (const DefaultRouteRequest& r : plan_default_routes({{ifname, default_route}}))
    plan.default_route.push_back(r.gateway->str());
  if (default_route_none && default_route.empty()) plan.no_default_route = {AF_INET, AF_INET6};
  return plan;
}

std::vector<DefaultRouteRequest> default_route_requests(const std::vector<ScopingPlan>& plans) {
  DefaultRouteSelections selections;
  for (const ScopingPlan& plan : plans) selections.emplace_back(plan.ifname, plan.default_route);
  std::vector<DefaultRouteRequest> requests = plan_default_routes(selections);
  for (const ScopingPlan& plan : plans)  // one "none" per family, after the gateways that decide it
    for (auto& none : no_default_route_requests(plan.ifname, plan.no_default_route, requests))
      requests.push_back(std::move(none));
  return requests;
}

Json initial_scoping_state(const ScopingPlan& plan) {
  if (!plan.active()) return nullptr;
  Json state = Json::object();
  state["ifname"] = plan.ifname;
  state["plan"] = plan.to_json();
  return state;
}

std::vector<AttachmentAddress> attachment_addresses(const cni::Result& result, const std::string& ifname) {
  std::vector<AttachmentAddress> on_interface, unbound;
  for (const cni::IpConfig& ip : result.ips) {
    if (!ip.interface) {
      unbound.push_back({ip.address, ip.gateway});
      continue;
    }
    const int index = *ip.interface;
    if (index >= 0 && index < static_cast<int>(result.interfaces.size()) && result.interfaces[index].name == ifname)
      on_interface.push_back({ip.address, ip.gateway});
  }
  return on_interface.empty() ? unbound : on_interface;
}

// ---- lifecycle ----

Json apply_scoping(ScopingEnv& env, const ScopingPlan& plan, const cni::Result& result) {
  Json state = initial_scoping_state(plan);
  if (state.is_null()) return state;
  const std::vector<AttachmentAddress> addresses = attachment_addresses(result, plan.ifname);

  std::optional<SourceRoutingState> routing;
  if (plan.source_routing.enabled) {
    routing = apply_source_routing(env.net, plan_source_routing(env.net, plan.source_routing, plan.ifname, addresses));
    state["sourceRouting"] = routing->to_json();
  }
  if (plan.mesh.active()) {
    try {
      bool has_v4 = false, has_v6 = false;
      for (const auto& a : addresses) {
        const auto ip = util::parse_ip_or_cidr(a.cidr);
        if (ip && ip->address.family == 4) has_v4 = true;
        if (ip && ip->address.family == 6) has_v6 = true;
      }
      const MeshState mesh = apply_mesh(env.iptables.get(plan.mesh.lock_wait_seconds), plan.ifname, plan.mesh,
                                        firewall::mesh_families(plan.mesh, has_v4, has_v6));
      state["mesh"] = mesh.to_json();
    } catch (const CniError& e) {
      if (routing) {
        util::log_verbose("mesh rules of ", plan.ifname, " failed; removing its source routing");
        try {
          remove_source_routing(env.net, *routing);
        } catch (const CniError& undo) {
          util::log_error("undoing the source routing of ", plan.ifname, " failed: ", undo.msg());
        }
      }
      throw;
    }
  }
  util::log_verbose("scoping of ", plan.ifname, " applied");
  return state;
}

void remove_scoping(ScopingEnv& env, const Json& state, const std::string& ifname, const cni::Result* prev_result) {
  std::optional<ScopingPlan> plan;
  if (state.is_object()) {
    if (const auto it = state.find("plan"); it != state.end()) plan = ScopingPlan::from_json(*it);
  }
  const ScopingPlan* p = plan ? &*plan : nullptr;
  // Mesh first (traffic stops being redirected), then routing; both always attempted.
  std::optional<CniError> first;
  try {
    remove_mesh_part(env, state, p, ifname);
  } catch (const CniError& e) {
    util::log_error("removing the mesh rules of ", ifname, " failed: ", e.msg());
    first = e;
  }
  try {
    remove_source_routing_part(env, state, p, ifname, prev_result);
  } catch (const CniError& e) {
    util::log_error("removing the source routing of ", ifname, " failed: ", e.msg());
    if (!first) first = e;
  }
  if (first) throw *first;
}

std::vector<std::string> check_scoping(ScopingEnv& env, const Json& state) {
  std::vector<std::string> diffs;
  if (state.is_null()) return diffs;
  if (!state.is_object() || !state.contains("plan")) throw_bad_cached_state("scoping", "(top level)", "has no plan");
  const ScopingPlan plan = ScopingPlan::from_json(state["plan"]);
  if (plan.source_routing.enabled) {
    if (const auto it = state.find("sourceRouting"); it != state.end()) {
      for (auto& d : check_source_routing(env.net, SourceRoutingState::from_json(*it))) diffs.push_back(std::move(d));
    } else {
      diffs.push_back("source routing of " + plan.ifname + " was never applied");
    }
  }
  if (plan.mesh.active()) {
    if (const auto it = state.find("mesh"); it != state.end()) {
      const MeshState mesh = MeshState::from_json(*it);
      for (auto& d : check_mesh(env.iptables.get(mesh.lock_wait_seconds), mesh, plan.mesh))
        diffs.push_back("mesh rules of " + plan.ifname + ": " + d);
    } else {
      diffs.push_back("mesh rules of " + plan.ifname + " were never applied");
    }
  }
  for (const DefaultRouteRequest& request : default_route_requests({plan}))
    for (auto& d : check_default_route(env.net, request)) diffs.push_back(std::move(d));
  return diffs;
}

std::vector<DefaultRouteChange> apply_default_route_step(
    ScopingEnv& env, const std::vector<DefaultRouteRequest>& requests,
    const std::vector<std::pair<std::string, cni::Result*>>& results) {
  if (requests.empty()) return {};
  std::vector<DefaultRouteChange> changes = apply_default_routes(env.net, requests);
  for (const auto& [ifname, result] : results)
    if (result != nullptr) rewrite_default_routes(*result, ifname, requests);
  return changes;
}

Json scoping_status_fields(const Json& state) {
  if (!state.is_object() || !state.contains("plan") || !state.contains("mesh")) return Json::object();
  const ScopingPlan plan = ScopingPlan::from_json(state["plan"]);
  if (MeshState::from_json(state["mesh"]).empty()) return Json::object();
  return mesh_status_fields(plan.mesh);
}

}  // namespace manifold::scoping
