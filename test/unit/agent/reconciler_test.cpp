// Tests for agent/reconciler over the plugin test world (fake delegates, fake namespaces, one
// MemoryCache, a scripted API server): a sandbox ADDed by the CNI verbs gains and loses networks
// when its pod's annotation changes — through the delegates' ADD and DEL, recorded in the cache,
// with exactly GET NAD, PUT pods/status and one event per change on one API connection — and is
// left alone when nothing changed, when its entry is not complete, when the annotation is invalid
// or asks for a default route; a failing delegate leaves it as it was and is reported.
#include "agent/reconciler.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "engine/entry_state.h"
#include "k8s/network_status.h"
#include "k8s/pod.h"
#include "plugin/fakes.h"

using manifold::Json;
using manifold::agent::ReconcileOutcome;
using manifold::agent::Reconciler;
using manifold::agent::ReconcileResult;
using manifold::test::Call;
using manifold::test::Env;
using manifold::test::World;

namespace {

constexpr const char* kCniDir = "/var/lib/cni/manifold-test";
constexpr const char* kPodArgs =
    "K8S_POD_NAMESPACE=team-a;K8S_POD_NAME=web-1;K8S_POD_UID=uid-1;K8S_POD_INFRA_CONTAINER_ID=ctr1";
const std::string kPodPath = "/api/v1/namespaces/team-a/pods/web-1";

Json config_of(const World& w) {
  return {{"cniVersion", "1.0.0"},
          {"name", "manifold-net"},
          {"type", "manifold"},
          {"cniDir", kCniDir},
          {"logToStderr", false},
          {"binDir", w.bin.str()},
          {"kubeconfig", "/etc/cni/net.d/manifold.d/manifold.kubeconfig"},
          {"delegates", Json::parse(R"([{"cniVersion": "1.0.0", "name": "cluster", "type": "bridge"}])")}};
}

Json pod(const std::string& networks, const std::string& status = "") {
  Json p = Json::parse(R"({"apiVersion": "v1", "kind": "Pod", "spec": {}, "status": {}})");
  p["metadata"] = {{"name", "web-1"}, {"namespace", "team-a"}, {"uid", "uid-1"}, {"resourceVersion", "42"}};
  p["metadata"]["annotations"] = Json::object();
  if (!networks.empty()) p["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] = networks;
  if (!status.empty()) p["metadata"]["annotations"][manifold::k8s::kNetworkStatusAnnotation] = status;
  return p;
}

Json nad(const std::string& name, const std::string& type) {
  Json n = Json::parse(R"({"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition"})");
  n["metadata"] = {{"name", name}, {"namespace", "team-a"}};
  n["spec"] = {{"config", R"({"cniVersion":"1.0.0","type":")" + type + R"(","master":"eth1"})"}};
  return n;
}

std::vector<std::string> requests_since(const World& w, std::size_t from) {
  std::vector<std::string> out;
  const auto& r = w.http.requests();
  for (std::size_t i = from; i < r.size(); ++i) out.push_back(r[i].method + " " + r[i].target);
  return out;
}

std::vector<std::string> ifnames(World& w) {
  std::vector<std::string> out;
  auto record = w.cache.load(World::key("ctr1"));
  REQUIRE(record);
  for (const auto& a : record->attachments) out.push_back(a.ifname);
  return out;
}

std::vector<std::string> briefs_since(const World& w, std::size_t from) {
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
ReconcileOutcome attach_blue(Sandbox& s, Reconciler& reconciler) {
  s.w.http.push_response(200, nad("blue", "macvlan").dump());
  s.w.http.push_response(200, pod("blue").dump());
  s.w.http.push_response(201, R"({"kind":"Event"})");
  return s.reconcile(reconciler, "blue");
}

}  // namespace

TEST_CASE("reconciler: an annotation change attaches and detaches through the delegates", "[agent]") {
  Sandbox s("", {});
  World& w = s.w;
  Reconciler reconciler(w.services(), {kCniDir, ""});
  const std::size_t calls = w.calls().size(), requests = w.http.requests().size();

  ReconcileOutcome added = attach_blue(s, reconciler);
  INFO(added.message);
  CHECK(added.result == ReconcileResult::Changed);
  CHECK(added.attached == 1);
  CHECK(added.api_requests == 3);
  CHECK(briefs_since(w, calls) == std::vector<std::string>{"macvlan ADD net1"});
  CHECK(w.has_link(w.netns_path, "net1"));
  CHECK(ifnames(w) == std::vector<std::string>{"eth0", "net1"});
  CHECK(requests_since(w, requests) ==
        std::vector<std::string>{"GET /apis/k8s.cni.cncf.io/v1/namespaces/team-a/network-attachment-definitions/blue",
                                 "PUT " + kPodPath + "/status", "POST /api/v1/namespaces/team-a/events"});
  const auto& put = w.http.requests()[requests + 1];
  Json status = Json::parse(
      Json::parse(put.body)["metadata"]["annotations"][manifold::k8s::kNetworkStatusAnnotation].get<std::string>());
  REQUIRE(status.size() == 2);
  CHECK(status[1]["name"] == "team-a/blue");
  CHECK(status[1]["interface"] == "net1");
  CHECK(Json::parse(w.http.requests().back().body)["reason"] == "AddedInterface");
  s.status = Json::parse(put.body)["metadata"]["annotations"][manifold::k8s::kNetworkStatusAnnotation];

  // Nothing changed: no delegate, no request.
  const std::size_t calls2 = w.calls().size(), requests2 = w.http.requests().size();
  CHECK(s.reconcile(reconciler, "blue").result == ReconcileResult::Unchanged);
  CHECK(w.calls().size() == calls2);
  CHECK(w.http.requests().size() == requests2);

  // Removed again: the delegate's DEL, the entry without it, the status and a RemovedInterface event.
  w.http.push_response(200, pod("").dump());
  w.http.push_response(201, R"({"kind":"Event"})");
  ReconcileOutcome removed = s.reconcile(reconciler, "");
  CHECK(removed.result == ReconcileResult::Changed);
  CHECK(removed.detached == 1);
  CHECK(briefs_since(w, calls2) == std::vector<std::string>{"macvlan DEL net1"});
  CHECK_FALSE(w.has_link(w.netns_path, "net1"));
  CHECK(ifnames(w) == std::vector<std::string>{"eth0"});
  Json event = Json::parse(w.http.requests().back().body);
  CHECK(event["reason"] == "RemovedInterface");
  CHECK(event["message"] == "Remove net1 from team-a/blue");
  // Every reconcile shared one API connection.
  CHECK(w.transports_opened == 2);  // the ADD's, and the reconciler's
}

TEST_CASE("reconciler: entries that are not complete, and other pods, are left alone", "[agent]") {
  Sandbox s("", {});
  World& w = s.w;
  Reconciler reconciler(w.services(), {kCniDir, ""});
  auto record = w.cache.load(World::key("ctr1"));
  REQUIRE(record);
  for (auto state : {manifold::engine::EntryState::Adding, manifold::engine::EntryState::Deleting}) {
    manifold::engine::set_entry_state(*record, state);
    w.cache.save(*record);
    CHECK(s.reconcile(reconciler, "blue").result == ReconcileResult::NotHere);
  }
  manifold::engine::set_entry_state(*record, manifold::engine::EntryState::Complete);
  w.cache.save(*record);
  Json other = pod("blue", s.status);
  other["metadata"]["uid"] = "uid-2";  // a pod of the same name that is not the sandbox's
  CHECK(reconciler.reconcile(manifold::k8s::decode_pod(other)).result == ReconcileResult::NotHere);
  CHECK(w.http.pending() == 0);
}

TEST_CASE("reconciler: an invalid annotation or a default-route request changes nothing", "[agent]") {
  Sandbox s("", {});
  World& w = s.w;
  Reconciler reconciler(w.services(), {kCniDir, ""});
  const std::size_t calls = w.calls().size();
  w.http.push_response(201, R"({"kind":"Event"})");
  ReconcileOutcome bad = s.reconcile(reconciler, R"([{"name": "blue", "interface": "a/b"}])");
  CHECK(bad.result == ReconcileResult::Invalid);
  CHECK(Json::parse(w.http.requests().back().body)["reason"] == "InvalidNetworks");
  w.http.push_response(201, R"({"kind":"Event"})");
  ReconcileOutcome route = s.reconcile(reconciler, R"([{"name": "blue", "default-route": ["10.1.1.1"]}])");
  CHECK(route.result == ReconcileResult::Invalid);
  CHECK_THAT(route.message, Catch::Contains("default-route"));
  CHECK(w.calls().size() == calls);
  CHECK(ifnames(w) == std::vector<std::string>{"eth0"});
}

TEST_CASE("reconciler: a failing delegate leaves the pod as it was and is reported", "[agent]") {
  Sandbox s("blue", {"blue"});
  World& w = s.w;
  Reconciler reconciler(w.services(), {kCniDir, ""});
  w.intercept = [](const Call& c) -> std::optional<manifold::exec::ProcessResult> {
    if (c.command == "ADD" && c.type == "ptp") return manifold::test::cni_error_answer(11, "no VF left");
    return std::nullopt;
  };
  const std::size_t calls = w.calls().size();
  w.http.push_response(200, nad("green", "ptp").dump());
  w.http.push_response(201, R"({"kind":"Event"})");
  ReconcileOutcome failed = s.reconcile(reconciler, "blue,green");
  CHECK(failed.result == ReconcileResult::Failed);
  CHECK(failed.failed_step == "attach");
  CHECK_THAT(failed.message, Catch::Contains("no VF left"));
  // The failed ADD was rolled back with its DEL; blue was never touched.
  CHECK(briefs_since(w, calls) == std::vector<std::string>{"ptp ADD net2", "ptp DEL net2"});
  CHECK(ifnames(w) == std::vector<std::string>{"eth0", "net1"});
  Json event = Json::parse(w.http.requests().back().body);
  CHECK(event["reason"] == "NetworkChangeFailed");
  CHECK(event["type"] == "Warning");
}

TEST_CASE("reconciler: a hot-plugged network naming a device resource is refused, nothing attached", "[agent]") {
  Sandbox s("", {});
  World& w = s.w;
  Reconciler reconciler(w.services(), {kCniDir, ""});
  const std::size_t calls = w.calls().size();
  Json sriov = nad("sriov", "sriov");
  sriov["metadata"]["annotations"] = {{"k8s.v1.cni.cncf.io/resourceName", "intel.com/sriov"}};
  w.http.push_response(200, sriov.dump());
  w.http.push_response(201, R"({"kind":"Event"})");
  ReconcileOutcome refused = s.reconcile(reconciler, "sriov");
  CHECK(refused.result == ReconcileResult::Failed);
  CHECK_THAT(refused.message, Catch::Contains("cannot get a kubelet device"));
  CHECK(w.kubelet_calls == 0);  // the kubelet is never asked for a running pod
  CHECK(w.calls().size() == calls);
  CHECK(ifnames(w) == std::vector<std::string>{"eth0"});
  CHECK(Json::parse(w.http.requests().back().body)["reason"] == "NetworkChangeFailed");
}

TEST_CASE("reconciler: the agent's own API calls never go through the relay", "[agent]") {
  Sandbox s("", {});
  World& w = s.w;
  int relays_opened = 0;
  manifold::engine::Services services = w.services();
  services.open_relay = [&relays_opened](const std::string&, const manifold::http::ClusterAuth&,
                                         std::function<std::unique_ptr<manifold::http::HttpTransport>()> direct) {
    ++relays_opened;
    return direct();
  };
  Reconciler reconciler(services, {kCniDir, ""});
  ReconcileOutcome added = attach_blue(s, reconciler);
  INFO(added.message);
  CHECK(added.result == ReconcileResult::Changed);
  CHECK(added.api_requests == 3);
  CHECK(relays_opened == 0);
}
