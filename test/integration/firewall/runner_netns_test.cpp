// RealIptablesRunner in real network namespaces: it acts on the pod namespace only, an atomic
// restore that fails changes nothing, the legacy xtables lock is the namespace file (so a lock held
// elsewhere never blocks us and ours never blocks the host), and `auto` detection picks legacy when
// the legacy tables hold rules and nft otherwise, without leaving its probe behind.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "cni/error.h"
#include "netns_fixture.h"

using namespace manifold;
using namespace manifold::firewall;
using namespace manifold::firewall::itest;

namespace {

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

// An exclusive flock held on a file for the object's lifetime.
class HeldLock {
 public:
  explicit HeldLock(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~HeldLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  HeldLock(const HeldLock&) = delete;
  HeldLock& operator=(const HeldLock&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_;
};

}  // namespace

TEST_CASE("the runner reads and writes the namespace's table only", "[firewall][netns]") {
  const Backend backend = GENERATE(Backend::Nft, Backend::Legacy);
  TestNetns ns;
  FW_SKIP_UNLESS_USABLE(ns, Family::V4, backend);
  RealIptablesRunner runner = ns.runner();
  runner.restore(Family::V4, backend, "*nat\n:MFFW-TEST-" + ns.name().substr(5, 10) + " - [0:0]\nCOMMIT\n");
  CHECK(has(ns.nat_rules(Family::V4, backend), ":MFFW-TEST-"));
  CHECK(has(runner.save(Family::V4, backend, Table::Nat), ":MFFW-TEST-"));
  TestNetns other;
  REQUIRE(other.ready());
  CHECK_FALSE(has(other.runner().save(Family::V4, backend, Table::Nat), "MFFW-TEST"));
}

TEST_CASE("a failing restore is atomic and quotes iptables", "[firewall][netns]") {
  const Backend backend = GENERATE(Backend::Nft, Backend::Legacy);
  TestNetns ns;
  FW_SKIP_UNLESS_USABLE(ns, Family::V4, backend);
  RealIptablesRunner runner = ns.runner();
  const std::string before = ns.nat_rules(Family::V4, backend);
  try {
    runner.restore(
        Family::V4, backend,
        "*nat\n:CNIMESH-IN-net1 - [0:0]\n-D OUTPUT -o net1 -j CNIMESH-IN-net1\n-X CNIMESH-IN-net1\nCOMMIT\n");
    FAIL("restore succeeded");
  } catch (const cni::CniError& e) {
    CHECK(e.code() == 106);
    CHECK_THAT(e.msg(), Catch::Contains("failed (IPv4, " + std::string(backend_name(backend))));
    CHECK_THAT(e.msg(), Catch::Contains("(at: -D OUTPUT -o net1 -j CNIMESH-IN-net1)"));
    CHECK_FALSE(e.details().empty());
  }
  CHECK(ns.nat_rules(Family::V4, backend) == before);
}

TEST_CASE("the legacy xtables lock is the namespace file", "[firewall][netns]") {
  TestNetns ns;
  FW_SKIP_UNLESS_USABLE(ns, Family::V4, Backend::Legacy);
  RealIptablesRunner runner = ns.runner(1);
  {
    HeldLock lock(ns.path());
    REQUIRE(lock.held());
    try {
      runner.restore(Family::V4, Backend::Legacy, "*nat\n:MFFW-LOCK - [0:0]\nCOMMIT\n");
      FAIL("restore succeeded while the namespace lock was held");
    } catch (const cni::CniError& e) {
      CHECK(e.code() == 106);
      CHECK_THAT(e.details(), Catch::Contains("xtables lock"));
    }
  }
  CHECK_NOTHROW(runner.restore(Family::V4, Backend::Legacy, "*nat\n:MFFW-LOCK - [0:0]\nCOMMIT\n"));
  CHECK(has(ns.nat_rules(Family::V4, Backend::Legacy), ":MFFW-LOCK"));
}

TEST_CASE("auto detection: legacy when its tables hold rules, else nft", "[firewall][netns]") {
  TestNetns ns;
  FW_SKIP_UNLESS_USABLE(ns, Family::V4, Backend::Nft);
  RealIptablesRunner runner = ns.runner();
  CHECK(runner.detect() == Backend::Nft);
  CHECK_FALSE(has(ns.nat_rules(Family::V4, Backend::Nft), "PROBE"));

  TestNetns legacy_ns;
  FW_SKIP_UNLESS_USABLE(legacy_ns, Family::V4, Backend::Legacy);
  REQUIRE(legacy_ns.load(Family::V4, Backend::Legacy, "*nat\n-A OUTPUT -o lo -j RETURN\nCOMMIT\n").rc == 0);
  CHECK(legacy_ns.runner().detect() == Backend::Legacy);
  // Empty legacy tables (instantiated, no rules) do not count.
  TestNetns empty_legacy;
  REQUIRE(empty_legacy.ready());
  REQUIRE(empty_legacy.run("iptables-legacy-save -t nat").rc == 0);
  CHECK(empty_legacy.runner().detect() == Backend::Nft);
}

TEST_CASE("a namespace that does not exist is a clear error", "[firewall][netns]") {
  TestNetns ns;
  if (!ns.ready()) ITEST_SKIP(ns.why());
  RealIptablesRunner::Options options;
  options.netns_path = ns.path() + "-gone";
  RealIptablesRunner runner(options);
  if (!runner.available(Family::V4, Backend::Nft)) ITEST_SKIP("no nft binaries");
  try {
    runner.save(Family::V4, Backend::Nft, Table::Nat);
    FAIL("save succeeded");
  } catch (const cni::CniError& e) {
    CHECK(e.code() == 106);
    CHECK_THAT(e.msg(), Catch::Contains(ns.path() + "-gone"));
  }
}
