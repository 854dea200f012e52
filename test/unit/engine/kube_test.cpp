// Tests of the plugin's Kubernetes layer against a scripted transport and a fake clock: attachment
// resolution from a pod (selection-element overrides reach runtimeConfig and CNI_ARGS, a NAD listed
// twice is fetched once), the pod check (wrong types, UID mismatch, static pods), the
// network-status write (409 → re-GET → retry, a replaced pod), and the API-time bound, which
// counts only the time spent in API calls, not the time delegates run between them.
#include <catch2/catch.hpp>

#include "forward_transport.h"
#include "cni/error.h"
#include "cni/netconf.h"
#include "engine/cached.h"
#include "engine/kube_access.h"
#include "engine/pod_networks.h"
#include "engine/pod_status.h"
#include "http/http.h"
#include "http/retry.h"
#include "plugin/cni/verbs.h"
#include "util/clock.h"
#include "util/file_reader.h"

using manifold::Json;
using manifold::cni::CniError;
namespace http = manifold::http;
namespace k8s = manifold::k8s;
namespace kubelet = manifold::kubelet;
namespace cni = manifold::cni;
namespace plugin = manifold::plugin;
namespace engine = manifold::engine;
namespace util = manifold::util;

namespace {

/// Lets KubeAccess own a transport while the test keeps scripting the FakeHttpTransport.
using SharedTransport = manifold::test::Forward<http::FakeHttpTransport>;

struct Fixture {
  http::FakeHttpTransport transport;
  std::vector<std::string> session_dirs;
  std::shared_ptr<util::FakeClock> clock = std::make_shared<util::FakeClock>();
  plugin::Services services;
  cni::MetaConfig config;
  cni::Invocation inv;

  explicit Fixture(const std::string& extra_config = "{}") {
    services.find_auth = [](const std::string&) {
      http::ClusterAuth auth;
      auth.server = "https://127.0.0.1:6443";
      auth.token = "secret-token";
      return std::optional<http::ClusterAuth>(auth);
    };
    services.open_transport = [this](const http::ClusterAuth&,
                                     const std::string& session_dir) -> std::unique_ptr<http::HttpTransport> {
      session_dirs.push_back(session_dir);
      return std::make_unique<SharedTransport>(transport);
    };
    services.clock = clock;
    services.sleeper = std::make_shared<util::FakeSleeper>(*clock);
    Json conf = Json::parse(R"({"cniVersion":"1.0.0","name":"m","type":"manifold","kubeconfig":"/kc",
      "delegates":[{"cniVersion":"1.0.0","name":"cluster","type":"bridge"}]})");
    const Json extra = Json::parse(extra_config);
    for (const auto& [k, v] : extra.items()) conf[k] = v;
    config = cni::parse_meta_config(conf);
    inv.container_id = "c1";
    inv.ifname = "eth0";
    inv.args = cni::CniArgs::parse("K8S_POD_NAMESPACE=default;K8S_POD_NAME=web;K8S_POD_UID=u1");
  }

  cni::PodRef ref() const { return cni::pod_ref_from(inv.args); }
};

Json pod_with(const Json& annotations, const std::string& uid = "u1") {
  Json pod = {{"kind", "Pod"},
              {"metadata", {{"name", "web"}, {"namespace", "default"}, {"uid", uid}, {"resourceVersion", "5"}}}};
  if (!annotations.is_null()) pod["metadata"]["annotations"] = annotations;
  return pod;
}

/// The pod of `object`, decoded as the engine gets it from the API.
k8s::Pod as_pod(const Json& object) { return k8s::decode_pod(object); }

std::string nad(const std::string& ns, const std::string& name, const std::string& config) {
  Json j = {{"kind", "NetworkAttachmentDefinition"},
            {"metadata", {{"name", name}, {"namespace", ns}}},
            {"spec", {{"config", config}}}};
  return j.dump();
}

const char* kMacvlan = R"({"cniVersion":"1.0.0","type":"macvlan","master":"eth9","ipam":{"type":"static"}})";

}  // namespace

TEST_CASE("kube attachments: JSON selection fields reach runtimeConfig and CNI_ARGS", "[plugin]") {
  Fixture f;
  f.transport.push_response(200, nad("default", "tuned", kMacvlan));
  Json pod =
      pod_with({{"k8s.v1.cni.cncf.io/networks",
                 R"([{"name":"tuned","interface":"data0","ips":["198.51.100.42/24"],"mac":"02:00:5e:10:00:42"}])"}});
  engine::KubeAccess kube(f.services, f.config);
  kubelet::DeviceAllocator devices;
  auto out = engine::resolve_pod_attachments(f.config, f.inv, kube, as_pod(pod), devices);
  REQUIRE(out.size() == 2);
  CHECK(out[0].ifname == "eth0");
  CHECK(out[0].cluster_network);
  const auto& a = out[1];
  CHECK(a.name == "default/tuned");
  CHECK(a.ifname == "data0");
  CHECK(a.delegate["name"] == "tuned");
  CHECK(a.runtime_config["ips"] == Json::array({"198.51.100.42/24"}));
  CHECK(a.runtime_config["mac"] == "02:00:5e:10:00:42");
  using Pair = std::pair<std::string, std::string>;
  CHECK(a.extra_args == std::vector<Pair>{{"IP", "198.51.100.42/24"}, {"MAC", "02:00:5e:10:00:42"}});
  CHECK(out[0].runtime_config.empty());
  CHECK(kube.requests_made() == 1);
  // One transport, resuming the TLS sessions kept beside the cache.
  CHECK(f.session_dirs == std::vector<std::string>{f.config.cni_dir + "/.tls"});
}

TEST_CASE("kube attachments: a NAD listed twice is fetched once and attached twice", "[plugin]") {
  Fixture f;
  f.transport.push_response(200, nad("default", "pool", kMacvlan));
  Json pod = pod_with({{"k8s.v1.cni.cncf.io/networks", "pool, default/pool"}});
  engine::KubeAccess kube(f.services, f.config);
  kubelet::DeviceAllocator devices;
  auto out = engine::resolve_pod_attachments(f.config, f.inv, kube, as_pod(pod), devices);
  REQUIRE(out.size() == 3);
  CHECK(out[1].ifname == "net1");
  CHECK(out[2].ifname == "net2");
  CHECK(out[1].name == "default/pool");
  CHECK(out[2].name == "default/pool");
  CHECK(f.transport.requests().size() == 1);
}

TEST_CASE("kube attachments: a wrongly typed pod is a decoding error, nothing else is fetched", "[plugin]") {
  Fixture f;
  Json pod = pod_with(nullptr);
  pod["metadata"]["annotations"] = Json::array({"wrong", "type"});
  f.transport.push_response(200, pod.dump());
  engine::KubeAccess kube(f.services, f.config);
  try {
    engine::fetch_pod(kube, f.ref());
    FAIL("no error");
  } catch (const CniError& e) {
    CHECK(e.code() == 6u);
    CHECK_THAT(e.msg(), Catch::Contains("default/web") && Catch::Contains("annotations"));
  }
  CHECK(f.transport.requests().size() == 1);
}

TEST_CASE("kube attachments: UID mismatch fails except for static pods", "[plugin]") {
  Fixture f;
  f.transport.push_response(200, pod_with(Json::object(), "u2").dump());
  f.transport.push_response(200, pod_with({{"kubernetes.io/config.source", "file"}}, "u2").dump());
  engine::KubeAccess kube(f.services, f.config);
  CHECK_THROWS_WITH(engine::fetch_pod(kube, f.ref()), Catch::Contains("expected pod UID \"u1\" but got \"u2\""));
  CHECK(engine::fetch_pod(kube, f.ref()).uid == "u2");
}

TEST_CASE("kube status: a 409 re-reads the pod and retries with its resourceVersion", "[plugin]") {
  Fixture f;
  const std::string conflict = R"({"kind":"Status","reason":"Conflict","code":409,"message":"modified"})";
  Json fresh = pod_with({{"other", "x"}});
  fresh["metadata"]["resourceVersion"] = "9";
  f.transport.push_response(409, conflict);
  f.transport.push_response(200, fresh.dump());
  f.transport.push_response(200, fresh.dump());
  engine::KubeAccess kube(f.services, f.config);
  engine::write_network_status(kube, f.ref(), as_pod(pod_with(Json::object())), "[]");
  const auto& reqs = f.transport.requests();
  REQUIRE(reqs.size() == 3);
  CHECK(reqs[0].method == "PUT");
  CHECK(reqs[1].method == "GET");
  CHECK(reqs[2].method == "PUT");
  Json last = Json::parse(reqs[2].body);
  CHECK(last["metadata"]["resourceVersion"] == "9");
  CHECK(last["metadata"]["annotations"]["other"] == "x");
  CHECK(last["metadata"]["annotations"]["k8s.v1.cni.cncf.io/network-status"] == "[]");
  CHECK(Json::parse(reqs[0].body)["metadata"]["resourceVersion"] == "5");
}

TEST_CASE("kube status: a pod replaced during the ADD is not written", "[plugin]") {
  Fixture f;
  f.transport.push_response(409, R"({"kind":"Status","reason":"Conflict","code":409})");
  f.transport.push_response(200, pod_with(Json::object(), "u-new").dump());
  engine::KubeAccess kube(f.services, f.config);
  CHECK_THROWS_WITH(engine::write_network_status(kube, f.ref(), as_pod(pod_with(Json::object())), "[]"),
                    Catch::Contains("replaced"));
  CHECK(f.transport.requests().size() == 2);
}

TEST_CASE("kube status: a wrongly typed pod on the re-GET is a clear error", "[plugin]") {
  Fixture f;
  Json broken = pod_with(nullptr);
  broken["metadata"]["annotations"] = Json::array();
  f.transport.push_response(409, R"({"kind":"Status","reason":"Conflict","code":409})");
  f.transport.push_response(200, broken.dump());
  engine::KubeAccess kube(f.services, f.config);
  CHECK_THROWS_WITH(engine::write_network_status(kube, f.ref(), as_pod(pod_with(Json::object())), "[]"),
                    Catch::Contains("annotations"));
}

TEST_CASE("kube access: the total bound counts API time, not the time between calls", "[plugin]") {
  Fixture f(R"({"apiTimeouts":{"request":1000,"call":1000,"total":1000,"attempts":1}})");
  f.transport.on_send([&](const http::HttpRequest&) { f.clock->advance(std::chrono::milliseconds(400)); });
  for (int i = 0; i < 3; ++i) f.transport.push_response(200, pod_with(Json::object()).dump());
  engine::KubeAccess kube(f.services, f.config);
  kube.get_pod("default", "web");
  // Delegates run for an hour between the lookups and the status write: that does not count.
  f.clock->advance(std::chrono::hours(1));
  kube.get_pod("default", "web");
  CHECK(kube.api_time() == std::chrono::milliseconds(800));
  // The third call gets only what is left, and afterwards nothing is left at all.
  kube.get_pod("default", "web");
  CHECK(f.transport.timeouts().back() == std::chrono::milliseconds(200));
  CHECK_THROWS_WITH(kube.get_pod("default", "web"), Catch::Contains("apiTimeouts.total"));
  CHECK(kube.requests_made() == 3);
}

namespace {

manifold::store::ContainerRecord three_attachments() {
  manifold::store::ContainerRecord record;
  for (const char* ifname : {"eth0", "net1", "net2"}) {
    manifold::store::AttachmentRecord a;
    a.name = std::string("default/") + ifname;
    a.ifname = ifname;
    a.config = R"({"cniVersion":"1.0.0","name":"x","type":"bridge"})";
    a.result = R"({"cniVersion":"1.0.0","ips":[{"address":"192.0.2.2/24"}]})";
    record.attachments.push_back(a);
  }
  return record;
}

}  // namespace

TEST_CASE("kube status: events go out in one batch, one attempt each, a failure only logged", "[plugin]") {
  Fixture f;
  f.transport.push_response(201, "{}");
  f.transport.push_response(503, R"({"kind":"Status","reason":"ServiceUnavailable","code":503})");
  f.transport.push_response(201, "{}");
  engine::KubeAccess kube(f.services, f.config);
  engine::send_added_events(kube, f.ref(), as_pod(pod_with(Json::object())), three_attachments());
  const auto& reqs = f.transport.requests();
  REQUIRE(reqs.size() == 3);
  CHECK(f.transport.batches() == std::vector<std::size_t>{3});
  Json first = Json::parse(reqs[0].body);
  CHECK(reqs[0].method == "POST");
  CHECK(reqs[0].target == "/api/v1/namespaces/default/events");
  CHECK(first["reason"] == "AddedInterface");
  CHECK(first["message"] == "Add eth0 [192.0.2.2/24] from default/eth0");
  CHECK(first["involvedObject"]["uid"] == "u1");
  CHECK(Json::parse(reqs[1].body)["message"] == "Add net1 [192.0.2.2/24] from default/net1");
  CHECK(Json::parse(reqs[2].body)["message"] == "Add net2 [192.0.2.2/24] from default/net2");
  CHECK(f.transport.pending() == 0);
  CHECK(dynamic_cast<util::FakeSleeper&>(*f.services.sleeper).waits().empty());  // the 503 is not retried
}

TEST_CASE("kube status: the events ride behind the status PUT, in its round trip", "[plugin]") {
  Fixture f;
  auto record = three_attachments();
  std::vector<manifold::cni::Result> results;
  for (const auto& a : record.attachments) results.push_back(engine::decode_attachment_result(a));
  manifold::util::FakeFileReader files;
  f.transport.push_response(200, pod_with(Json::object()).dump());
  for (int i = 0; i < 3; ++i) f.transport.push_response(201, "{}");
  engine::KubeAccess kube(f.services, f.config);
  engine::publish_status(kube, files, f.config, f.inv, as_pod(pod_with(Json::object())), record, results);
  CHECK(f.transport.batches() == std::vector<std::size_t>{4});
  const auto& reqs = f.transport.requests();
  REQUIRE(reqs.size() == 4);
  CHECK(reqs[0].method == "PUT");
  CHECK(reqs[3].method == "POST");
  CHECK(Json::parse(reqs[3].body)["message"] == "Add net2 [192.0.2.2/24] from default/net2");

  SECTION("a 409 re-reads the pod and PUTs again alone; the events are not sent twice") {
    Fixture g;
    g.transport.push_response(409, R"({"kind":"Status","reason":"Conflict","code":409})");
    for (int i = 0; i < 3; ++i) g.transport.push_response(201, "{}");
    g.transport.push_response(200, pod_with(Json::object()).dump());  // the re-GET
    g.transport.push_response(200, pod_with(Json::object()).dump());  // the second PUT
    engine::KubeAccess kube2(g.services, g.config);
    engine::publish_status(kube2, files, g.config, g.inv, as_pod(pod_with(Json::object())), record, results);
    CHECK(g.transport.batches() == std::vector<std::size_t>{4, 1, 1});
    CHECK(g.transport.requests().size() == 6);
    CHECK(g.transport.pending() == 0);
  }
  SECTION("in a system namespace no status is written and the events go alone") {
    Fixture g;
    g.inv.args = cni::CniArgs::parse("K8S_POD_NAMESPACE=kube-system;K8S_POD_NAME=web;K8S_POD_UID=u1");
    for (int i = 0; i < 3; ++i) g.transport.push_response(201, "{}");
    engine::KubeAccess kube2(g.services, g.config);
    engine::publish_status(kube2, files, g.config, g.inv, as_pod(pod_with(Json::object())), record, results);
    CHECK(g.transport.batches() == std::vector<std::size_t>{3});
    CHECK(g.transport.requests()[0].method == "POST");
  }
}

TEST_CASE("kube attachments: every NAD the pod names is fetched in one batch", "[plugin]") {
  Fixture f(R"({"clusterNetwork":"cluster-nad","defaultNetworks":["always"]})");
  f.transport.push_response(200, nad("kube-system", "cluster-nad", kMacvlan));
  f.transport.push_response(200, nad("kube-system", "always", kMacvlan));
  f.transport.push_response(200, nad("default", "a", kMacvlan));
  f.transport.push_response(200, nad("other", "b", kMacvlan));
  Json pod = pod_with({{"k8s.v1.cni.cncf.io/networks", "a, other/b, a"}});
  engine::KubeAccess kube(f.services, f.config);
  kubelet::DeviceAllocator devices;
  auto out = engine::resolve_pod_attachments(f.config, f.inv, kube, as_pod(pod), devices);
  REQUIRE(out.size() == 5);
  CHECK(out[0].name == "kube-system/cluster-nad");
  CHECK(out[1].name == "kube-system/always");
  CHECK(out[2].name == "default/a");
  CHECK(out[3].name == "other/b");
  CHECK(out[4].name == "default/a");
  CHECK(f.transport.batches() == std::vector<std::size_t>{4});  // one round trip, each NAD once
  CHECK(kube.requests_made() == 4);
}

TEST_CASE("kube attachments: a NAD's failure in the batch is reported when resolution reaches it", "[plugin]") {
  Fixture f;
  f.transport.push_response(200, nad("default", "a", kMacvlan));
  f.transport.push_response(403, R"({"kind":"Status","reason":"Forbidden","code":403,"message":"no"})");
  Json pod = pod_with({{"k8s.v1.cni.cncf.io/networks", "a, b"}});
  engine::KubeAccess kube(f.services, f.config);
  kubelet::DeviceAllocator devices;
  CHECK_THROWS_WITH(engine::resolve_pod_attachments(f.config, f.inv, kube, as_pod(pod), devices),
                    Catch::Contains("HTTP 403") && Catch::Contains("\"b\""));
  CHECK(f.transport.batches() == std::vector<std::size_t>{2});

  // Best effort: the same batch, and only the failed network is skipped.
  f.transport.push_response(200, nad("default", "a", kMacvlan));
  f.transport.push_response(403, R"({"kind":"Status","reason":"Forbidden","code":403,"message":"no"})");
  auto lenient =
      engine::resolve_pod_attachments(f.config, f.inv, kube, as_pod(pod), devices, engine::Resolution::BestEffort);
  REQUIRE(lenient.size() == 2);
  CHECK(lenient[1].name == "default/a");
  CHECK(f.transport.batches() == std::vector<std::size_t>{2, 2});
}

TEST_CASE("kube status: events and status entries from results decoded once", "[plugin]") {
  Fixture f;
  manifold::store::ContainerRecord record;
  for (const char* ifname : {"eth0", "net1"}) {
    manifold::store::AttachmentRecord a;
    a.name = std::string("default/") + ifname;
    a.ifname = ifname;
    a.config = R"({"cniVersion":"1.0.0","name":"x","type":"bridge"})";
    a.result = std::string(R"({"cniVersion":"1.0.0","ips":[{"address":"192.0.2.)") + (ifname[0] == 'e' ? "2" : "3") +
               R"(/24"}]})";
    record.attachments.push_back(a);
  }
  std::vector<manifold::cni::Result> results;
  for (const auto& a : record.attachments) results.push_back(engine::decode_attachment_result(a));
  manifold::util::FakeFileReader files;

  SECTION("the status entries equal those decoded from the record") {
    auto from_record = engine::status_inputs(record, files);
    auto from_results = engine::status_inputs(record, results, files);
    CHECK(k8s::render_network_status(from_results) == k8s::render_network_status(from_record));
    REQUIRE(from_results.size() == 2);
    REQUIRE(from_results[1].ips.size() == 1);
    CHECK(from_results[1].ips[0].address == "192.0.2.3/24");
    CHECK(from_results[1].name == "default/net1");
  }
  SECTION("each event names its own attachment; the answers' bodies are not read") {
    f.transport.push_response(201, "this is not JSON");
    f.transport.push_response(201, "");
    engine::KubeAccess kube(f.services, f.config);
    engine::send_added_events(kube, f.ref(), as_pod(pod_with(Json::object())), record, results);
    const auto& reqs = f.transport.requests();
    REQUIRE(reqs.size() == 2);
    Json first = Json::parse(reqs[0].body);
    Json second = Json::parse(reqs[1].body);
    CHECK(first["message"] == "Add eth0 [192.0.2.2/24] from default/eth0");
    CHECK(second["message"] == "Add net1 [192.0.2.3/24] from default/net1");
    CHECK(first["metadata"]["name"] != second["metadata"]["name"]);
    std::vector<std::string> keys;
    for (auto it = second.begin(); it != second.end(); ++it) keys.push_back(it.key());
    CHECK(keys == std::vector<std::string>{"apiVersion", "kind", "metadata", "involvedObject", "reason", "message",
                                           "type", "source", "firstTimestamp", "lastTimestamp", "count",
                                           "reportingComponent", "reportingInstance"});
    CHECK(f.transport.pending() == 0);
  }
  SECTION("a result count that does not match the attachments is an internal error and sends nothing") {
    results.pop_back();
    engine::KubeAccess kube(f.services, f.config);
    try {
      engine::send_added_events(kube, f.ref(), as_pod(pod_with(Json::object())), record, results);
      FAIL("no error");
    } catch (const CniError& e) {
      CHECK(e.code() == 100u);
    }
    CHECK_THROWS_AS(engine::status_inputs(record, results, files), CniError);
    CHECK(f.transport.requests().empty());
  }
}

TEST_CASE("kube attachments: isolation is checked before any NAD is read", "[plugin]") {
  Fixture f(R"({"namespaceIsolation":true})");
  Json pod = pod_with({{"k8s.v1.cni.cncf.io/networks", "own, team-b/secret"}});
  engine::KubeAccess kube(f.services, f.config);
  kubelet::DeviceAllocator devices;
  try {
    engine::resolve_pod_attachments(f.config, f.inv, kube, as_pod(pod), devices);
    FAIL("no error");
  } catch (const CniError& e) {
    CHECK(e.code() == 7u);
    CHECK_THAT(e.msg(), Catch::Contains("namespace isolation"));
  }
  CHECK(f.transport.requests().empty());
}

TEST_CASE("kube attachments: isolation binds the default-network annotation too", "[plugin]") {
  Fixture f(R"({"namespaceIsolation":true})");
  kubelet::DeviceAllocator devices;
  for (const char* value : {"team-b/secret", R"([{"name":"secret","namespace":"team-b"}])"}) {
    CAPTURE(value);
    Json pod = pod_with({{"v1.multus-cni.io/default-network", value}});
    engine::KubeAccess kube(f.services, f.config);
    try {
      engine::resolve_pod_attachments(f.config, f.inv, kube, as_pod(pod), devices);
      FAIL("no error");
    } catch (const CniError& e) {
      CHECK(e.code() == 7u);
      CHECK_THAT(e.msg(), Catch::Contains("namespace isolation") && Catch::Contains("team-b"));
    }
    CHECK(f.transport.requests().empty());
  }
  // The pod's own namespace, a global one and the multusNamespace stay allowed.
  for (const char* value : {"own", "default/own", "kube-system/own"}) {
    CAPTURE(value);
    Fixture ok(R"({"namespaceIsolation":true})");
    std::string ns = std::string(value).find('/') == std::string::npos
                         ? "kube-system"
                         : std::string(value).substr(0, std::string(value).find('/'));
    ok.transport.push_response(200, nad(ns, "own", kMacvlan));
    Json pod = pod_with({{"v1.multus-cni.io/default-network", value}});
    engine::KubeAccess kube(ok.services, ok.config);
    auto out = engine::resolve_pod_attachments(ok.config, ok.inv, kube, as_pod(pod), devices);
    REQUIRE(out.size() == 1);
    CHECK(out[0].name == ns + "/own");
    CHECK(out[0].cluster_network);
  }
  // Without isolation any namespace may be named (as in Multus).
  Fixture open;
  open.transport.push_response(200, nad("team-b", "secret", kMacvlan));
  Json pod = pod_with({{"v1.multus-cni.io/default-network", "team-b/secret"}});
  engine::KubeAccess kube(open.services, open.config);
  auto out = engine::resolve_pod_attachments(open.config, open.inv, kube, as_pod(pod), devices);
  REQUIRE(out.size() == 1);
  CHECK(out[0].name == "team-b/secret");
}

TEST_CASE("kube attachments: best effort skips unresolvable networks and keeps the others' names", "[plugin]") {
  const std::string not_found = R"({"kind":"Status","reason":"NotFound","code":404})";
  auto script = [&](Fixture& f) {
    f.transport.push_response(200, nad("default", "a", kMacvlan));
    f.transport.push_response(404, not_found);
    f.transport.push_response(200, nad("default", "c", kMacvlan));
  };
  Json pod = pod_with({{"k8s.v1.cni.cncf.io/networks", "a, gone, c"}});
  kubelet::DeviceAllocator devices;

  Fixture strict;
  script(strict);
  engine::KubeAccess strict_kube(strict.services, strict.config);
  CHECK_THROWS_WITH(engine::resolve_pod_attachments(strict.config, strict.inv, strict_kube, as_pod(pod), devices),
                    Catch::Contains("default/gone does not exist"));

  Fixture lenient;
  script(lenient);
  engine::KubeAccess kube(lenient.services, lenient.config);
  auto out = engine::resolve_pod_attachments(lenient.config, lenient.inv, kube, as_pod(pod), devices,
                                             engine::Resolution::BestEffort);
  REQUIRE(out.size() == 3);
  CHECK(out[0].ifname == "eth0");
  CHECK(out[1].name == "default/a");
  CHECK(out[1].ifname == "net1");
  CHECK(out[2].name == "default/c");
  CHECK(out[2].ifname == "net3");
}

TEST_CASE("kube attachments: best effort survives an unparsable annotation", "[plugin]") {
  Fixture f;
  Json pod = pod_with({{"k8s.v1.cni.cncf.io/networks", "[not json"}});
  engine::KubeAccess kube(f.services, f.config);
  kubelet::DeviceAllocator devices;
  CHECK_THROWS(engine::resolve_pod_attachments(f.config, f.inv, kube, as_pod(pod), devices));
  auto out =
      engine::resolve_pod_attachments(f.config, f.inv, kube, as_pod(pod), devices, engine::Resolution::BestEffort);
  REQUIRE(out.size() == 1);
  CHECK(out[0].cluster_network);
}

TEST_CASE("kube status: endless conflicts give up after five updates with a clear error", "[plugin]") {
  Fixture f;
  const std::string conflict = R"({"kind":"Status","reason":"Conflict","code":409})";
  for (int i = 0; i < 5; ++i) {
    f.transport.push_response(409, conflict);
    if (i < 4) f.transport.push_response(200, pod_with(Json::object()).dump());
  }
  engine::KubeAccess kube(f.services, f.config);
  CHECK_THROWS_WITH(engine::write_network_status(kube, f.ref(), as_pod(pod_with(Json::object())), "[]"),
                    Catch::Contains("default/web") && Catch::Contains("5 conflicting updates in a row"));
  CHECK(f.transport.requests().size() == 9);
  CHECK(f.transport.pending() == 0);
}

TEST_CASE("kube attachments: apiPipelining false sends a batch one request at a time", "[plugin]") {
  Fixture f(R"({"apiPipelining":false})");
  f.transport.push_response(200, nad("default", "a", kMacvlan));
  f.transport.push_response(200, nad("default", "b", kMacvlan));
  Json pod = pod_with({{"k8s.v1.cni.cncf.io/networks", "a, b"}});
  engine::KubeAccess kube(f.services, f.config);
  kubelet::DeviceAllocator devices;
  auto out = engine::resolve_pod_attachments(f.config, f.inv, kube, as_pod(pod), devices);
  REQUIRE(out.size() == 3);
  CHECK(out[2].name == "default/b");
  CHECK(f.transport.batches().empty());  // never handed to the transport as a batch
  CHECK(f.transport.requests().size() == 2);
  CHECK_FALSE(f.config.api_pipelining);
  CHECK(manifold::cni::parse_meta_config(Json::parse(R"({"cniVersion":"1.0.0","name":"m","type":"manifold",
      "delegates":[{"cniVersion":"1.0.0","name":"c","type":"bridge"}]})"))
            .api_pipelining);
}

TEST_CASE("kube attachments: agentSocket opens the agent relay, with the direct transport as its fallback",
          "[plugin]") {
  std::vector<std::string> sockets;
  auto relay_into = [&](Fixture& f) {
    f.services.open_relay = [&sockets](const std::string& socket, const http::ClusterAuth& auth, const std::string&,
                                       std::function<std::unique_ptr<http::HttpTransport>()> direct) {
      sockets.push_back(socket + " " + auth.server);
      return direct();  // the fallback factory is the direct transport, session directory included
    };
  };
  SECTION("the default socket") {
    Fixture f;
    relay_into(f);
    CHECK(f.config.agent_socket == "/run/manifold/agent.sock");
    f.transport.push_response(200, pod_with(Json::object()).dump());
    engine::KubeAccess kube(f.services, f.config);
    kube.get_pod("default", "web");
    CHECK(sockets == std::vector<std::string>{"/run/manifold/agent.sock https://127.0.0.1:6443"});
    CHECK(f.session_dirs.size() == 1);
  }
  SECTION("agentSocket \"\" always calls the API server directly") {
    Fixture f(R"({"agentSocket":""})");
    relay_into(f);
    f.transport.push_response(200, pod_with(Json::object()).dump());
    engine::KubeAccess kube(f.services, f.config);
    kube.get_pod("default", "web");
    CHECK(sockets.empty());
    CHECK(f.transport.requests().size() == 1);
  }
  SECTION("a wrong type is a configuration error") {
    CHECK_THROWS_WITH(Fixture(R"({"agentSocket":5})"), Catch::Contains("agentSocket"));
  }
}
