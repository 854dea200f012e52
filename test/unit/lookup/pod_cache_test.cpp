// Tests for the agent's pod cache and the resourceVersion parse: a pod is handed out only for the
// UID its call was started for, bound to this node, while the watch is live; a pod recreated under
// the same name is never answered from its old copy; a lookup waits for the watch (bounded); the
// cache's bounds; the first-seen resourceVersion a NAD lookup compares.
#include <catch2/catch.hpp>
#include <thread>

#include "lookup/pod_cache.h"
#include "lookup/resource_version.h"
#include "lookup_world.h"

using manifold::Json;
using manifold::lookup::Clock;
using manifold::lookup::PodCache;
using manifold::lookup::Verdict;
using manifold::test::watched_pod;

namespace {

Clock::time_point now() { return Clock::now(); }
Clock::time_point later() { return Clock::now() + std::chrono::seconds(30); }

}  // namespace

TEST_CASE("a resourceVersion is compared only when it is a plain decimal integer", "[lookup]") {
  using manifold::lookup::parse_resource_version;
  CHECK(parse_resource_version("0") == 0u);
  CHECK(parse_resource_version("18446744073709551615").has_value() == false);  // 20 digits
  CHECK(parse_resource_version("9999999999999999999") == 9999999999999999999ull);
  for (const char* bad : {"", "12a", "-1", "+1", " 1", "1.5", "abc"}) CHECK_FALSE(parse_resource_version(bad));
}

TEST_CASE("the pod cache answers only for the call's UID, bound to this node, while the watch is live", "[lookup]") {
  PodCache cache("node1");
  cache.observe(watched_pod("ns1", "web", "uid-1", "100"));
  SECTION("watch not live yet: forwarded") {
    CHECK(cache.get("ns1", "web", "uid-1", later()).verdict == Verdict::WatchDown);
  }
  cache.set_live(true);
  SECTION("the call's UID: the pod as GET returns it") {
    auto a = cache.get("ns1", "web", "uid-1", now());
    REQUIRE(a.verdict == Verdict::Hit);
    Json pod = Json::parse(a.body);
    CHECK(pod["metadata"]["uid"] == "uid-1");
    CHECK(pod["kind"] == "Pod");
  }
  SECTION("no UID told: forwarded") { CHECK(cache.get("ns1", "web", "", later()).verdict == Verdict::NoUid); }
  SECTION("another UID: forwarded after the bounded wait") {
    CHECK(cache.get("ns1", "web", "uid-2", now()).verdict == Verdict::UidMismatch);
  }
  SECTION("a pod not cached: forwarded") {
    CHECK(cache.get("ns1", "db", "uid-9", now()).verdict == Verdict::NotCached);
  }
  SECTION("the watch goes down: forwarded") {
    cache.set_live(false);
    CHECK(cache.get("ns1", "web", "uid-1", later()).verdict == Verdict::WatchDown);
  }
  SECTION("a pod of another node: forwarded") {
    cache.observe(watched_pod("ns1", "far", "uid-3", "101", "node2"));
    CHECK(cache.get("ns1", "far", "uid-3", now()).verdict == Verdict::OtherNode);
    CHECK(cache.bound("uid-3", now(), false).verdict == Verdict::OtherNode);
  }
}

TEST_CASE("a pod recreated under the same name is fetched until the watch shows the new one", "[lookup]") {
  PodCache cache("node1");
  cache.set_live(true);
  cache.observe(watched_pod("ns1", "web", "uid-old", "100"));
  // The new pod's call arrives before its watch event: the old copy must not answer.
  CHECK(cache.get("ns1", "web", "uid-new", now()).verdict == Verdict::UidMismatch);
  std::thread watch([&] {
    cache.forget("uid-old");
    cache.observe(watched_pod("ns1", "web", "uid-new", "120"));
  });
  auto a = cache.get("ns1", "web", "uid-new", later());  // waits for the watch, bounded
  watch.join();
  REQUIRE(a.verdict == Verdict::Hit);
  CHECK(Json::parse(a.body)["metadata"]["uid"] == "uid-new");
  CHECK(cache.get("ns1", "web", "uid-old", now()).verdict == Verdict::UidMismatch);
  // Even when the new pod's ADDED comes without the old one's DELETED, the old copy is gone.
  cache.observe(watched_pod("ns1", "web", "uid-third", "130"));
  CHECK(cache.bound("uid-new", now(), false).verdict == Verdict::NotCached);
  CHECK(cache.size() == 1);
}

TEST_CASE("a pod copy whose write conflicted is not served until the watch shows the newer one", "[lookup]") {
  PodCache cache("node1");
  cache.set_live(true);
  cache.observe(watched_pod("ns1", "web", "uid-1", "100"));
  cache.superseded("ns1", "web", "99");  // a write of another version: nothing to forget
  CHECK(cache.get("ns1", "web", "uid-1", now()).verdict == Verdict::Hit);
  cache.superseded("ns1", "web", "100");
  CHECK(cache.get("ns1", "web", "uid-1", now()).verdict == Verdict::Superseded);
  std::thread watch([&] { cache.observe(watched_pod("ns1", "web", "uid-1", "101")); });
  auto a = cache.get("ns1", "web", "uid-1", later());  // the call's re-read waits for the watch
  watch.join();
  REQUIRE(a.verdict == Verdict::Hit);
  CHECK(Json::parse(a.body)["metadata"]["resourceVersion"] == "101");
}

TEST_CASE("a static pod's mirror is never served for the kubelet's UID, without waiting", "[lookup]") {
  PodCache cache("node1");
  cache.set_live(true);
  cache.observe(watched_pod("kube-system", "etcd-node1", "mirror-uid", "100", "node1",
                            {{"kubernetes.io/config.source", "file"}}));
  CHECK(cache.get("kube-system", "etcd-node1", "static-uid", later()).verdict == Verdict::StaticPod);
}

TEST_CASE("the pod cache remembers when it first saw a pod here and tells the NAD refresh", "[lookup]") {
  PodCache cache("node1");
  std::vector<std::pair<std::vector<std::string>, std::uint64_t>> told;
  cache.set_new_pod_listener([&](const std::vector<std::string>& ns, std::uint64_t rv) { told.emplace_back(ns, rv); });
  cache.set_live(true);
  cache.observe(watched_pod("ns1", "web", "uid-1", "100", "node1",
                            {{"k8s.v1.cni.cncf.io/networks", "blue, other/green, ns1/red"},
                             {"v1.multus-cni.io/default-network", "kube-system/cluster"}}));
  cache.observe(watched_pod("ns1", "web", "uid-1", "150"));  // an update keeps the first-seen version
  REQUIRE(told.size() == 1);
  CHECK(told[0].first == std::vector<std::string>{"ns1", "other", "kube-system"});
  CHECK(told[0].second == 100u);
  auto bound = cache.bound("uid-1", now(), false);
  REQUIRE(bound.verdict == Verdict::Hit);
  CHECK(bound.bound_rv == 100u);
  CHECK(cache.has_namespace("ns1"));
  CHECK_FALSE(cache.has_namespace("other"));
  SECTION("a pod's NADs are claimed once") {
    CHECK(cache.bound("uid-1", now(), true).verdict == Verdict::Hit);
    CHECK(cache.bound("uid-1", now(), false).verdict == Verdict::ServedBefore);
  }
  SECTION("a resourceVersion that is not an integer proves nothing") {
    cache.observe(watched_pod("ns1", "odd", "uid-odd", "v7"));
    CHECK(cache.bound("uid-odd", now(), false).verdict == Verdict::NotInteger);
    CHECK(told.size() == 1);
  }
  SECTION("a relist drops the pods it does not hold and keeps the first-seen version of the others") {
    auto again = watched_pod("ns1", "web", "uid-1", "300");
    cache.relisted({&again});
    CHECK(cache.bound("uid-1", now(), false).bound_rv == 100u);
    cache.relisted({});
    CHECK(cache.size() == 0);
    CHECK(cache.bytes() == 0);
  }
}

TEST_CASE("the pod cache stays within its bounds", "[lookup]") {
  PodCache cache("node1", PodCache::Limits{2, 1u << 20});
  cache.set_live(true);
  for (int i = 0; i < 5; ++i)
    cache.observe(watched_pod("ns1", "p" + std::to_string(i), "uid-" + std::to_string(i), std::to_string(100 + i)));
  CHECK(cache.size() == 2);
  CHECK(cache.get("ns1", "p4", "uid-4", now()).verdict == Verdict::NotCached);
  PodCache small("node1", PodCache::Limits{100, 10});
  small.set_live(true);
  small.observe(watched_pod("ns1", "web", "uid-1", "100"));
  CHECK(small.size() == 0);
}
