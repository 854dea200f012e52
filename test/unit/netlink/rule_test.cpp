// Unit tests for lib/netlink/rule value functions: validation, formatting, matching, JSON.
#include "netlink/rule.h"

#include <sys/socket.h>

#include <catch2/catch.hpp>

#include "cni/error.h"
#include "net_specs.h"

using namespace manifold::netlink;
using manifold::Json;
using manifold::cni::CniError;
using manifold::test::rule;
using manifold::test::text;

namespace {

int error_code(const RuleSpec& r) {
  try {
    (void)normalize_rule(r);
  } catch (const CniError& e) {
    return static_cast<int>(e.code());
  }
  return 0;
}

}  // namespace

TEST_CASE("rules are normalised", "[netlink]") {
  const RuleSpec r = normalize_rule(rule("192.0.2.5", 1000, 30000));
  CHECK(r.family == AF_INET);
  CHECK(text(r.src) == "192.0.2.5/32");
  CHECK(text(normalize_rule(rule("2001:DB8::5/128", 1000, 30000)).src) == "2001:db8::5/128");
  CHECK(text(normalize_rule(rule("0.0.0.0/0", 1000, 30000)).src).empty());
  CHECK(normalize_rule(rule("", 1000, kRulePriorityAuto, AF_INET6)).family == AF_INET6);

  CHECK(error_code(rule("", 1000, 30000)) == 7);  // family unknown
  CHECK(error_code(rule("192.0.2.5/24", 1000, 30000)) == 7);
  CHECK(error_code(rule("192.0.2.5", 0, 30000)) == 7);
  CHECK(error_code(rule("192.0.2.5", 1000, -2)) == 7);
  CHECK(error_code(rule("192.0.2.5", 1000, 1, AF_INET6)) == 7);
  CHECK_FALSE(manifold::util::parse_ip_or_cidr("not-an-ip"));  // never becomes a RuleSpec
  CHECK(error_code(rule("", 1000, 1, 3)) == 7);
}

TEST_CASE("rules format like ip rule", "[netlink]") {
  CHECK(to_string(normalize_rule(rule("192.0.2.5/32", 1000, 30000))) == "30000: from 192.0.2.5/32 lookup 1000");
  CHECK(to_string(normalize_rule(rule("", 254, 32766, AF_INET))) == "32766: from all lookup 254");
  CHECK(to_string(normalize_rule(rule("", 254, kRulePriorityAuto, AF_INET6))) == "from all lookup 254 (IPv6)");
}

TEST_CASE("rule matching and identity", "[netlink]") {
  const RuleSpec listed = normalize_rule(rule("192.0.2.5/32", 1000, 30000));
  CHECK(rule_matches(listed, listed));
  CHECK(rule_matches(normalize_rule(rule("", 1000, kRulePriorityAuto, AF_INET)), listed));
  CHECK(rule_matches(normalize_rule(rule("192.0.2.5/32", 1000, kRulePriorityAuto)), listed));
  CHECK_FALSE(rule_matches(normalize_rule(rule("192.0.2.6/32", 1000, 30000)), listed));
  CHECK_FALSE(rule_matches(normalize_rule(rule("192.0.2.5/32", 1001, 30000)), listed));
  CHECK_FALSE(rule_matches(normalize_rule(rule("192.0.2.5/32", 1000, 30001)), listed));
  CHECK_FALSE(rule_matches(normalize_rule(rule("", 1000, 30000, AF_INET6)), listed));

  CHECK(same_rule_identity(listed, normalize_rule(rule("192.0.2.5", 1000, 30000))));
  CHECK_FALSE(same_rule_identity(listed, normalize_rule(rule("192.0.2.5", 1000, 30001))));
}

TEST_CASE("rules round-trip through JSON", "[netlink]") {
  const RuleSpec r = normalize_rule(rule("2001:db8::5/128", 1000, 30000));
  const Json j = to_json(r);
  CHECK(j.dump() == R"({"family":6,"src":"2001:db8::5/128","table":1000,"priority":30000})");
  CHECK(rule_from_json(j) == r);
  for (const char* bad :
       {R"("x")", R"({"family":4})", R"({"family":4,"table":"1"})", R"({"family":4,"table":1,"priority":-2})",
        R"({"family":6,"src":"192.0.2.5/32","table":1})", R"({"family":4,"src":"192.0.2.5/24","table":1})",
        R"({"family":4,"src":null,"table":1})", R"({"family":4,"src":"not-an-ip","table":1})"}) {
    INFO(bad);
    try {
      (void)rule_from_json(Json::parse(bad));
      FAIL("accepted");
    } catch (const CniError& e) {
      CHECK(e.code() == 6);
    }
  }
}
