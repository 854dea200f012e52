// Test data shared by the policy evaluation, rule builder and lifecycle tests: a small cluster
// (pods with labels, named ports and network-status; namespaces with labels) and builders for
// policy objects, so every test states only what it is about.
#pragma once

#include <string>
#include <vector>

#include "policy/evaluate.h"
#include "policy/pod_view.h"
#include "policy/policy.h"
#include "util/json.h"

namespace manifold::test {

/// A pod object in `ns` named `name` with `labels` (JSON object text), IPs on "default/blue" (and on
/// "default/red" when given), and the named ports http 8080/TCP and dns 53/UDP.
inline Json policy_pod(const std::string& ns, const std::string& name, const std::string& labels,
                       const std::vector<std::string>& blue_ips, const std::vector<std::string>& red_ips = {}) {
  Json status = Json::array();
  status.push_back({{"name", "cluster"}, {"interface", "eth0"}, {"ips", {"10.244.0.9"}}, {"default", true}});
  if (!blue_ips.empty()) status.push_back({{"name", "default/blue"}, {"interface", "net1"}, {"ips", blue_ips}});
  if (!red_ips.empty()) status.push_back({{"name", "default/red"}, {"interface", "net2"}, {"ips", red_ips}});
  Json pod = {{"metadata",
               {{"name", name},
                {"namespace", ns},
                {"labels", Json::parse(labels)},
                {"annotations", {{"k8s.v1.cni.cncf.io/network-status", status.dump()}}}}},
              {"spec",
               {{"containers",
                 {{{"name", "c"},
                   {"ports",
                    {{{"name", "http"}, {"containerPort", 8080}},
                     {{"name", "dns"}, {"containerPort", 53}, {"protocol", "UDP"}}}}}}}}}};
  return pod;
}

/// A MultiNetworkPolicy named `name` in "default" covering `policy_for`, with `spec` (JSON text).
inline policy::MultiNetworkPolicy policy_of(const std::string& name, const std::string& spec,
                                            const std::string& policy_for = "blue") {
  Json object = {
      {"metadata",
       {{"name", name}, {"namespace", "default"}, {"annotations", {{"k8s.v1.cni.cncf.io/policy-for", policy_for}}}}},
      {"spec", Json::parse(spec)}};
  return policy::read_policy(object);
}

/// The attachment's pod: default/web, app=web, on blue with 10.1.0.10 and 2001:db8:1::10.
inline policy::PodView web_pod() {
  return policy::read_pod_view(policy_pod("default", "web", R"({"app": "web"})", {"10.1.0.10", "2001:db8:1::10"}));
}

/// Peers: default/client-a (role=client, blue 10.1.0.5 + 2001:db8:1::5), default/client-b (role=client,
/// no blue attachment, red only), default/db (role=db, blue 10.1.0.7), team-a/client-c (role=client,
/// blue 10.1.0.8), team-b/client-d (role=client, blue 10.1.0.9); namespaces team-a (team=a),
/// team-b (team=b), default (no labels).
inline policy::PeerWorld peer_world() {
  policy::PeerWorld w;
  w.pods.push_back(
      policy::read_pod_view(policy_pod("default", "client-a", R"({"role": "client"})", {"10.1.0.5", "2001:db8:1::5"})));
  w.pods.push_back(policy::read_pod_view(policy_pod("default", "client-b", R"({"role": "client"})", {}, {"10.2.0.5"})));
  w.pods.push_back(policy::read_pod_view(policy_pod("default", "db", R"({"role": "db"})", {"10.1.0.7"})));
  w.pods.push_back(policy::read_pod_view(policy_pod("team-a", "client-c", R"({"role": "client"})", {"10.1.0.8"})));
  w.pods.push_back(policy::read_pod_view(policy_pod("team-b", "client-d", R"({"role": "client"})", {"10.1.0.9"})));
  w.namespaces = {{"default", {}}, {"team-a", {{"team", "a"}}}, {"team-b", {{"team", "b"}}}};
  return w;
}

/// The golden example's policy: web accepts role=client pods of its namespace on port http and
/// 9000-9010, 192.0.2.0/24 except 192.0.2.128/25 on every port, and may reach 198.51.100.0/24 on
/// UDP 53 and db on http.
inline policy::MultiNetworkPolicy golden_policy() {
  return policy_of("allow-clients", R"({
    "podSelector": {"matchLabels": {"app": "web"}},
    "policyTypes": ["Ingress", "Egress"],
    "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "client"}}}],
                 "ports": [{"port": "http"}, {"port": 9000, "endPort": 9010}]},
                {"from": [{"ipBlock": {"cidr": "192.0.2.0/24", "except": ["192.0.2.128/25"]}}]}],
    "egress": [{"to": [{"ipBlock": {"cidr": "198.51.100.0/24"}}], "ports": [{"protocol": "UDP", "port": 53}]},
               {"to": [{"podSelector": {"matchLabels": {"role": "db"}}}], "ports": [{"port": "http"}]}]})");
}

}  // namespace manifold::test
