// The reconciler tests' world: a sandbox ADDed by the CNI verbs over the plugin test world (fake
// delegates, fake namespaces, one MemoryCache, a scripted API server), the pod and NAD objects its
// API answers carry, and what the tests read back (requests, delegate calls, interface names).
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "agent/reconciler.h"
#include "k8s/network_status.h"
#include "k8s/pod.h"
#include "plugin/fakes.h"

namespace manifold::test::hotplug {

using manifold::Json;
using manifold::agent::ReconcileOutcome;
using manifold::agent::Reconciler;

inline constexpr const char* kCniDir = "/var/lib/cni/manifold-test";
inline constexpr const char* kPodArgs =
    "K8S_POD_NAMESPACE=team-a;K8S_POD_NAME=web-1;K8S_POD_UID=uid-1;K8S_POD_INFRA_CONTAINER_ID=ctr1";
inline const std::string kPodPath = "/api/v1/namespaces/team-a/pods/web-1";

/// The reconciler's options in these tests: the test cache, the ADD's credentials, the policy of
/// `conf_dir` ("" = the ADD's) and at most `max_changes` changes per reconcile.
inline manifold::agent::ReconcilerOptions options(const std::string& conf_dir = "", std::size_t max_changes = 4) {
  manifold::agent::ReconcilerOptions o;
  o.cni_dir = kCniDir;
  o.conf_dir = conf_dir;
  o.max_changes = max_changes;
  return o;
}

inline Json config_of(const World& w) {
  return {{"cniVersion", "1.0.0"},
          {"name", "manifold-net"},
          {"type", "manifold"},
          {"cniDir", kCniDir},
          {"logToStderr", false},
          {"binDir", w.bin.str()},
          {"kubeconfig", "/etc/cni/net.d/manifold.d/manifold.kubeconfig"},
          {"delegates", Json::parse(R"([{"cniVersion": "1.0.0", "name": "cluster", "type": "bridge"}])")}};
}

inline Json pod(const std::string& networks, const std::string& status = "") {
  Json p = Json::parse(R"({"apiVersion": "v1", "kind": "Pod", "spec": {}, "status": {}})");
  p["metadata"] = {{"name", "web-1"}, {"namespace", "team-a"}, {"uid", "uid-1"}, {"resourceVersion", "42"}};
  p["metadata"]["annotations"] = Json::object();
  if (!networks.empty()) p["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] = networks;
  if (!status.empty()) p["metadata"]["annotations"][manifold::k8s::kNetworkStatusAnnotation] = status;
  return p;
}

inline Json nad(const std::string& name, const std::string& type) {
  Json n = Json::parse(R"({"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition"})");
  n["metadata"] = {{"name", name}, {"namespace", "team-a"}};
  n["spec"] = {{"config", R"({"cniVersion":"1.0.0","type":")" + type + R"(","master":"eth1"})"}};
  return n;
}

inline std::vector<std::string> requests_since(const World& w, std::size_t from) {
  std::vector<std::string> out;
  const auto& r = w.http.requests();
  for (std::size_t i = from; i < r.size(); ++i) out.push_back(r[i].method + " " + r[i].target);
  return out;
}

inline std::vector<std::string> ifnames(World& w) {
  std::vector<std::string> out;
  auto record = w.cache.load(World::key("ctr1"));
  REQUIRE(record);
  for (const auto& a : record->attachments) out.push_back(a.ifname);
  return out;
}

inline std::vector<std::string> briefs_since(const World& w, std::size_t from) {
  std::vector<std::string> out;
  for (const Call& c : w.calls_since(from)) out.push_back(c.brief());
  return out;
}

/// The world after the runtime's ADD of the pod with `networks` (each NAD is macvlan).
struct Sandbox {
  World w;
  std::string status;  ///< the network-status the ADD wrote

  explicit Sandbox(const std::string& networks, const std::vector<std::string>& nads) {
    manifold::http::ClusterAuth auth;
    auth.server = "https://10.96.0.1:443";
    auth.token = "agent-token";
    w.auth = auth;
    w.http.push_response(200, pod(networks).dump());
    for (const auto& n : nads) w.http.push_response(200, nad(n, "macvlan").dump());
    w.http.push_response(200, pod(networks).dump());  // the PUT's answer
    for (std::size_t i = 0; i <= nads.size(); ++i) w.http.push_response(201, R"({"kind":"Event"})");
    Env env;
    env.args = kPodArgs;
    auto out = w.run("ADD", config_of(w), env);
    INFO(out.stdout_text);
    REQUIRE(out.exit_code == 0);
    for (const auto& r : w.http.requests())
      if (r.method == "PUT")
        status = Json::parse(r.body)["metadata"]["annotations"][manifold::k8s::kNetworkStatusAnnotation];
    REQUIRE(!status.empty());
  }

  ReconcileOutcome reconcile(Reconciler& r, const std::string& networks) {
    return r.reconcile(manifold::k8s::decode_pod(pod(networks, status)));
  }
};

/// Reconciles the annotation "blue" with the API answers attaching it needs scripted: the NAD, the
/// status PUT's pod, the event.
inline ReconcileOutcome attach_blue(Sandbox& s, Reconciler& reconciler) {
  s.w.http.push_response(200, nad("blue", "macvlan").dump());
  s.w.http.push_response(200, pod("blue").dump());
  s.w.http.push_response(201, R"({"kind":"Event"})");
  return s.reconcile(reconciler, "blue");
}

/// Answers a pass that attaches `names` (each a macvlan NAD of team-a): the NADs, the status PUT's
/// pod, one event each.
inline void script_attach(World& w, const std::vector<std::string>& names) {
  for (const auto& n : names) w.http.push_response(200, nad(n, "macvlan").dump());
  w.http.push_response(200, pod("").dump());
  for (std::size_t i = 0; i < names.size(); ++i) w.http.push_response(201, R"({"kind":"Event"})");
}

/// The reasons of the events posted since request `from`.
inline std::vector<std::string> event_reasons_since(const World& w, std::size_t from) {
  std::vector<std::string> out;
  const auto& r = w.http.requests();
  for (std::size_t i = from; i < r.size(); ++i)
    if (r[i].method == "POST") out.push_back(Json::parse(r[i].body)["reason"]);
  return out;
}

}  // namespace manifold::test::hotplug
