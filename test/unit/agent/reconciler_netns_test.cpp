// Tests for the hot-plug's namespace checks (agent/hotplug_guard.h) through the reconciler over the
// plugin test world, with namespace identities from a fake: a recorded path that names another
// namespace now, or the agent's own, or an older entry's /proc path, is refused with one warning
// event and nothing done in any namespace; a matching one, or an older entry's bind mount, is
// hot-plugged (the latter's identity pinned from then on).
#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/entry_state.h"
#include "agent/hotplug_world.h"
#include "netlink/netns.h"

using manifold::agent::ReconcileResult;
using manifold::netlink::NetnsIdentity;
using manifold::test::World;
using namespace manifold::test::hotplug;  // NOLINT: the fixture of every test here

namespace {

/// Services whose namespace identities come from `ids` (a path not there does not exist).
manifold::engine::Services with_identities(World& w, const std::map<std::string, NetnsIdentity>& ids) {
  manifold::engine::Services services = w.services();
  services.netns_identity = [ids](const std::string& path) -> std::optional<NetnsIdentity> {
    auto it = ids.find(path);
    if (it == ids.end()) return std::nullopt;
    return it->second;
  };
  return services;
}

const NetnsIdentity kOwn{3, 4026531840};      // the agent's (the host's) namespace
const NetnsIdentity kSandbox{3, 4026532001};  // the sandbox's, as its ADD recorded it

/// Records `identity` (or none) and `netns` in the sandbox's entry, as an ADD would have.
void record_sandbox(World& w, const std::optional<NetnsIdentity>& identity, const std::string& netns) {
  auto record = w.cache.load(World::key("ctr1"));
  REQUIRE(record);
  record->netns = netns;
  record->extra.erase("netnsIdentity");
  if (identity) manifold::engine::record_netns_identity(*record, *identity);
  w.cache.save(*record);
}

}  // namespace

TEST_CASE("reconciler: a hot-plug never acts in a namespace other than the sandbox's", "[agent]") {
  Sandbox s("", {});
  World& w = s.w;
  const std::size_t calls = w.calls().size();
  auto refused = [&](manifold::engine::Services services, const std::string& expected) {
    Reconciler reconciler(services, options());
    const std::size_t requests = w.http.requests().size();
    w.http.push_response(201, R"({"kind":"Event"})");
    ReconcileOutcome out = s.reconcile(reconciler, "blue");
    CHECK(out.result == ReconcileResult::Invalid);
    CHECK_THAT(out.message, Catch::Contains(expected));
    CHECK(event_reasons_since(w, requests) == std::vector<std::string>{"NetworkNamespaceChanged"});
  };
  const std::string proc_path = "/proc/thread-self/ns/net";  // a /proc path that exists

  SECTION("the recorded path names another namespace now (a reused PID, a replaced bind mount)") {
    record_sandbox(w, kSandbox, w.netns_path);
    refused(with_identities(w, {{w.netns_path, {3, 4026532999}}, {"/proc/self/ns/net", kOwn}}),
            "names another network namespace (3:4026532999) than the one the sandbox was added in (3:4026532001)");
  }
  SECTION("the recorded path names the agent's own namespace") {
    record_sandbox(w, kSandbox, w.netns_path);
    refused(with_identities(w, {{w.netns_path, kOwn}, {"/proc/self/ns/net", kOwn}}), "the agent's own");
  }
  SECTION("an entry of an older manifold, with a /proc path") {
    record_sandbox(w, std::nullopt, proc_path);
    refused(with_identities(w, {{proc_path, kSandbox}, {"/proc/self/ns/net", kOwn}}), "records no namespace identity");
  }
  SECTION("identities cannot be read while the entry records one") {
    record_sandbox(w, kSandbox, w.netns_path);
    refused(w.services(), "cannot be checked");
  }
  CHECK(w.calls().size() == calls);  // no delegate ran, in either namespace
  CHECK(ifnames(w) == std::vector<std::string>{"eth0"});
  CHECK((w.opened_netns.empty() || w.opened_netns.back() != proc_path));
}

TEST_CASE("reconciler: a matching namespace, or an older entry's bind mount, is hot-plugged", "[agent]") {
  Sandbox s("", {});
  World& w = s.w;
  SECTION("the recorded identity matches") { record_sandbox(w, kSandbox, w.netns_path); }
  SECTION("an older entry without identity, on a bind mount: the identity is pinned from now on") {
    record_sandbox(w, std::nullopt, w.netns_path);
  }
  Reconciler reconciler(with_identities(w, {{w.netns_path, kSandbox}, {"/proc/self/ns/net", kOwn}}), options());
  ReconcileOutcome added = attach_blue(s, reconciler);
  INFO(added.message);
  CHECK(added.result == ReconcileResult::Changed);
  CHECK(w.has_link(w.netns_path, "net1"));
  auto record = w.cache.load(World::key("ctr1"));
  REQUIRE(record);
  CHECK(manifold::engine::recorded_netns_identity(*record) == kSandbox);
}
