// Unit tests for the fake runner's table simulation: it must accept what real iptables-restore
// --noflush accepts and refuse what it refuses, atomically, or the lifecycle tests prove nothing.
#include <catch2/catch.hpp>

#include "cni/error.h"
#include "firewall/fake_runner.h"

using namespace manifold;
using namespace manifold::firewall;

namespace {

const SavedChain& chain(const SavedTable& t, const char* name) {
  const SavedChain* c = t.find(name);
  REQUIRE(c != nullptr);
  return *c;
}

}  // namespace

TEST_CASE("firewall: fake restore: chain lines create or flush, -A/-I/-D/-F/-X edit", "[firewall]") {
  SavedTable nat = empty_nat_table();
  apply_restore_payload(nat,
                        "*nat\n:FOO - [0:0]\n-A FOO -j RETURN\n-A FOO -p tcp -j RETURN\n"
                        "-A PREROUTING -j FOO\n-I PREROUTING 1 -i x -j FOO\n-I PREROUTING -i y -j FOO\nCOMMIT\n");
  CHECK(chain(nat, "FOO").rules == std::vector<std::string>{"-j RETURN", "-p tcp -j RETURN"});
  CHECK(chain(nat, "PREROUTING").rules == std::vector<std::string>{"-i y -j FOO", "-i x -j FOO", "-j FOO"});
  apply_restore_payload(nat, "*nat\n:FOO - [0:0]\n-A FOO -j DROP\n-D PREROUTING -i x -j FOO\nCOMMIT\n");
  CHECK(chain(nat, "FOO").rules == std::vector<std::string>{"-j DROP"});  // flushed, then refilled
  CHECK(chain(nat, "PREROUTING").rules == std::vector<std::string>{"-i y -j FOO", "-j FOO"});
  apply_restore_payload(nat, "*nat\n:FOO - [0:0]\n-D PREROUTING -i y -j FOO\n-D PREROUTING -j FOO\n-X FOO\nCOMMIT\n");
  CHECK(nat.find("FOO") == nullptr);
  CHECK(chain(nat, "PREROUTING").rules.empty());
}

TEST_CASE("firewall: fake restore: refusals leave the table unchanged", "[firewall]") {
  SavedTable nat = empty_nat_table();
  apply_restore_payload(nat, "*nat\n:FOO - [0:0]\n-A FOO -j RETURN\n-A OUTPUT -j FOO\nCOMMIT\n");
  const std::string before = render_table(nat);
  for (const char* bad : {
           "*nat\n-D OUTPUT -j BAR\nCOMMIT\n",                                   // missing rule
           "*nat\n-A OUTPUT -j BAR\nCOMMIT\n",                                   // unknown target
           "*nat\n-A NOPE -j RETURN\nCOMMIT\n",                                  // unknown chain
           "*nat\n-X FOO\nCOMMIT\n",                                             // not empty
           "*nat\n:FOO - [0:0]\n-X FOO\nCOMMIT\n",                               // still referenced
           "*nat\n-X OUTPUT\nCOMMIT\n",                                          // built-in
           "*nat\n-N FOO\nCOMMIT\n",                                             // exists
           "*nat\n-I OUTPUT 5 -j RETURN\nCOMMIT\n",                              // index too big
           "*nat\n:BAR - [0:0]\n-A BAR -j RETURN\n",                             // no COMMIT
           "-A OUTPUT -j RETURN\n",                                              // no table
           "*mangle\n-A INPUT -j DROP\nCOMMIT\n",                                // not simulated
           "*nat\n-Z OUTPUT\nCOMMIT\n",                                          // unknown command
           "*nat\n:BAR - [0:0]\n-A OUTPUT -j BAR\n-D OUTPUT -j NOPE\nCOMMIT\n",  // late failure
       }) {
    INFO(bad);
    try {
      apply_restore_payload(nat, bad);
      FAIL("accepted");
    } catch (const cni::CniError& e) {
      CHECK(e.code() == 106);
      CHECK_THAT(e.msg(), Catch::Contains("line "));
    }
    CHECK(render_table(nat) == before);
  }
}

TEST_CASE("firewall: fake runner: records calls, keeps a table per family and backend", "[firewall]") {
  FakeIptablesRunner runner;
  runner.restore(Family::V4, Backend::Nft, "*nat\n:A - [0:0]\nCOMMIT\n");
  CHECK_THAT(runner.save(Family::V4, Backend::Nft, Table::Nat), Catch::Contains(":A - [0:0]"));
  CHECK_THAT(runner.save(Family::V6, Backend::Nft, Table::Nat), !Catch::Contains(":A - [0:0]"));
  CHECK_THAT(runner.save(Family::V4, Backend::Legacy, Table::Nat), !Catch::Contains(":A - [0:0]"));
  CHECK(runner.count("restore") == 1);
  CHECK(runner.count("save") == 3);
  CHECK(runner.calls().front().payload == "*nat\n:A - [0:0]\nCOMMIT\n");
  runner.set_detected(Backend::Legacy);
  CHECK(runner.detect() == Backend::Legacy);
  runner.load(Family::V6, Backend::Legacy, "*nat\n:B - [0:0]\nCOMMIT\n");
  CHECK(runner.count("restore") == 1);  // load() is not recorded
  CHECK_THAT(runner.table_text(Family::V6, Backend::Legacy), Catch::Contains(":B - [0:0]"));
  runner.clear_calls();
  CHECK(runner.calls().empty());
}

TEST_CASE("firewall: fake runner: the filter table is kept apart from nat", "[firewall]") {
  FakeIptablesRunner runner;
  runner.restore(Family::V4, Backend::Nft, "*filter\n:F - [0:0]\n-A INPUT -i net1 -j F\nCOMMIT\n");
  CHECK_THAT(runner.save(Family::V4, Backend::Nft, Table::Filter), Catch::Contains("-A INPUT -i net1 -j F"));
  CHECK_THAT(runner.save(Family::V4, Backend::Nft, Table::Filter), Catch::Contains(":FORWARD ACCEPT"));
  CHECK_THAT(runner.save(Family::V4, Backend::Nft, Table::Nat), !Catch::Contains(":F "));
  CHECK(runner.calls().back().table == Table::Nat);
  SavedTable filter = empty_table(Table::Filter);
  CHECK_THROWS_AS(apply_restore_payload(filter, "*filter\n-X INPUT\nCOMMIT\n"), cni::CniError);
  CHECK_THROWS_AS(apply_restore_payload(filter, "*nat\n:A - [0:0]\nCOMMIT\n"), cni::CniError);
  CHECK(payload_table("*filter\nCOMMIT\n") == Table::Filter);
  CHECK_THROWS_AS(payload_table("*raw\nCOMMIT\n"), cni::CniError);
}

TEST_CASE("firewall: fake runner: missing binaries and injected failures", "[firewall]") {
  FakeIptablesRunner runner;
  runner.set_missing(Family::V6, Backend::Legacy);
  CHECK_FALSE(runner.available(Family::V6, Backend::Legacy));
  CHECK(runner.available(Family::V6, Backend::Nft));
  CHECK_THROWS_AS(runner.save(Family::V6, Backend::Legacy, Table::Nat), cni::CniError);
  CHECK_THROWS_AS(runner.restore(Family::V6, Backend::Legacy, "*nat\nCOMMIT\n"), cni::CniError);
  runner.fail_restores(Family::V4, 1);
  CHECK_THROWS_AS(runner.restore(Family::V4, Backend::Nft, "*nat\n:A - [0:0]\nCOMMIT\n"), cni::CniError);
  CHECK_THAT(runner.table_text(Family::V4, Backend::Nft), !Catch::Contains(":A "));
  CHECK_NOTHROW(runner.restore(Family::V4, Backend::Nft, "*nat\n:A - [0:0]\nCOMMIT\n"));
  int hooked = 0;
  runner.set_before_restore([&](Family, Backend) { ++hooked; });
  runner.restore(Family::V4, Backend::Nft, "*nat\nCOMMIT\n");
  CHECK(hooked == 1);
}
