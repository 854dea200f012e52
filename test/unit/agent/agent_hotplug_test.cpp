// Tests for agent/agent with the reconciler over the plugin test world (a sandbox ADDed by the CNI
// verbs, fake delegates, one scripted API connection for the loop and the reconciles): a pod whose
// annotation asks for more networks than one reconcile makes is attached a few at a time — the
// first ones when it is listed, the rest on the watch's ticks, after the watch was opened — so the
// loop serves the watch (and other pods) in between; and when reconciles are slow, pods with more
// to do take turns, one per tick, so a pod with many networks never keeps another waiting.
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string_view>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/hotplug_world.h"

using manifold::Json;
using manifold::agent::Agent;
using manifold::agent::AgentMetrics;
using manifold::agent::AgentOptions;
using manifold::agent::MetricsRegistry;
using manifold::test::World;
using namespace manifold::test::hotplug;  // NOLINT: the fixture of every test here

namespace {

/// The world's scripted API for the loop's requests and streams and every reconcile's.
class ScriptedConnection final : public manifold::http::HttpTransport {
 public:
  explicit ScriptedConnection(manifold::http::FakeHttpTransport& fake) : fake_(fake) {}
  manifold::http::HttpResponse send(const manifold::http::HttpRequest& request,
                                    std::chrono::milliseconds timeout) override {
    return fake_.send(request, timeout);
  }
  manifold::http::StreamResult stream(const manifold::http::HttpRequest& request,
                                      const manifold::http::StreamOptions& options,
                                      const std::function<bool(std::string_view)>& on_data) override {
    return fake_.stream(request, options, on_data);
  }

 private:
  manifold::http::FakeHttpTransport& fake_;
};

/// The pod as the agent lists it: the sandbox's pod with `networks` and the ADD's network-status,
/// on the agent's node.
Json listed_pod(const Sandbox& s, const std::string& networks) {
  Json p = pod(networks, s.status);
  p["spec"]["nodeName"] = "node-a";
  return p;
}

/// Runs the runtime's ADD of a second pod (team-a/web-2, container ctr2, its own namespace) in the
/// sandbox's world; returns the network-status it wrote.
std::string add_second_pod(Sandbox& s) {
  World& w = s.w;
  Json p = pod("");
  p["metadata"]["name"] = "web-2";
  p["metadata"]["uid"] = "uid-2";
  w.http.push_response(200, p.dump());
  w.http.push_response(200, p.dump());  // the PUT's answer
  w.http.push_response(201, R"({"kind":"Event"})");
  const std::size_t before = w.http.requests().size();
  manifold::test::Env env;
  env.container_id = "ctr2";
  env.netns = w.make_netns_file("pod-2-netns");
  env.args = "K8S_POD_NAMESPACE=team-a;K8S_POD_NAME=web-2;K8S_POD_UID=uid-2;K8S_POD_INFRA_CONTAINER_ID=ctr2";
  auto out = w.run("ADD", config_of(w), env);
  INFO(out.stdout_text);
  REQUIRE(out.exit_code == 0);
  const auto& put = w.http.requests().at(before + 1);
  REQUIRE(put.method == "PUT");
  return Json::parse(put.body)["metadata"]["annotations"][manifold::k8s::kNetworkStatusAnnotation];
}

/// The names of `prefix`1 … `prefix``count`.
std::vector<std::string> numbered(const std::string& prefix, int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i <= to; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

std::vector<std::string> verbs_since(const World& w, std::size_t from) {
  std::vector<std::string> out;
  const auto& r = w.http.requests();
  for (std::size_t i = from; i < r.size(); ++i) {
    std::string what = r[i].method;
    if (r[i].target.find("watch=1") != std::string::npos) {
      what = "WATCH";
    } else if (r[i].target.find("network-attachment-definitions/") != std::string::npos) {
      what += " NAD " + r[i].target.substr(r[i].target.rfind('/') + 1);
    }
    out.push_back(what);
  }
  return out;
}

}  // namespace

TEST_CASE("agent: a pod asking for many networks gets them a few per turn, the watch served between", "[agent]") {
  Sandbox s("", {});
  World& w = s.w;
  const std::size_t requests = w.http.requests().size();
  Json list = {{"kind", "PodList"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", "40"}}}};
  list["items"] = Json::array({listed_pod(s, "a,b,c,d,e,f")});
  w.http.push_response(200, list.dump());
  script_attach(w, {"a", "b", "c", "d"});  // the reconcile after the LIST: four of six
  w.http.push_stream(200, {R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"41"}}})"
                           "\n"});
  script_attach(w, {"e", "f"});  // the watch's first tick: the rest

  AgentOptions options;
  options.node_name = "node-a";
  options.cni_dir = kCniDir;
  MetricsRegistry registry;
  AgentMetrics metrics(registry);
  manifold::engine::Services services = w.services();  // the agent keeps a reference
  services.open_transport = [&w](const manifold::http::ClusterAuth&, const std::string&) {
    return std::unique_ptr<manifold::http::HttpTransport>(std::make_unique<ScriptedConnection>(w.http));
  };
  Agent agent(services, options, metrics);
  // Stops once the script is used up (or, when something is wrong, well after it should have been).
  CHECK(agent.run([&w, requests] { return w.http.pending() == 0 || w.http.requests().size() > requests + 40; }) == 0);

  CHECK(ifnames(w) == std::vector<std::string>{"eth0", "net1", "net2", "net3", "net4", "net5", "net6"});
  CHECK(verbs_since(w, requests) == std::vector<std::string>{"GET", "GET NAD a", "GET NAD b", "GET NAD c", "GET NAD d",
                                                             "PUT", "POST", "POST", "POST", "POST", "WATCH",
                                                             "GET NAD e", "GET NAD f", "PUT", "POST", "POST"});
  CHECK(metrics.attachments_added.value() == 6);
  CHECK(metrics.reconciles_changed.value() == 2);
}

TEST_CASE("agent: with slow reconciles, pods with more to change take turns, one per tick", "[agent]") {
  Sandbox s("", {});
  World& w = s.w;
  const std::string status_b = add_second_pod(s);
  const std::size_t requests = w.http.requests().size();
  const std::string bookmark = R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"41"}}})"
                               "\n";
  Json b = pod(joined(numbered("b", 1, 6)), status_b);
  b["metadata"]["name"] = "web-2";
  b["metadata"]["uid"] = "uid-2";
  Json list = {{"kind", "PodList"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", "40"}}}};
  list["items"] = Json::array({listed_pod(s, joined(numbered("a", 1, 12))), b});
  w.http.push_response(200, list.dump());
  script_attach(w, numbered("a", 1, 4));  // both pods' first reconcile, after the LIST
  script_attach(w, numbered("b", 1, 4));
  w.http.push_stream(200, {bookmark});
  script_attach(w, numbered("a", 5, 8));  // a tick: the first pod's turn, which uses up the tick
  w.http.push_stream(200, {bookmark});
  script_attach(w, numbered("b", 5, 6));  // the next tick: the other pod's turn, not the first's again
  w.http.push_stream(200, {bookmark});
  script_attach(w, numbered("a", 9, 12));
  w.http.on_send([&w](const manifold::http::HttpRequest&) { w.clock->advance(std::chrono::milliseconds(300)); });

  AgentOptions options;
  options.node_name = "node-a";
  options.cni_dir = kCniDir;
  MetricsRegistry registry;
  AgentMetrics metrics(registry);
  manifold::engine::Services services = w.services();
  services.open_transport = [&w](const manifold::http::ClusterAuth&, const std::string&) {
    return std::unique_ptr<manifold::http::HttpTransport>(std::make_unique<ScriptedConnection>(w.http));
  };
  Agent agent(services, options, metrics);
  CHECK(agent.run([&w, requests] { return w.http.pending() == 0 || w.http.requests().size() > requests + 80; }) == 0);

  std::vector<std::string> order;  // the watches and the NADs fetched, in order
  for (const std::string& v : verbs_since(w, requests))
    if (v == "WATCH" || v.rfind("GET NAD ", 0) == 0) order.push_back(v == "WATCH" ? v : v.substr(8));
  std::vector<std::string> expected = numbered("a", 1, 4);
  for (const auto& part : {numbered("b", 1, 4),
                           {"WATCH"},
                           numbered("a", 5, 8),
                           {"WATCH"},
                           numbered("b", 5, 6),
                           {"WATCH"},
                           numbered("a", 9, 12)})
    expected.insert(expected.end(), part.begin(), part.end());
  CHECK(order == expected);
  CHECK(metrics.attachments_added.value() == 18);
}
