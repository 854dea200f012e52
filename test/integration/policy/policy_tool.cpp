// policy_tool: drives lib/policy against a real pod namespace for the MultiNetworkPolicy
// integration tests, doing what the node agent does once it knows the peers: read the policies,
// pods and namespaces (the objects the API server returns), evaluate them for one attachment and
// apply, re-apply, check or remove its rules with the real iptables binaries. It is the library's
// own code end to end — the tests drive it instead of an agent, which does not watch policies yet.
//
// Input on stdin, one JSON object:
//   {"command": "apply" | "reapply" | "check" | "remove",
//    "netns": "/run/netns/x", "ifname": "net1", "network": "default/blue", "families": [4, 6],
//    "config": {"enabled": true, "iptablesMode": "nft", "denyAction": "reject"},
//    "pod": <pod object>, "policies": [<MultiNetworkPolicy>...],
//    "peers": [<pod object>...] or null (not known: the ADD form), "namespaces": [<Namespace>...],
//    "state": <PolicyState, for reapply, check and remove>}
// Output on stdout: {"state": …, "covered": bool, "complete": bool, "restored": N, "diffs": […]}.
// A CNI error prints {"code", "msg"} and exits 1.
#include <iostream>
#include <iterator>

#include "cni/error.h"
#include "firewall/runner.h"
#include "policy/enforce.h"
#include "policy/pod_view.h"
#include "policy/policy_error.h"

using namespace manifold;
using namespace manifold::policy;

namespace {

std::vector<firewall::Family> families_of(const Json& in) {
  std::vector<firewall::Family> out;
  for (const Json& f : in.value("families", Json::array({4})))
    out.push_back(f == 6 ? firewall::Family::V6 : firewall::Family::V4);
  return out;
}

AttachmentRules rules_of(const Json& in) {
  std::vector<MultiNetworkPolicy> policies;
  for (const Json& p : in.value("policies", Json::array())) policies.push_back(read_policy(p));
  const PodView pod = read_pod_view(in.at("pod"));
  if (in.value("peers", Json()).is_null()) return evaluate(pod, in.at("network").get<std::string>(), policies, nullptr);
  PeerWorld world;
  for (const Json& p : in.at("peers")) world.pods.push_back(read_pod_view(p));
  for (const Json& n : in.value("namespaces", Json::array())) world.namespaces.insert(read_namespace(n));
  return evaluate(pod, in.at("network").get<std::string>(), policies, &world);
}

Json run(const Json& in) {
  const PolicyConfig cfg = read_policy_config(in.value("config", Json::object()));
  firewall::RealIptablesRunner::Options options;
  options.netns_path = in.at("netns").get<std::string>();
  options.lock_wait_seconds = cfg.lock_wait_seconds;
  firewall::RealIptablesRunner runner(options);
  const std::string command = in.at("command").get<std::string>();
  Json out = Json::object();
  if (command == "remove") {
    remove_policy(runner, PolicyState::from_json(in.at("state")));
    return out;
  }
  const AttachmentRules rules = rules_of(in);
  out["covered"] = rules.covered();
  out["complete"] = rules.complete();
  if (command == "apply") {
    const PolicyState planned =
        PolicyState::planned(in.at("ifname").get<std::string>(), in.at("network").get<std::string>(), families_of(in),
                             cfg.lock_wait_seconds);
    out["state"] = apply_policy(runner, planned, rules, cfg).to_json();
  } else if (command == "reapply") {
    PolicyState state = PolicyState::from_json(in.at("state"));
    out["restored"] = apply_policy_if_changed(runner, state, rules, cfg);
    out["state"] = state.to_json();
  } else if (command == "check") {
    out["diffs"] = check_policy(runner, PolicyState::from_json(in.at("state")), rules, cfg.deny);
  } else {
    throw cni::CniError(cni::ErrorCode::InvalidConfig, "unknown command " + command);
  }
  return out;
}

}  // namespace

int main() {
  const std::string text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  try {
    std::cout << run(Json::parse(text)).dump() << "\n";
    return 0;
  } catch (const cni::CniError& e) {
    std::cout << Json{{"code", e.code()}, {"msg", e.msg()}}.dump() << "\n";
  } catch (const PolicyError& e) {
    std::cout << Json{{"code", 7}, {"msg", e.what()}}.dump() << "\n";
  }
  return 1;
}
