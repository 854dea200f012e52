// Tests for the namespace identity a cache entry records (engine/entry_state.h) through a real
// FileCache: it survives the cache file's round trip; an entry written before identities were
// recorded (the same file without the key) reads as none; a malformed value is a Decoding error,
// never an identity.
#include <catch2/catch.hpp>
#include <fstream>
#include <optional>

#include "cni/error.h"
#include "cni_error_of.h"
#include "engine/entry_state.h"
#include "netlink/netns.h"
#include "store/cache.h"
#include "temp_dir.h"

using manifold::Json;
using manifold::engine::record_netns_identity;
using manifold::engine::recorded_netns_identity;
using manifold::netlink::NetnsIdentity;
using manifold::store::ContainerRecord;
using manifold::store::FileCache;

namespace {

ContainerRecord sandbox_record() {
  ContainerRecord r;
  r.container_id = "ctr1";
  r.network = "manifold-net";
  r.ifname = "eth0";
  r.netns = "/var/run/netns/cni-1234";
  r.cni_version = "1.0.0";
  return r;
}

}  // namespace

TEST_CASE("cache: the recorded namespace identity survives the file; older entries have none", "[store]") {
  manifold::test::TempDir dir;
  FileCache cache(dir.path());
  ContainerRecord r = sandbox_record();
  cache.save(r);
  auto older = cache.load(r.key());
  REQUIRE(older);
  CHECK(recorded_netns_identity(*older) == std::nullopt);  // written without one: nothing to compare

  const NetnsIdentity id{4, 4026532281u};
  record_netns_identity(r, id);
  cache.save(r);
  auto loaded = cache.load(r.key());
  REQUIRE(loaded);
  CHECK(recorded_netns_identity(*loaded) == id);
  CHECK(loaded->extra["netnsIdentity"] == Json{{"dev", 4}, {"ino", 4026532281u}});
}

TEST_CASE("cache: a malformed namespace identity is a decoding error, not an identity", "[store]") {
  ContainerRecord r = sandbox_record();
  for (const Json& bad : {Json("4:4026532281"), Json{{"dev", 4}}, Json{{"dev", -4}, {"ino", 1}},
                          Json{{"dev", "4"}, {"ino", 1}}, Json::array({4, 1})}) {
    CAPTURE(bad.dump());
    r.extra["netnsIdentity"] = bad;
    CHECK(manifold::test::code_of([&] { recorded_netns_identity(r); }) ==
          static_cast<unsigned>(manifold::cni::ErrorCode::Decoding));
  }
}
