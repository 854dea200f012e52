// Tests for engine/entry_state: the lifecycle state of a cache entry, the invocation it records
// (config bytes, CNI_ARGS) rebuilt for a hot-plug, the pod it belongs to, and corrupt or old
// entries refused or left alone.
#include "engine/entry_state.h"

#include <catch2/catch.hpp>

#include "cni/error.h"
#include "cni_error_of.h"

using manifold::Json;
using manifold::cni::CniArgs;
using manifold::cni::Invocation;
using manifold::engine::entry_pod;
using manifold::engine::entry_state;
using manifold::engine::EntryState;
using manifold::engine::record_invocation;
using manifold::engine::recorded_invocation;
using manifold::engine::set_entry_state;
using manifold::store::ContainerRecord;

namespace {

ContainerRecord entry() {
  ContainerRecord r;
  r.container_id = "c1";
  r.network = "net";
  r.netns = "/var/run/netns/p1";
  r.ifname = "eth0";
  r.cni_version = "1.0.0";
  r.cni_path = "/opt/cni/bin";
  return r;
}

}  // namespace

TEST_CASE("entry state: recorded, read back, and unknown for entries without one", "[engine]") {
  ContainerRecord r = entry();
  CHECK(entry_state(r) == EntryState::Unknown);
  for (EntryState s : {EntryState::Adding, EntryState::Complete, EntryState::Deleting}) {
    set_entry_state(r, s);
    CHECK(entry_state(r) == s);
  }
  set_entry_state(r, EntryState::Unknown);
  CHECK_FALSE(r.extra.contains("state"));
  r.extra["state"] = 7;  // not a string: as unknown as no state
  CHECK(entry_state(r) == EntryState::Unknown);
  r.extra["state"] = "finished";
  CHECK(entry_state(r) == EntryState::Unknown);
}

TEST_CASE("entry state: the recorded invocation is the runtime's ADD", "[engine]") {
  ContainerRecord r = entry();
  CHECK_FALSE(recorded_invocation(r).has_value());  // written by an older manifold
  Invocation inv;
  inv.stdin_data = R"({"cniVersion":"1.0.0","name":"net","type":"manifold"})";
  inv.args_text = "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=web;K8S_POD_UID=u1";
  record_invocation(r, inv);
  auto back = recorded_invocation(r);
  REQUIRE(back.has_value());
  CHECK(back->container_id == "c1");
  CHECK(back->netns == "/var/run/netns/p1");
  CHECK(back->ifname == "eth0");
  CHECK(back->path == "/opt/cni/bin");
  CHECK(back->version == "1.0.0");
  CHECK(back->stdin_data == inv.stdin_data);
  CHECK(back->config["type"] == "manifold");
  CHECK(back->args.get("K8S_POD_NAME") == "web");
  auto pod = entry_pod(r);
  REQUIRE(pod.has_value());
  CHECK(pod->namespace_ == "ns1");
  CHECK(pod->name == "web");
  CHECK(pod->uid == "u1");
}

TEST_CASE("entry state: no pod without K8S_POD_NAMESPACE and K8S_POD_NAME", "[engine]") {
  ContainerRecord r = entry();
  Invocation inv;
  inv.stdin_data = "{}";
  inv.args_text = "IgnoreUnknown=1";
  record_invocation(r, inv);
  CHECK_FALSE(entry_pod(r).has_value());
}

TEST_CASE("entry state: a corrupt recorded config is a decoding error naming the entry", "[engine]") {
  ContainerRecord r = entry();
  for (const char* bad : {"{not json", "[1,2]", "\"text\""}) {
    r.extra["config"] = bad;
    r.extra["runtimeArgs"] = "";
    CHECK(manifold::test::code_of([&] { (void)recorded_invocation(r); }) == 6);
    CHECK_THAT(manifold::test::message_of([&] { (void)recorded_invocation(r); }), Catch::Contains("c1/net/eth0"));
  }
}
