// Unit tests for RealIptablesRunner without root: the "iptables" binaries are small shell scripts in
// a temporary bin dir that log their arguments, environment and stdin, print canned output and can
// be told to fail. They pin the exact command lines (--noflush always, -w only for legacy), the
// binary lookup, the error messages, and the backend detection algorithm.
#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "cni/error.h"
#include "firewall/runner.h"
#include "temp_dir.h"

using namespace manifold;
using namespace manifold::firewall;

namespace {

const char* kScript =
    "#!/bin/sh\n"
    "n=$(basename \"$0\")\n"
    "d=$(dirname \"$0\")\n"
    "echo \"$n $*\" >> \"$d/calls\"\n"
    "env > \"$d/env.$n\"\n"
    "if [ \"$1\" = \"--version\" ]; then cat \"$d/version.$n\" 2>/dev/null; exit 0; fi\n"
    "case \"$n\" in *-restore) cat > \"$d/stdin.$n\";; esac\n"
    "if [ -f \"$d/out.$n\" ]; then cat \"$d/out.$n\"; fi\n"
    "if [ -f \"$d/fail.$n\" ]; then cat \"$d/fail.$n\" >&2; exit 1; fi\n"
    "exit 0\n";

const char* kAllBinaries[] = {"iptables-legacy-save", "iptables-legacy-restore", "iptables-nft-save",
                              "iptables-nft-restore", "ip6tables-legacy-save",   "ip6tables-legacy-restore",
                              "ip6tables-nft-save",   "ip6tables-nft-restore"};

void write_file(const std::string& path, const std::string& text, mode_t mode = 0644) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A bin dir holding the given fake binaries.
struct FakeBin {
  test::TempDir dir;
  explicit FakeBin(std::initializer_list<const char*> names) {
    for (const char* n : names) write_file(dir.str() + "/" + n, kScript, 0755);
  }
  FakeBin() {
    for (const char* n : kAllBinaries) write_file(dir.str() + "/" + n, kScript, 0755);
  }
  std::string path(const std::string& name) const { return dir.str() + "/" + name; }
  std::string calls() const { return read_file(path("calls")); }
  RealIptablesRunner runner(int lock_wait = 30) const {
    RealIptablesRunner::Options o;
    o.lock_wait_seconds = lock_wait;
    o.bin_dirs = {dir.str()};
    return RealIptablesRunner(o);
  }
};

}  // namespace

TEST_CASE("firewall: real runner: save runs <family>-<backend>-save -t <table>", "[firewall]") {
  FakeBin bin;
  write_file(bin.path("out.iptables-nft-save"), "*nat\nCOMMIT\n");
  RealIptablesRunner runner = bin.runner();
  CHECK(runner.save(Family::V4, Backend::Nft, Table::Nat) == "*nat\nCOMMIT\n");
  runner.save(Family::V6, Backend::Legacy, Table::Filter);
  CHECK(bin.calls() == "iptables-nft-save -t nat\nip6tables-legacy-save -t filter\n");
}

TEST_CASE("firewall: real runner: restore is always --noflush, -w only for legacy", "[firewall]") {
  FakeBin bin;
  RealIptablesRunner runner = bin.runner(7);
  runner.restore(Family::V4, Backend::Nft, "*nat\nCOMMIT\n");
  runner.restore(Family::V6, Backend::Legacy, "*nat\n:X - [0:0]\nCOMMIT\n");
  CHECK(bin.calls() == "iptables-nft-restore --noflush\nip6tables-legacy-restore --noflush -w 7\n");
  CHECK(read_file(bin.path("stdin.iptables-nft-restore")) == "*nat\nCOMMIT\n");
  CHECK(read_file(bin.path("stdin.ip6tables-legacy-restore")) == "*nat\n:X - [0:0]\nCOMMIT\n");
  const std::string env = read_file(bin.path("env.iptables-nft-restore"));
  CHECK_THAT(env, Catch::Contains("LC_ALL=C\n"));
  CHECK_THAT(env, !Catch::Contains("XTABLES_LOCKFILE"));  // no netns path given
}

TEST_CASE("firewall: real runner: a large payload is fed completely", "[firewall]") {
  FakeBin bin;
  std::string payload = "*nat\n";
  for (int i = 0; i < 20000; ++i) payload += "-A X -m comment --comment \"rule " + std::to_string(i) + "\" -j RETURN\n";
  payload += "COMMIT\n";
  REQUIRE(payload.size() > 512 * 1024);
  bin.runner().restore(Family::V4, Backend::Nft, payload);
  CHECK(read_file(bin.path("stdin.iptables-nft-restore")) == payload);
}

TEST_CASE("firewall: real runner: failures quote iptables and the payload line", "[firewall]") {
  FakeBin bin;
  RealIptablesRunner runner = bin.runner();
  write_file(bin.path("fail.iptables-nft-restore"), "iptables-nft-restore: line 3 failed\n");
  try {
    runner.restore(Family::V4, Backend::Nft, "*nat\n:A - [0:0]\n-D OUTPUT -j A\nCOMMIT\n");
    FAIL("restore succeeded");
  } catch (const cni::CniError& e) {
    CHECK(e.code() == 106);
    CHECK_THAT(e.msg(), Catch::Contains("iptables-nft-restore failed (IPv4, nft)"));
    CHECK_THAT(e.msg(), Catch::Contains("line 3 failed"));
    CHECK_THAT(e.msg(), Catch::Contains("(at: -D OUTPUT -j A)"));
    CHECK(e.details() == "iptables-nft-restore: line 3 failed\n");
  }
  write_file(bin.path("fail.ip6tables-legacy-restore"),
             "ip6tables-restore v1.8.9 (legacy): invalid portrange specified\nError occurred at line: 2\n");
  try {
    runner.restore(Family::V6, Backend::Legacy, "*nat\n-A X -m multiport --dports 5:5 -j RETURN\nCOMMIT\n");
    FAIL("restore succeeded");
  } catch (const cni::CniError& e) {
    CHECK_THAT(e.msg(), Catch::Contains("invalid portrange"));
    CHECK_THAT(e.msg(), Catch::Contains("(at: -A X -m multiport --dports 5:5 -j RETURN)"));
  }
  write_file(bin.path("fail.iptables-legacy-save"), "can't initialize iptables table `nat'\n");
  try {
    runner.save(Family::V4, Backend::Legacy, Table::Nat);
    FAIL("save succeeded");
  } catch (const cni::CniError& e) {
    CHECK(e.code() == 106);
    CHECK_THAT(e.msg(), Catch::Contains("iptables-legacy-save -t nat failed") && Catch::Contains("can't initialize"));
  }
}

TEST_CASE("firewall: real runner: missing binaries are a clear error 106", "[firewall]") {
  test::TempDir empty;
  RealIptablesRunner::Options o;
  o.bin_dirs = {empty.str(), empty.str() + "/nope"};
  RealIptablesRunner runner(o);
  CHECK_FALSE(runner.available(Family::V4, Backend::Nft));
  try {
    runner.save(Family::V4, Backend::Nft, Table::Nat);
    FAIL("save succeeded");
  } catch (const cni::CniError& e) {
    CHECK(e.code() == 106);
    CHECK_THAT(e.msg(), Catch::Contains("iptables-nft-save not found in " + empty.str()));
  }
  CHECK_THROWS_AS(runner.restore(Family::V6, Backend::Legacy, "*nat\nCOMMIT\n"), cni::CniError);
  CHECK_THROWS_AS(runner.detect(), cni::CniError);

  // Only a save binary, or a non-executable restore: not available.
  FakeBin partial{"iptables-nft-save"};
  write_file(partial.path("iptables-nft-restore"), kScript, 0644);
  CHECK_FALSE(partial.runner().available(Family::V4, Backend::Nft));
  CHECK_THROWS_AS(partial.runner().restore(Family::V4, Backend::Nft, "*nat\nCOMMIT\n"), cni::CniError);
}

TEST_CASE("firewall: real runner: bin dirs are searched in order", "[firewall]") {
  FakeBin first{"iptables-nft-save"};
  FakeBin second;
  RealIptablesRunner::Options o;
  o.bin_dirs = {first.dir.str(), second.dir.str()};
  RealIptablesRunner runner(o);
  runner.save(Family::V4, Backend::Nft, Table::Nat);
  runner.restore(Family::V4, Backend::Nft, "*nat\nCOMMIT\n");
  CHECK(first.calls() == "iptables-nft-save -t nat\n");
  CHECK(second.calls() == "iptables-nft-restore --noflush\n");
}

TEST_CASE("firewall: real runner: detect follows Istio's order", "[firewall]") {
  SECTION("legacy tables holding rules win") {
    FakeBin bin;
    write_file(bin.path("out.iptables-legacy-save"), "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -j X\nCOMMIT\n");
    write_file(bin.path("version.iptables-nft-save"), "iptables-nft-save v1.8.9 (nf_tables)\n");
    CHECK(bin.runner().detect() == Backend::Legacy);
    CHECK_THAT(bin.calls(), Catch::StartsWith("iptables-legacy-save \n"));  // no -t: existing tables only
  }
  SECTION("legacy IPv6 rules count too") {
    FakeBin bin;
    write_file(bin.path("out.ip6tables-legacy-save"), "*nat\n-A OUTPUT -j X\nCOMMIT\n");
    CHECK(bin.runner().detect() == Backend::Legacy);
  }
  SECTION("otherwise nft when it reports nf_tables and the probe loads") {
    FakeBin bin;
    write_file(bin.path("out.iptables-legacy-save"), "*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n");
    write_file(bin.path("version.iptables-nft-save"), "iptables-nft-save v1.8.9 (nf_tables)\n");
    CHECK(bin.runner().detect() == Backend::Nft);
    const std::string probe = read_file(bin.path("stdin.iptables-nft-restore"));
    CHECK_THAT(probe, Catch::StartsWith("*nat\n:CNIMESH-PROBE - [0:0]\n"));
    CHECK_THAT(probe, Catch::EndsWith("-X CNIMESH-PROBE\nCOMMIT\n"));
    CHECK_THAT(bin.calls(), Catch::Contains("iptables-nft-restore --noflush\n"));
  }
  SECTION("otherwise legacy when the nft probe fails") {
    FakeBin bin;
    write_file(bin.path("version.iptables-nft-save"), "iptables-nft-save v1.8.9 (nf_tables)\n");
    write_file(bin.path("fail.iptables-nft-restore"), "Could not fetch rule set generation id\n");
    CHECK(bin.runner().detect() == Backend::Legacy);
  }
  SECTION("otherwise legacy when the nft binary is not nf_tables") {
    FakeBin bin;
    write_file(bin.path("version.iptables-nft-save"), "iptables-save v1.8.9 (legacy)\n");
    CHECK(bin.runner().detect() == Backend::Legacy);
    CHECK_THAT(bin.calls(), !Catch::Contains("restore"));
  }
  SECTION("nft alone") {
    FakeBin bin{"iptables-nft-save", "iptables-nft-restore"};
    write_file(bin.path("version.iptables-nft-save"), "iptables-nft-save v1.8.9 (nf_tables)\n");
    CHECK(bin.runner().detect() == Backend::Nft);
  }
}
