// Tests for agent/reconciler over the plugin test world (fake delegates, fake namespaces, one
// MemoryCache, a scripted API server): a sandbox ADDed by the CNI verbs gains and loses networks
// when its pod's annotation changes — through the delegates' ADD and DEL, recorded in the cache,
// with exactly GET NAD, PUT pods/status and one event per change on one API connection — and is
// left alone when nothing changed, when its entry is not complete, when the annotation is invalid
// or asks for a default route; a failing delegate leaves it as it was and is reported. Many
// changes are made a few per reconcile; what can never succeed (isolation, a taken name) is Invalid.
#include "agent/reconciler.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "engine/entry_state.h"
#include "agent/hotplug_world.h"
#include "k8s/network_status.h"
#include "k8s/pod.h"

using manifold::Json;
using manifold::agent::ReconcileOutcome;
using manifold::agent::Reconciler;
using manifold::agent::ReconcileResult;
using manifold::test::Call;
using manifold::test::World;
using namespace manifold::test::hotplug;  // NOLINT: the fixture of every test here

TEST_CASE("reconciler: an annotation change attaches and detaches through the delegates", "[agent]") {
  Sandbox s("", {});
  World& w = s.w;
  Reconciler reconciler(w.services(), options());
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
  Reconciler reconciler(w.services(), options());
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
  Reconciler reconciler(w.services(), options());
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
  Reconciler reconciler(w.services(), options());
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
  Reconciler reconciler(w.services(), options());
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
  services.open_relay = [&relays_opened](const std::string&, const manifold::http::ClusterAuth&, const std::string&,
                                         std::function<std::unique_ptr<manifold::http::HttpTransport>()> direct) {
    ++relays_opened;
    return direct();
  };
  Reconciler reconciler(services, options());
  ReconcileOutcome added = attach_blue(s, reconciler);
  INFO(added.message);
  CHECK(added.result == ReconcileResult::Changed);
  CHECK(added.api_requests == 3);
  CHECK(relays_opened == 0);
}

TEST_CASE("reconciler: many networks are attached a few per reconcile, the rest reported as more", "[agent]") {
  Sandbox s("", {});
  World& w = s.w;
  Reconciler reconciler(w.services(), options("", 2));
  const std::size_t calls = w.calls().size();
  script_attach(w, {"a", "b"});
  ReconcileOutcome first = s.reconcile(reconciler, "a,b,c");
  INFO(first.message);
  CHECK(first.result == ReconcileResult::Changed);
  CHECK(first.attached == 2);
  CHECK(first.more);
  CHECK(ifnames(w) == std::vector<std::string>{"eth0", "net1", "net2"});
  script_attach(w, {"c"});
  ReconcileOutcome second = s.reconcile(reconciler, "a,b,c");
  CHECK(second.result == ReconcileResult::Changed);
  CHECK(second.attached == 1);
  CHECK_FALSE(second.more);
  CHECK(briefs_since(w, calls) == std::vector<std::string>{"macvlan ADD net1", "macvlan ADD net2", "macvlan ADD net3"});
  // Detaching is bounded the same way.
  w.http.push_response(200, pod("").dump());
  for (int i = 0; i < 2; ++i) w.http.push_response(201, R"({"kind":"Event"})");
  ReconcileOutcome removed = s.reconcile(reconciler, "");
  CHECK(removed.detached == 2);
  CHECK(removed.more);
  CHECK(ifnames(w) == std::vector<std::string>{"eth0", "net3"});
}

TEST_CASE("reconciler: what can never succeed is Invalid with one warning, not a failure to retry", "[agent]") {
  Sandbox s("", {});
  World& w = s.w;
  const std::string conf_dir = "/etc/cni/net.d-test";
  Reconciler reconciler(w.services(), options(conf_dir));
  const std::size_t calls = w.calls().size(), requests = w.http.requests().size();

  // The node's config turned namespaceIsolation on after the pod's ADD: it applies to the hot-plug.
  Json generated = {{"cniVersion", "1.0.0"}, {"name", "manifold-net"}, {"plugins", Json::array({config_of(w)})}};
  generated["plugins"][0]["namespaceIsolation"] = true;
  w.files->add(conf_dir + "/00-manifold.conflist", generated.dump());
  w.http.push_response(201, R"({"kind":"Event"})");
  ReconcileOutcome isolated = s.reconcile(reconciler, "team-b/blue");
  CHECK(isolated.result == ReconcileResult::Invalid);
  CHECK_THAT(isolated.message, Catch::Contains("team-b"));

  // An interface name the pod already has (not made by manifold).
  w.ns().add_link("net5");
  w.http.push_response(200, nad("blue", "macvlan").dump());
  w.http.push_response(201, R"({"kind":"Event"})");
  ReconcileOutcome taken = s.reconcile(reconciler, R"([{"name": "blue", "interface": "net5"}])");
  CHECK(taken.result == ReconcileResult::Invalid);
  CHECK_THAT(taken.message, Catch::Contains("net5"));

  CHECK(w.calls().size() == calls);  // no delegate ran
  CHECK(ifnames(w) == std::vector<std::string>{"eth0"});
  CHECK(event_reasons_since(w, requests) == std::vector<std::string>{"InvalidNetworks", "InvalidNetworks"});
  CHECK(w.http.pending() == 0);
}

TEST_CASE("reconciler: a retry failing as the pod was told already sends no second warning", "[agent]") {
  Sandbox s("", {});
  World& w = s.w;
  Reconciler reconciler(w.services(), options());
  const std::size_t requests = w.http.requests().size();
  const std::string not_found =
      R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404})";
  w.http.push_response(404, not_found);
  w.http.push_response(201, R"({"kind":"Event"})");
  ReconcileOutcome first = s.reconcile(reconciler, "late");
  CHECK(first.result == ReconcileResult::Failed);  // the NAD may come: worth retrying
  CHECK_THAT(first.message, Catch::Contains("late"));
  w.http.push_response(404, not_found);
  ReconcileOutcome again = reconciler.reconcile(manifold::k8s::decode_pod(pod("late", s.status)), first.message);
  CHECK(again.result == ReconcileResult::Failed);
  CHECK(again.message == first.message);
  CHECK(event_reasons_since(w, requests) == std::vector<std::string>{"NetworkChangeFailed"});
  CHECK(w.http.pending() == 0);
}
