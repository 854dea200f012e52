// Unit tests for lib/netlink/route value functions: validation/canonical form, formatting, the
// kernel's matching and identity rules, and the strict JSON codec.
#include "netlink/route.h"

#include <sys/socket.h>

#include <catch2/catch.hpp>

#include "cni/error.h"
#include "net_specs.h"

using namespace manifold::netlink;
using manifold::Json;
using manifold::cni::CniError;
using manifold::test::ip;
using manifold::test::route;
using manifold::test::text;

namespace {

int error_code(const RouteSpec& r) {
  try {
    (void)normalize_route(r);
  } catch (const CniError& e) {
    return static_cast<int>(e.code());
  }
  return 0;
}

}  // namespace

TEST_CASE("routes are normalised to one canonical form", "[netlink]") {
  RouteSpec r = normalize_route(route("10.1.0.0/16", "10.0.0.1", 3));
  CHECK(r.family == AF_INET);
  CHECK(text(r.dst) == "10.1.0.0/16");

  CHECK(text(normalize_route(route("0.0.0.0/0", "10.0.0.1", 0)).dst).empty());
  CHECK(text(normalize_route(route("::/0", "fe80::1", 2)).dst).empty());
  CHECK(normalize_route(route("", "fe80::1", 2)).family == AF_INET6);

  RouteSpec v6 = normalize_route(route("2001:DB8:0::/48", "2001:db8::0:1", 2));
  CHECK(text(v6.dst) == "2001:db8::/48");
  CHECK(text(v6.gw) == "2001:db8::1");

  RouteSpec host = normalize_route(route("192.0.2.7", "", 2));
  CHECK(text(host.dst) == "192.0.2.7/32");

  RouteSpec src = route("10.0.0.0/24", "", 2);
  src.prefsrc = ip("10.0.0.5");
  CHECK(text(normalize_route(src).prefsrc) == "10.0.0.5");
}

TEST_CASE("invalid routes are rejected with InvalidConfig", "[netlink]") {
  CHECK(error_code(route("10.1.2.3/16", "", 1)) == 7);  // host bits
  // Text that is no prefix or address never becomes a RouteSpec: util::parse_* refuse it (and
  // route_from_json rejects it, below).
  CHECK_FALSE(manifold::util::parse_ip_or_cidr("10.0.0.0/33"));
  CHECK_FALSE(manifold::util::parse_ip_or_cidr("garbage"));
  CHECK(error_code(route("10.0.0.0/8", "2001:db8::1", 1)) == 7);  // mixed families
  CHECK_FALSE(manifold::util::parse_ip("10.0.0.1/32"));           // gateway with a prefix
  CHECK(error_code(route("", "", 1)) == 7);                       // family unknown
  CHECK(error_code(route("10.0.0.0/8", "", -1)) == 7);
  CHECK(error_code(route("10.0.0.0/8", "", 1, 0)) == 7);
  CHECK(error_code(route("10.0.0.0/8", "", 1, -5)) == 7);
  RouteSpec r = route("10.0.0.0/8", "", 1);
  r.family = AF_INET6;
  CHECK(error_code(r) == 7);
  r.family = 99;
  CHECK(error_code(r) == 7);
  r = route("10.0.0.0/8", "", 1);
  r.scope = 255;
  CHECK(error_code(r) == 7);
  r.scope = kScopeAuto;
  r.protocol = 256;
  CHECK(error_code(r) == 7);
  r.protocol = 0;
  r.priority = -1;
  CHECK(error_code(r) == 7);
  r.priority = 0;
  r.prefsrc = ip("2001:db8::1");
  CHECK(error_code(r) == 7);
  try {
    (void)normalize_route(route("10.1.2.3/16", "", 1));
  } catch (const CniError& e) {
    CHECK(e.msg().find("did you mean 10.1.0.0/16?") != std::string::npos);
  }
}

TEST_CASE("routes format like ip route", "[netlink]") {
  RouteSpec r = normalize_route(route("", "10.0.0.1", 3, 1000));
  CHECK(to_string(r) == "default via 10.0.0.1 dev #3 table 1000");
  r.protocol = kProtoKernel;
  r.scope = kScopeLink;
  r.prefsrc = ip("10.0.0.5");
  r.priority = 100;
  CHECK(to_string(r) == "default via 10.0.0.1 dev #3 table 1000 proto kernel scope link src 10.0.0.5 metric 100");
  CHECK(to_string(normalize_route(route("10.2.0.0/16", "", 2))) == "10.2.0.0/16 dev #2");
}

TEST_CASE("route_as_added mirrors what the kernel reports", "[netlink]") {
  RouteSpec linkroute = route_as_added(normalize_route(route("10.2.0.0/16", "", 2)));
  CHECK(linkroute.scope == kScopeLink);
  CHECK(linkroute.protocol == kProtoBoot);
  CHECK(linkroute.priority == 0);

  RouteSpec viaroute = route_as_added(normalize_route(route("", "10.0.0.1", 2)));
  CHECK(viaroute.scope == kScopeUniverse);

  RouteSpec v6 = route_as_added(normalize_route(route("2001:db8:5::/64", "", 2)));
  CHECK(v6.scope == kScopeUniverse);
  CHECK(v6.priority == kIpv6DefaultMetric);

  RouteSpec explicit_proto = normalize_route(route("10.2.0.0/16", "", 2));
  explicit_proto.protocol = kProtoStatic;
  explicit_proto.priority = 7;
  CHECK(route_as_added(explicit_proto).protocol == kProtoStatic);
  CHECK(route_as_added(explicit_proto).priority == 7);
}

TEST_CASE("route matching follows the kernel's delete semantics", "[netlink]") {
  const RouteSpec listed = route_as_added(normalize_route(route("", "10.0.0.1", 3)));
  auto v4 = [](RouteSpec r) {
    r.family = AF_INET;
    return normalize_route(r);
  };
  CHECK(route_matches(v4(route("", "", 0)), listed));  // "ip route del default"
  CHECK(route_matches(normalize_route(route("", "10.0.0.1", 0)), listed));
  CHECK(route_matches(v4(route("", "", 3)), listed));
  CHECK_FALSE(route_matches(normalize_route(route("", "10.0.0.2", 0)), listed));
  CHECK_FALSE(route_matches(v4(route("", "", 4)), listed));
  CHECK_FALSE(route_matches(v4(route("", "", 3, 1000)), listed));
  CHECK_FALSE(route_matches(normalize_route(route("10.0.0.0/8", "", 3)), listed));
  RouteSpec with_scope = v4(route("", "", 3));
  with_scope.scope = kScopeLink;
  CHECK_FALSE(route_matches(with_scope, listed));
  with_scope.protocol = kProtoKernel;
  with_scope.scope = kScopeAuto;
  CHECK_FALSE(route_matches(with_scope, listed));

  // IPv6 ignores the scope, as the kernel does.
  const RouteSpec v6 = route_as_added(normalize_route(route("2001:db8::/64", "", 2)));
  RouteSpec v6_pattern = normalize_route(route("2001:db8::/64", "", 2));
  v6_pattern.scope = kScopeLink;
  CHECK(route_matches(v6_pattern, v6));

  // Identity: same dst/table/metric collide regardless of the next hop.
  const RouteSpec other_hop = route_as_added(normalize_route(route("", "10.0.0.9", 4)));
  CHECK(same_route_identity(listed, other_hop));
  RouteSpec other_metric = other_hop;
  other_metric.priority = 5;
  CHECK_FALSE(same_route_identity(listed, other_metric));
}

TEST_CASE("routes round-trip through JSON and hostile JSON is rejected", "[netlink]") {
  RouteSpec r = normalize_route(route("10.1.0.0/16", "10.0.0.1", 3, 1000));
  r.prefsrc = ip("10.0.0.5");
  r.priority = 20;
  const Json j = to_json(r);
  CHECK(j.dump() == R"({"family":4,"dst":"10.1.0.0/16","gw":"10.0.0.1","ifindex":3,"table":1000,"scope":-1,)"
                    R"("protocol":0,"prefsrc":"10.0.0.5","priority":20})");
  CHECK(route_from_json(j) == r);
  CHECK(route_from_json(Json::parse(R"({"family":6,"dst":"","gw":"fe80::1","ifindex":2})")).table == kMainTable);

  for (const char* bad :
       {R"([])", R"({})", R"({"family":5})", R"({"family":"4"})", R"({"family":4,"dst":7})",
        R"({"family":4,"gw":"10.0.0.1","table":0})", R"({"family":4,"gw":"10.0.0.1","table":1.5})",
        R"({"family":4,"gw":"10.0.0.1","ifindex":-1})", R"({"family":4,"gw":"10.0.0.1","table":4294967296})",
        R"({"family":4,"gw":"nope"})", R"({"family":6,"gw":"10.0.0.1"})",
        R"({"family":4,"dst":"10.1.2.3/8","gw":"10.0.0.1"})", R"({"family":4,"gw":"10.0.0.1","scope":300})",
        R"({"family":4,"dst":"garbage","gw":"10.0.0.1"})", R"({"family":4,"dst":"10.0.0.0/33","gw":"10.0.0.1"})",
        R"({"family":4,"gw":"10.0.0.1/32"})", R"({"family":4,"gw":"10.0.0.1","prefsrc":"x"})"}) {
    INFO(bad);
    try {
      (void)route_from_json(Json::parse(bad));
      FAIL("accepted");
    } catch (const CniError& e) {
      CHECK(e.code() == 6);
    }
  }
  Json long_dst = to_json(r);
  long_dst["dst"] = std::string(1000, '1');
  CHECK_THROWS_AS(route_from_json(long_dst), CniError);
}
