// Tests for agent/agent: the LIST + WATCH loop against a scripted API server — the WATCH resumes
// from the list's and then the last bookmark's resourceVersion, a 410 (as an ERROR event or as the
// answer) relists, a garbled stream or a failed LIST backs off and tries again, pods are tracked
// from ADDED/MODIFIED/DELETED, and bad settings stop it before any request.
#include "agent/agent.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "log_capture.h"
#include "store/memory_cache.h"
#include "util/clock.h"

using manifold::Json;
using manifold::agent::Agent;
using manifold::agent::AgentMetrics;
using manifold::agent::AgentOptions;
using manifold::agent::MetricsRegistry;
using manifold::http::FakeHttpTransport;
using manifold::http::HttpRequest;
using manifold::http::HttpResponse;
using manifold::http::StreamOptions;
using manifold::http::StreamResult;
using manifold::http::TransportError;

namespace {

/// Hands every call to the test's FakeHttpTransport; once its script is used up, the agent is
/// told to stop (the next stream ends at once).
class ScriptedApi final : public manifold::http::HttpTransport {
 public:
  ScriptedApi(FakeHttpTransport& fake, bool& done) : fake_(fake), done_(done) {}
  HttpResponse send(const HttpRequest& request, std::chrono::milliseconds timeout) override {
    if (fake_.pending() == 0) done_ = true;
    if (done_) throw TransportError(TransportError::Kind::Closed, "script finished");
    return fake_.send(request, timeout);
  }
  StreamResult stream(const HttpRequest& request, const StreamOptions& options,
                      const std::function<bool(std::string_view)>& on_data) override {
    if (fake_.pending() == 0) done_ = true;
    if (done_) throw TransportError(TransportError::Kind::Closed, "script finished");
    return fake_.stream(request, options, on_data);
  }

 private:
  FakeHttpTransport& fake_;
  bool& done_;
};

std::string pod_json(const std::string& name, const std::string& rv) {
  return Json{{"metadata", {{"name", name}, {"namespace", "default"}, {"uid", "uid-" + name}, {"resourceVersion", rv}}}}
      .dump();
}

std::string event(const std::string& type, const std::string& object) {
  return R"({"type":")" + type + R"(","object":)" + object + "}\n";
}

std::string bookmark(const std::string& rv) {
  return event("BOOKMARK", R"({"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":")" + rv + R"("}})");
}

std::string pod_list(const std::string& rv, const std::vector<std::string>& pods = {}) {
  std::string items;
  for (const auto& p : pods) items += (items.empty() ? "" : ",") + p;
  return R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":")" + rv + R"("},"items":[)" + items +
         "]}";
}

struct World {
  FakeHttpTransport api;
  bool done = false;
  std::shared_ptr<manifold::util::FakeClock> clock = std::make_shared<manifold::util::FakeClock>();
  std::shared_ptr<manifold::util::FakeSleeper> sleeper = std::make_shared<manifold::util::FakeSleeper>(*clock);
  manifold::engine::Services services;
  MetricsRegistry registry;
  AgentMetrics metrics{registry};
  AgentOptions options;

  World() {
    services.open_cache = [](const std::string&) { return std::make_unique<manifold::store::MemoryCache>(); };
    services.find_auth = [](const std::string&) {
      manifold::http::ClusterAuth auth;
      auth.server = "https://127.0.0.1:6443";
      auth.token = "agent-token";
      return std::optional<manifold::http::ClusterAuth>(auth);
    };
    services.open_transport = [this](const manifold::http::ClusterAuth&, const std::string&) {
      return std::make_unique<ScriptedApi>(api, done);
    };
    services.sleeper = sleeper;
    services.clock = clock;
    options.node_name = "node-a";
  }

  int run() {
    Agent agent(services, options, metrics);
    return agent.run([this] { return done; });
  }

  /// The targets of every request, in order.
  std::vector<std::string> targets() const {
    std::vector<std::string> out;
    for (const auto& r : api.requests()) out.push_back(r.target);
    return out;
  }
};

const std::string kList = "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a";
std::string watch_from(const std::string& rv) {
  return kList + "&watch=1&allowWatchBookmarks=true&timeoutSeconds=300" + (rv.empty() ? "" : "&resourceVersion=" + rv);
}

}  // namespace

TEST_CASE("agent: the watch starts at the list's version and resumes from the last bookmark", "[agent]") {
  World w;
  w.api.push_response(200, pod_list("10", {pod_json("web", "9")}));
  w.api.push_stream(200, {event("MODIFIED", pod_json("web", "11")), bookmark("15")});
  w.api.push_stream(200, {event("ADDED", pod_json("db", "16"))});
  CHECK(w.run() == 0);
  CHECK(w.targets() == std::vector<std::string>{kList, watch_from("10"), watch_from("15")});
  CHECK(w.sleeper->waits().empty());  // a watch the server ended is resumed at once
  CHECK(w.metrics.watch_restarts_closed.value() == 2);
  CHECK(w.metrics.pods_tracked.value() == 2);
  for (const auto& r : w.api.requests()) {
    bool authorized = false;
    for (const auto& [k, v] : r.headers) authorized = authorized || (k == "Authorization" && v == "Bearer agent-token");
    CHECK(authorized);
  }
}

TEST_CASE("agent: a deleted pod is no longer tracked", "[agent]") {
  World w;
  w.api.push_response(200, pod_list("10", {pod_json("web", "9"), pod_json("db", "8")}));
  w.api.push_stream(200, {event("DELETED", pod_json("web", "12"))});
  w.api.push_stream(200, {});
  w.run();
  CHECK(w.metrics.pods_tracked.value() == 1);
  CHECK(w.targets().back() == watch_from("12"));
}

TEST_CASE("agent: a pod that does not decode is ignored, told in the log; the watch goes on", "[agent]") {
  manifold::test::LogCapture log;
  World w;
  Json bad = Json::parse(pod_json("bad", "8"));
  bad["metadata"]["annotations"] = Json::array({"not", "a map"});
  Json worse = Json::parse(pod_json("worse", "11"));
  worse["metadata"]["annotations"] = {{"k8s.v1.cni.cncf.io/networks", 5}};
  w.api.push_response(200, pod_list("10", {pod_json("web", "9"), bad.dump()}));
  w.api.push_stream(200, {event("ADDED", worse.dump()), event("MODIFIED", pod_json("web", "12"))});
  w.api.push_stream(200, {bookmark("12")});
  w.run();
  CHECK(w.metrics.pods_tracked.value() == 1);
  CHECK(w.targets() == std::vector<std::string>{kList, watch_from("10"), watch_from("12")});
  CHECK(w.sleeper->waits().empty());  // not a reason to reconnect
  CHECK(
      log.contains("agent: ignoring a pod: Kubernetes API answer for pod default/bad is malformed: "
                   "metadata.annotations is a JSON array"));
  CHECK(log.contains("pod default/worse is malformed: annotation k8s.v1.cni.cncf.io/networks is a JSON number"));
}

TEST_CASE("agent: 410 Gone, as an ERROR event or as the answer, relists", "[agent]") {
  World w;
  w.api.push_response(200, pod_list("10"));
  w.api.push_stream(200, {event("ERROR", R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)J"
                                         R"J("message":"too old resource version: 10 (20)","reason":"Expired",)J"
                                         R"J("code":410})J")});
  w.api.push_response(200, pod_list("30"));
  w.api.push_stream(410, {R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410})"});
  w.api.push_response(200, pod_list("40"));
  w.api.push_stream(200, {bookmark("40")});
  w.run();
  CHECK(w.targets() ==
        std::vector<std::string>{kList, watch_from("10"), kList, watch_from("30"), kList, watch_from("40")});
  CHECK(w.metrics.watch_restarts_expired.value() == 2);
  CHECK(w.sleeper->waits().empty());
}

TEST_CASE("agent: a garbled stream backs off and resumes from the last good version", "[agent]") {
  World w;
  w.api.push_response(200, pod_list("10"));
  w.api.push_stream(200, {bookmark("12"), "this is not an event\n", bookmark("99")});
  w.api.push_stream(200, {event("MODIFIED", R"({"metadata":{}})")});  // an event without a pod
  w.api.push_stream(200, {"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":"},
                    TransportError(TransportError::Kind::Closed, "dropped mid-event"));
  w.api.push_stream(200, {});
  w.run();
  CHECK(w.targets() ==
        std::vector<std::string>{kList, watch_from("10"), watch_from("12"), watch_from("12"), watch_from("12")});
  CHECK(w.metrics.watch_restarts_error.value() == 3);
  // Three growing backoffs (500 ms, 1 s, 2 s, each jittered down by up to half), slept in ticks of
  // at most 200 ms.
  std::chrono::milliseconds total{0};
  for (auto wait : w.sleeper->waits()) {
    CHECK(wait <= w.options.tick);
    total += wait;
  }
  CHECK(total >= std::chrono::milliseconds(1750));
}

/// The fake clock's time at each request the agent sends.
std::vector<std::chrono::steady_clock::time_point> request_times(World& w) {
  auto times = std::make_shared<std::vector<std::chrono::steady_clock::time_point>>();
  w.api.on_send([times, clock = w.clock](const HttpRequest&) { times->push_back(clock->now()); });
  w.run();
  return *times;
}

TEST_CASE("agent: watches the server ends at once with nothing are reopened after a growing backoff", "[agent]") {
  World w;
  w.api.push_response(200, pod_list("10"));
  for (int i = 0; i < 6; ++i) w.api.push_stream(200, {});  // 200, then the end: a proxy cutting every watch
  const auto times = request_times(w);
  REQUIRE(times.size() == 7);
  CHECK(w.metrics.watch_restarts_empty.value() == 6);
  CHECK(w.metrics.watch_restarts_closed.value() == 0);
  // 500 ms doubling, each jittered down by at most half: the n-th reopen waits at least 250·2^(n-1) ms.
  for (std::size_t i = 2; i < times.size(); ++i)
    CHECK(times[i] - times[i - 1] >= std::chrono::milliseconds(250 << (i - 2)));
}

TEST_CASE("agent: a quiet watch that ran its course, or one that brought a bookmark, is reopened at once", "[agent]") {
  World w;
  w.api.push_response(200, pod_list("10"));
  w.api.push_stream(200, {});  // the server's timeoutSeconds on a quiet node: the clock moves 11 s
  w.api.push_stream(200, {bookmark("12")});
  w.api.push_stream(200, {bookmark("13")});
  int streams = 0;
  w.api.on_send([&](const HttpRequest& r) {
    if (r.target.find("watch=1") != std::string::npos && ++streams == 1) w.clock->advance(std::chrono::seconds(11));
  });
  w.run();
  CHECK(w.sleeper->waits().empty());
  CHECK(w.metrics.watch_restarts_empty.value() == 0);
  CHECK(w.metrics.watch_restarts_closed.value() == 3);
}

TEST_CASE("agent: every request of the agent is under its rate ceiling", "[agent]") {
  World w;
  w.options.api_requests_per_second = 2;
  w.options.api_burst = 1;
  w.api.push_response(200, pod_list("10"));
  for (int i = 0; i < 4; ++i) w.api.push_stream(200, {bookmark(std::to_string(11 + i))});
  const auto times = request_times(w);
  REQUIRE(times.size() == 5);
  for (std::size_t i = 1; i < times.size(); ++i) CHECK(times[i] - times[i - 1] >= std::chrono::milliseconds(500));
  CHECK(w.metrics.api_throttled.value() == 5);  // and the request that finds the script finished
}

TEST_CASE("agent: a LIST that keeps failing is retried with backoff, then the watch starts", "[agent]") {
  World w;
  w.options.max_backoff = std::chrono::milliseconds(1000);
  for (int i = 0; i < 5; ++i) w.api.push_response(500, R"({"kind":"Status","code":500})");  // one ApiClient call
  w.api.push_response(429, R"({"kind":"Status","code":429})", {{"Retry-After", "1"}});
  w.api.push_response(200, pod_list("50"));
  w.api.push_stream(200, {});
  w.run();
  CHECK(w.targets().back() == watch_from("50"));
  CHECK(w.metrics.api_requests.value() >= 7);
}

TEST_CASE("agent: bad settings stop it before any request", "[agent]") {
  World w;
  w.options.node_name = "Not_A_Node";
  CHECK(w.run() == 1);
  CHECK(w.api.requests().empty());
  World none;
  none.services.find_auth = [](const std::string&) { return std::optional<manifold::http::ClusterAuth>(); };
  CHECK(none.run() == 1);
  CHECK(none.api.requests().empty());
}

TEST_CASE("agent: liveness follows the loop's heartbeat, not the API server; readiness follows the API", "[agent]") {
  World w;
  w.options.max_backoff = std::chrono::milliseconds(1000);
  for (int i = 0; i < 12; ++i) w.api.push_response(503, R"({"kind":"Status","code":503})");  // the API is down
  Agent agent(w.services, w.options, w.metrics);
  int alive = 0, ready = 0, waits = 0;
  w.sleeper->on_sleep([&](std::size_t) {
    ++waits;
    if (agent.liveness().ok) ++alive;
    if (agent.health().ok) ++ready;
  });
  agent.run([&w] { return w.done; });
  REQUIRE(waits > 0);
  CHECK(alive == waits);  // an API outage restarts no agent
  CHECK(ready == 0);      // but it is not ready
  // A loop that stopped ticking (here: it returned) is dead once the bound passes.
  CHECK(agent.liveness().ok);
  w.clock->advance(w.options.liveness_bound + std::chrono::milliseconds(1));
  manifold::agent::AgentHealth dead = agent.liveness();
  CHECK_FALSE(dead.ok);
  CHECK_THAT(dead.reason, Catch::Contains("has not run for"));
}
