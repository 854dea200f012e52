// Tests for the agent's NAD cache and the relay's answers from memory: a NAD changed just before a
// pod starts is seen (the copy is refreshed to the pod's resourceVersion), a burst of pods shares one
// LIST per namespace, a resourceVersion that is not an integer or a failed LIST sends the lookup
// upstream, and CacheAnswers answers a call's pod and NAD GETs whole or not at all, once per pod.
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "lookup/cache_answers.h"
#include "lookup/nad_cache.h"
#include "lookup_world.h"

using manifold::Json;
using manifold::lookup::CacheAnswers;
using manifold::lookup::Clock;
using manifold::lookup::NadCache;
using manifold::lookup::PodCache;
using manifold::lookup::Verdict;
using manifold::test::FakeNadServer;
using manifold::test::watched_pod;

namespace {

Clock::time_point later() { return Clock::now() + std::chrono::seconds(30); }

NadCache::Limits limits() { return NadCache::Limits{}; }

std::string config_of(const std::string& body) { return Json::parse(body)["spec"]["config"].get<std::string>(); }

}  // namespace

TEST_CASE("a NAD changed just before a pod starts is seen", "[lookup]") {
  FakeNadServer api;
  api.put("ns1", "blue", "v1");
  NadCache cache([&](const std::string& ns) { return api.list(ns); }, limits());
  const std::uint64_t first_pod = api.write();
  auto a = cache.get("ns1", "blue", first_pod, later());
  REQUIRE(a.verdict == Verdict::Hit);
  CHECK(config_of(a.body) == "v1");
  CHECK(api.lists() == 1);
  api.put("ns1", "blue", "v2");  // changed, then a pod is created and bound
  const std::uint64_t second_pod = api.write();
  auto b = cache.get("ns1", "blue", second_pod, later());
  REQUIRE(b.verdict == Verdict::Hit);
  CHECK(config_of(b.body) == "v2");
  CHECK(api.lists() == 2);
  SECTION("a pod bound before the copy's LIST is answered without another") {
    CHECK(cache.get("ns1", "blue", first_pod, later()).verdict == Verdict::Hit);
    CHECK(api.lists() == 2);
  }
  SECTION("a NAD the namespace does not have goes upstream for the real answer") {
    CHECK(cache.get("ns1", "red", second_pod, later()).verdict == Verdict::Absent);
  }
}

TEST_CASE("a burst of pods shares one LIST per namespace", "[lookup]") {
  FakeNadServer api;
  api.put("ns1", "blue", "v1");
  api.put("ns2", "green", "v1");
  NadCache cache([&](const std::string& ns) { return api.list(ns); }, limits());
  api.hold();
  std::vector<std::uint64_t> bound{api.write()};
  cache.new_pod({"ns1"}, bound[0]);  // the first pod's LIST starts, and is held
  api.wait_for_held(1);
  for (int i = 1; i < 100; ++i) {  // pods bound while it is in flight: newer than what it read
    bound.push_back(api.write());
    cache.new_pod({"ns1", "ns2"}, bound[i]);
  }
  std::vector<std::thread> calls;
  std::vector<Verdict> verdicts(100, Verdict::Stale);
  for (int i = 0; i < 100; ++i)
    calls.emplace_back([&, i] {
      verdicts[i] = cache.get(i % 2 ? "ns1" : "ns2", i % 2 ? "blue" : "green", bound[i], later()).verdict;
    });
  api.release();
  for (auto& t : calls) t.join();
  for (Verdict v : verdicts) CHECK(v == Verdict::Hit);
  // ns1: the held LIST, then one more for the pods seen while it was in flight; ns2: one.
  CHECK(api.lists() == 3);
  CHECK(cache.namespaces() == 2);
}

TEST_CASE("pods seen close together share one LIST per namespace, which a lookup hurries", "[lookup]") {
  FakeNadServer api;
  api.put("ns1", "blue", "v1");
  api.put("ns2", "green", "v1");
  NadCache::Limits slow;
  slow.batch = std::chrono::seconds(600);  // never due on its own during the test
  NadCache cache([&](const std::string& ns) { return api.list(ns); }, slow);
  std::vector<std::uint64_t> bound;
  for (int i = 0; i < 100; ++i) {
    bound.push_back(api.write());
    cache.new_pod({"ns1", "ns2"}, bound.back());
  }
  CHECK(api.lists() == 0);  // waiting for more pods of the burst
  std::vector<std::thread> calls;
  std::vector<Verdict> verdicts(100, Verdict::Stale);
  for (int i = 0; i < 100; ++i)
    calls.emplace_back([&, i] {
      verdicts[i] = cache.get(i % 2 ? "ns1" : "ns2", i % 2 ? "blue" : "green", bound[i], later()).verdict;
    });
  for (auto& t : calls) t.join();
  for (Verdict v : verdicts) CHECK(v == Verdict::Hit);
  CHECK(api.lists() == 2);  // one per namespace for the 100 pods
}

TEST_CASE("a NAD copy that cannot be proven fresh is not served", "[lookup]") {
  FakeNadServer api;
  api.put("ns1", "blue", "v1");
  NadCache cache([&](const std::string& ns) { return api.list(ns); }, limits());
  const std::uint64_t pod = api.write();
  SECTION("a LIST whose resourceVersion is not an integer") {
    api.list_rv("opaque-token");
    CHECK(cache.get("ns1", "blue", pod, later()).verdict == Verdict::NotInteger);
  }
  SECTION("a LIST older than the pod, asked for before it started (another etcd)") {
    api.list_rv("5");
    CHECK(cache.get("ns1", "blue", pod, later()).verdict == Verdict::Stale);
    CHECK(api.lists() == 1);
  }
  SECTION("a failed LIST, then a good one on the next lookup") {
    api.fail(true);
    CHECK(cache.get("ns1", "blue", pod, later()).verdict == Verdict::ListFailed);
    api.fail(false);
    CHECK(cache.get("ns1", "blue", pod, later()).verdict == Verdict::Hit);
  }
  SECTION("no LIST in time: the lookup gives up at its deadline") {
    api.hold();
    CHECK(cache.get("ns1", "blue", pod, Clock::now() + std::chrono::milliseconds(20)).verdict == Verdict::Stale);
    api.release();
  }
  SECTION("a namespace's NADs beyond the byte bound are not kept") {
    NadCache tiny([&](const std::string& ns) { return api.list(ns); }, NadCache::Limits{4, 10, {}});
    CHECK(tiny.get("ns1", "blue", pod, later()).verdict == Verdict::OverCapacity);
    CHECK(tiny.bytes() == 0);
  }
}

namespace {

struct Counted : manifold::lookup::LookupCounters {
  std::vector<std::string> seen;
  void lookup(std::string_view object, Verdict v, bool) override {
    seen.push_back(std::string(object) + " " + manifold::lookup::verdict_name(v));
  }
};

manifold::http::HttpRequest get(const std::string& target) { return {"GET", target, {}, ""}; }

const char* const kPod = "/api/v1/namespaces/ns1/pods/web";
const char* const kBlue = "/apis/k8s.cni.cncf.io/v1/namespaces/ns1/network-attachment-definitions/blue";

}  // namespace

TEST_CASE("the relay's answers from memory: a call's pod and NADs, whole or not at all, once per pod", "[lookup]") {
  FakeNadServer api;
  api.put("ns1", "blue", "v1");
  api.put("far", "red", "v1");
  PodCache pods("node1");
  NadCache nads([&](const std::string& ns) { return api.list(ns); }, limits());
  pods.set_new_pod_listener([&](const auto& ns, std::uint64_t rv) { nads.new_pod(ns, rv); });
  Counted counted;
  CacheAnswers answers(pods, nads, "", std::chrono::milliseconds(5000), counted);
  pods.set_live(true);
  pods.observe(watched_pod("ns1", "web", "uid-1", std::to_string(api.write())));
  auto pod = answers.answer({get(kPod)}, "uid-1", later());
  REQUIRE(pod);
  CHECK((*pod)[0].status == 200);
  auto nad = answers.answer({get(kBlue)}, "uid-1", later());
  REQUIRE(nad);
  CHECK(config_of((*nad)[0].body) == "v1");
  CHECK(counted.seen == std::vector<std::string>{"pod hit", "nad hit"});
  CHECK_FALSE(answers.answer({get(kBlue)}, "uid-1", later()));  // a second call (re-ADD) reads upstream
  CHECK(counted.seen.back() == "nad served-before");
  CHECK_FALSE(answers.answer({get(kPod)}, "", later()));
  CHECK(counted.seen.back() == "pod no-uid");
  CHECK_FALSE(answers.answer({get("/apis/k8s.cni.cncf.io/v1/namespaces/far/network-attachment-definitions/red")},
                             "uid-1", later()));
  CHECK(counted.seen.back() == "nad served-before");
  pods.observe(watched_pod("ns1", "api", "uid-2", std::to_string(api.write())));
  CHECK_FALSE(answers.answer({get("/apis/k8s.cni.cncf.io/v1/namespaces/far/network-attachment-definitions/red")},
                             "uid-2", later()));
  CHECK(counted.seen.back() == "nad out-of-scope");
  const auto before = counted.seen.size();
  CHECK_FALSE(answers.answer({get(kPod), {"PUT", kPod + std::string("/status"), {}, "{}"}}, "uid-1", later()));
  CHECK_FALSE(answers.answer({get(kPod + std::string("?watch=1"))}, "uid-1", later()));
  CHECK(counted.seen.size() == before);  // not lookups: not counted
  // The call's status PUT conflicts: the copy it was built from is not handed out again.
  std::string put_body = R"({"metadata":{"resourceVersion":")" +
                         Json::parse((*pod)[0].body)["metadata"]["resourceVersion"].get<std::string>() + R"("}})";
  answers.upstream_answer({"PUT", kPod + std::string("/status"), {}, put_body},
                          manifold::http::HttpResponse{409, {}, "{}"});
  CHECK_FALSE(answers.answer({get(kPod)}, "uid-1", Clock::now() + std::chrono::milliseconds(20)));
  CHECK(counted.seen.back() == "pod superseded");
  pods.observe(watched_pod("ns1", "web", "uid-1", std::to_string(api.write())));
  CHECK(answers.answer({get(kPod)}, "uid-1", later()));
}
