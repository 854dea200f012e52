// Regression tests for what fuzz_cache_file found: a loaded cache record is replayed by DEL/CHECK
// through DelegateRunner, so a corrupt attachment config (no "type", a non-string "type", "plugins"
// that is not a list of plugin objects) reached nlohmann's unchecked const operator[] (undefined
// behaviour, a use-after-free under ASan) or escaped as a non-CniError exception; and FileCache's
// one-argument constructor named a member before the object's construction had begun (UBSan). Also
// the nesting bound on cached results and plugin output, which are copied into prevResult.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "cni/error.h"
#include "exec/delegate_runner.h"
#include "exec/plugin_invoker.h"
#include "exec/process.h"
#include "store/cache.h"
#include "temp_dir.h"

using namespace manifold;

namespace {

/// A binDir holding executable stubs for `bridge` and `tuning`, a fake runner answering every call
/// with exit 0 and `stdout_text`, and a DelegateRunner over them.
struct Replay {
  test::TempDir bin;
  exec::FakeProcessRunner runner;
  exec::PluginInvoker invoker;
  exec::DelegateRunner delegates{invoker};
  exec::DelegateTarget target{"3f0a9c5e", "/var/run/netns/x", "net1", "IgnoreUnknown=1", "/opt/cni/bin"};

  explicit Replay(std::string stdout_text = "")
      : invoker(runner, {stub_dir()}, std::chrono::seconds(5), {"PATH=/usr/bin"}) {
    runner.set_handler([out = std::move(stdout_text)](const exec::ProcessRequest&) {
      exec::ProcessResult r;
      r.exit_code = 0;
      r.stdout_data = out;
      return r;
    });
  }

  std::string stub_dir() {
    for (const char* name : {"bridge", "tuning"}) {
      int fd = ::open((bin.path() / name).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
      REQUIRE(fd >= 0);
      ::close(fd);
    }
    return bin.str();
  }
};

std::string nested(int depth) {
  return "{\"cniVersion\":\"1.0.0\",\"x\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
}

}  // namespace

TEST_CASE("fuzz: DEL and CHECK of a cached config without a usable type are CNI errors", "[fuzz]") {
  // From fuzz_cache_file (corpus/cache_file/corrupt-configs.json, bad-type-result.json).
  const char* corrupt[] = {
      R"({"cniVersion":"1.0.0"})",                                    // no type, no plugins: was UB
      R"({"cniVersion":"0.4.0","type":7})",                           // type not a string: type_error
      R"({"cniVersion":"1.0.0","plugins":"x"})",                      // plugins not a list: type_error
      R"({"cniVersion":"1.0.0","plugins":{"a":{"type":"bridge"}}})",  // plugins an object
      R"({"cniVersion":"1.0.0","plugins":[{"type":"bridge"},{"type":1}]})",
      R"({"cniVersion":"1.0.0","plugins":[]})",
      R"({"cniVersion":1,"type":"bridge"})",
  };
  const std::string result = R"({"cniVersion":"1.0.0","ips":[{"address":"10.1.1.2/24"}]})";
  for (const char* config : corrupt) {
    INFO(config);
    Replay r;
    CHECK_THROWS_AS(r.delegates.del(config, result, r.target), cni::CniError);
    CHECK_THROWS_AS(r.delegates.check(config, result, r.target), cni::CniError);
    CHECK_THROWS_AS(r.delegates.add(config, r.target), cni::CniError);
    CHECK(r.runner.requests().empty());
  }
}

TEST_CASE("fuzz: a valid cached config still replays after the shape check", "[fuzz]") {
  Replay r;
  const std::string result = R"({"cniVersion":"1.0.0","ips":[{"address":"10.1.1.2/24"}]})";
  r.delegates.del(R"({"cniVersion":"1.0.0","name":"n","type":"bridge"})", result, r.target);
  r.delegates.del(R"({"cniVersion":"1.0.0","name":"n","plugins":[{"type":"bridge"},{"type":"tuning"}]})", result,
                  r.target);
  REQUIRE(r.runner.requests().size() == 3);
  CHECK(r.runner.requests()[0].stdin_data.find("\"prevResult\":") != std::string::npos);
  CHECK(r.runner.requests()[1].path == (r.bin.path() / "tuning").string());  // DEL runs the chain in reverse
}

TEST_CASE("fuzz: too deeply nested cached results and plugin output are not copied into prevResult", "[fuzz]") {
  const std::string chain = R"({"cniVersion":"1.0.0","name":"n","plugins":[{"type":"bridge"},{"type":"tuning"}]})";
  SECTION("a deep cached result is dropped, the DEL still runs every plugin") {
    Replay r;
    r.delegates.del(chain, nested(300000), r.target);
    REQUIRE(r.runner.requests().size() == 2);
    CHECK(r.runner.requests()[0].stdin_data.find("prevResult") == std::string::npos);
  }
  SECTION("a deep ADD result of a chained plugin is a delegate failure") {
    Replay r(nested(300000));
    try {
      r.delegates.add(chain, r.target);
      FAIL("deep plugin output was accepted");
    } catch (const cni::CniError& e) {
      CHECK(e.code() == static_cast<unsigned>(cni::ErrorCode::DelegateFailed));
    }
    CHECK(r.runner.requests().size() == 1);
  }
  SECTION("a deep cached config is rejected") {
    Replay r;
    CHECK_THROWS_AS(r.delegates.del(R"({"type":"bridge","x":)" + nested(300000) + "}", "", r.target), cni::CniError);
  }
  SECTION("ordinary nesting is kept") {
    Replay r;
    r.delegates.del(chain, nested(100), r.target);
    REQUIRE(r.runner.requests().size() == 2);
    CHECK(r.runner.requests()[0].stdin_data.find("prevResult") != std::string::npos);
  }
}

TEST_CASE("fuzz: FileCache built with only a directory stores, loads and locks", "[fuzz]") {
  // fuzz_cache_file's first input tripped UBSan in this constructor (it delegated with a reference
  // to a member that was not constructed yet); the cache must work with its own sleeper.
  test::TempDir dir;
  store::FileCache cache(dir.path() / "cache");
  store::ContainerRecord record;
  record.container_id = "3f0a9c5e1b2d4f6a";
  record.network = "net";
  record.ifname = "eth0";
  record.netns = "/var/run/netns/x";
  store::AttachmentRecord cluster;
  cluster.name = "cbr0";
  cluster.ifname = "eth0";
  cluster.config = R"({"type":"bridge"})";
  cluster.cluster_network = true;
  record.attachments.push_back(cluster);
  {
    auto guard = cache.lock(record.container_id);
    cache.save(record);
  }
  auto loaded = cache.load(record.key());
  REQUIRE(loaded);
  CHECK(*loaded == record);
}
