// Unit tests for lib/netlink/netns that need no root: opening and validating namespace files.
// Entering namespaces (NetnsGuard) needs CAP_SYS_ADMIN and is covered by the integration tests.
#include "netlink/netns.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

using manifold::cni::CniError;
using manifold::netlink::NetnsFile;
using manifold::netlink::NetnsNotFound;
using manifold::netlink::NotANetns;

namespace {

// A temporary regular file, removed on destruction.
class TempFile {
 public:
  TempFile() {
    char name[] = "/tmp/mfnl-unit-XXXXXX";
    const int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    ::close(fd);
    path_ = name;
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

TEST_CASE("a missing namespace path is distinguishable", "[netlink]") {
  const std::string missing = "/run/netns/mfnl-unit-does-not-exist-" + std::to_string(::getpid());
  CHECK_THROWS_AS(NetnsFile::open(missing), NetnsNotFound);
  CHECK_FALSE(NetnsFile::open_if_exists(missing).has_value());
  try {
    (void)NetnsFile::open(missing);
    FAIL("no exception");
  } catch (const CniError& e) {
    CHECK(e.code() == 4);
    CHECK(e.msg() == "network namespace " + missing + " does not exist");
  }
  // A path through a regular file cannot exist either (ENOTDIR).
  TempFile file;
  CHECK_FALSE(NetnsFile::open_if_exists(file.path() + "/net").has_value());
}

TEST_CASE("files that are not network namespaces are rejected", "[netlink]") {
  TempFile file;
  try {
    (void)NetnsFile::open(file.path());
    FAIL("no exception");
  } catch (const NotANetns& e) {
    CHECK(e.code() == 4);
    CHECK(e.msg() == file.path() + " is not a network namespace");
    CHECK(e.details().find("neither nsfs nor proc") != std::string::npos);
  }
  CHECK_THROWS_AS(NetnsFile::open("/proc"), NotANetns);              // a directory on procfs
  CHECK_THROWS_AS(NetnsFile::open("/proc/self/ns/mnt"), NotANetns);  // a namespace, but not "net"
  CHECK_THROWS_AS(NetnsFile::open_if_exists(file.path()), NotANetns);
}

TEST_CASE("malformed namespace paths are rejected before any system call", "[netlink]") {
  for (const std::string& bad : {std::string(), std::string("run/netns/x"), std::string("relative"),
                                 std::string("/run/netns/a\0b", 14), std::string(5000, '/')}) {
    try {
      (void)NetnsFile::open(bad);
      FAIL("no exception for a malformed path");
    } catch (const NetnsNotFound&) {
      FAIL("a malformed path must not look like a missing namespace");
    } catch (const CniError& e) {
      CHECK(e.code() == 4);
    }
  }
}

TEST_CASE("the current namespace opens and compares", "[netlink]") {
  const NetnsFile current = NetnsFile::current();
  CHECK(current.fd() >= 0);
  NetnsFile self = NetnsFile::open("/proc/self/ns/net");
  CHECK(self.path() == "/proc/self/ns/net");
  CHECK(self.same_namespace(current));

  NetnsFile moved = std::move(self);
  CHECK(moved.fd() >= 0);
  CHECK(moved.same_namespace(current));
}
