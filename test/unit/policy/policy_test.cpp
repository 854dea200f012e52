// Unit tests for reading MultiNetworkPolicy objects: NetworkPolicy's defaults (policyTypes, TCP),
// every kind of peer and port, the policy-for annotation, each validation rule with the path and
// wording the user sees, and the fail-closed reading of an invalid policy.
#include <catch2/catch.hpp>

#include "policy/policy.h"
#include "policy/policy_error.h"

using namespace manifold;
using namespace manifold::policy;

namespace {

// A policy object in namespace "default" with `spec` and, unless null, the policy-for annotation.
Json object(const std::string& spec, const char* policy_for = "blue") {
  Json o = {{"apiVersion", "k8s.cni.cncf.io/v1beta1"},
            {"kind", "MultiNetworkPolicy"},
            {"metadata", {{"name", "p1"}, {"namespace", "default"}}},
            {"spec", Json::parse(spec)}};
  if (policy_for != nullptr) o["metadata"]["annotations"] = {{std::string(kPolicyForAnnotation), policy_for}};
  return o;
}

util::IpPrefix cidr(const char* text) { return *util::parse_cidr(text); }

}  // namespace

TEST_CASE("policy: policyTypes default as NetworkPolicy's do", "[policy]") {
  const MultiNetworkPolicy ingress_only = read_policy(object(R"({"podSelector": {}})"));
  REQUIRE(ingress_only.valid());
  CHECK(ingress_only.ingress);
  CHECK_FALSE(ingress_only.egress);
  const MultiNetworkPolicy with_egress = read_policy(object(R"({"podSelector": {}, "egress": [{}]})"));
  CHECK(with_egress.ingress);
  CHECK(with_egress.egress);
  const MultiNetworkPolicy empty_egress = read_policy(object(R"({"podSelector": {}, "egress": []})"));
  CHECK_FALSE(empty_egress.egress);  // an empty list is no rule
  const MultiNetworkPolicy egress_only =
      read_policy(object(R"({"podSelector": {}, "policyTypes": ["Egress"], "ingress": [{}]})"));
  CHECK_FALSE(egress_only.ingress);
  CHECK(egress_only.egress);
  const MultiNetworkPolicy defaulted = read_policy(object(R"({"podSelector": {}, "policyTypes": []})"));
  CHECK(defaulted.ingress);
  CHECK_FALSE(defaulted.egress);
}

TEST_CASE("policy: peers, ports and ipBlocks are read into typed values", "[policy]") {
  const MultiNetworkPolicy p = read_policy(object(R"({
    "podSelector": {"matchLabels": {"app": "web"}},
    "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "client"}}},
                          {"namespaceSelector": {}},
                          {"podSelector": {}, "namespaceSelector": {"matchLabels": {"team": "a"}}},
                          {"ipBlock": {"cidr": "192.0.2.7/24", "except": ["192.0.2.128/25"]}}],
                 "ports": [{"port": 80}, {"protocol": "UDP", "port": "dns"}, {"protocol": "SCTP"},
                           {"port": 9000, "endPort": 9010}]}],
    "egress": [{"to": [], "ports": null}]})",
                                                  "blue, other/red"));
  REQUIRE(p.valid());
  CHECK(p.id() == "default/p1");
  CHECK(p.networks == std::vector<NetworkRef>{{"default", "blue"}, {"other", "red"}});
  CHECK(p.covers("default/blue"));
  CHECK(p.covers("other/red"));
  CHECK_FALSE(p.covers("other/blue"));
  REQUIRE(p.ingress_rules.size() == 1);
  const PolicyRule& r = p.ingress_rules[0];
  REQUIRE(r.peers.size() == 4);
  CHECK(r.peers[0].pod_selector->matches({{"role", "client"}}));
  CHECK_FALSE(r.peers[0].namespace_selector.has_value());
  CHECK(r.peers[1].namespace_selector->selects_everything());
  CHECK_FALSE(r.peers[1].pod_selector.has_value());
  CHECK(r.peers[2].pod_selector->selects_everything());
  CHECK(r.peers[2].namespace_selector->matches({{"team", "a"}}));
  REQUIRE(r.peers[3].ip_block.has_value());
  CHECK(r.peers[3].ip_block->cidr == cidr("192.0.2.0/24"));  // host bits cleared
  CHECK(r.peers[3].ip_block->except == std::vector<util::IpPrefix>{cidr("192.0.2.128/25")});
  CHECK(r.ports == std::vector<PolicyPort>{{Protocol::Tcp, 80, "", 0},
                                           {Protocol::Udp, 0, "dns", 0},
                                           {Protocol::Sctp, 0, "", 0},
                                           {Protocol::Tcp, 9000, "", 9010}});
  REQUIRE(p.egress_rules.size() == 1);
  CHECK(p.egress_rules[0].peers.empty());
  CHECK(p.egress_rules[0].ports.empty());
}

TEST_CASE("policy: policy-for lists NADs by name or namespace/name", "[policy]") {
  CHECK(parse_policy_for("blue", "ns1") == std::vector<NetworkRef>{{"ns1", "blue"}});
  CHECK(parse_policy_for(" a , x/b,a ", "ns1") == std::vector<NetworkRef>{{"ns1", "a"}, {"x", "b"}});
  CHECK(parse_policy_for("", "ns1").empty());
  for (const char* bad : {"a,", ",a", "a,,b", "a/b/c", "/b", "a/", "Blue", "ns_1/a", "a b"}) {
    INFO(bad);
    try {
      (void)parse_policy_for(bad, "ns1");
      FAIL("accepted");
    } catch (const PolicyError& e) {
      CHECK(e.where() == "metadata.annotations[\"k8s.v1.cni.cncf.io/policy-for\"]");
      CHECK_THAT(e.message(), Catch::Contains("expected name or namespace/name, comma-separated"));
    }
  }
}

TEST_CASE("policy: a policy without policy-for covers no network", "[policy]") {
  const MultiNetworkPolicy p = read_policy(object(R"({"podSelector": {}})", nullptr));
  CHECK(p.valid());
  CHECK(p.networks.empty());
  CHECK_FALSE(p.covers("default/blue"));
}

TEST_CASE("policy: every validation rule names the field and what was expected", "[policy]") {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"({})", "spec.podSelector: is required ({} selects every pod of the namespace)"},
      {R"({"podSelector": {}, "podselector": {}})", "spec.podselector: is not a field of a MultiNetworkPolicy spec"},
      {R"({"podSelector": {}, "policyTypes": ["Ingress", "Both"]})",
       "spec.policyTypes[1]: must be Ingress or Egress, found \"Both\""},
      {R"({"podSelector": {}, "policyTypes": "Ingress"})", "spec.policyTypes: must be a list of at most two"},
      {R"({"podSelector": {}, "ingress": {}})", "spec.ingress: must be a list of rules"},
      {R"({"podSelector": {}, "ingress": [{"to": []}]})", "spec.ingress[0].to: is not a field of a rule (from, ports)"},
      {R"({"podSelector": {}, "egress": [{"from": []}]})", "spec.egress[0].from: is not a field of a rule (to, ports)"},
      {R"({"podSelector": {}, "ingress": [{"from": [{}]}]})",
       "spec.ingress[0].from[0]: must name a podSelector, a namespaceSelector or an ipBlock"},
      {R"({"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}]}]})",
       "spec.ingress[0].from[0]: may hold an ipBlock or selectors"},
      {R"({"podSelector": {}, "ingress": [{"from": [{"ipBlock": {}}]}]})",
       "spec.ingress[0].from[0].ipBlock.cidr: is required"},
      {R"({"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.1"}}]}]})",
       "spec.ingress[0].from[0].ipBlock.cidr: \"10.0.0.1\" is not a CIDR"},
      {R"({"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/33"}}]}]})",
       "spec.ingress[0].from[0].ipBlock.cidr: \"10.0.0.0/33\" is not a CIDR"},
      {R"({"podSelector": {}, "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16"]}}]}]})",
       "spec.egress[0].to[0].ipBlock.except[0]: 11.0.0.0/16 must lie strictly inside cidr 10.0.0.0/8"},
      {R"({"podSelector": {}, "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.0.0.0/8"]}}]}]})",
       "spec.egress[0].to[0].ipBlock.except[0]: 10.0.0.0/8 must lie strictly inside cidr 10.0.0.0/8"},
      {R"({"podSelector": {}, "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["fd00::/64"]}}]}]})",
       "spec.egress[0].to[0].ipBlock.except[0]: fd00::/64 is IPv6 but cidr 10.0.0.0/8 is IPv4"},
      {R"({"podSelector": {}, "ingress": [{"ports": [{"protocol": "tcp"}]}]})",
       "spec.ingress[0].ports[0].protocol: must be TCP, UDP or SCTP, found \"tcp\""},
      {R"({"podSelector": {}, "ingress": [{"ports": [{"port": 0}]}]})",
       "spec.ingress[0].ports[0].port: must be a port number 1-65535, found 0"},
      {R"({"podSelector": {}, "ingress": [{"ports": [{"port": 70000}]}]})",
       "spec.ingress[0].ports[0].port: must be a port number 1-65535, found 70000"},
      {R"({"podSelector": {}, "ingress": [{"ports": [{"port": "80"}]}]})",
       "spec.ingress[0].ports[0].port: \"80\" is not a port number or a container port name"},
      {R"({"podSelector": {}, "ingress": [{"ports": [{"port": "Http"}]}]})",
       "spec.ingress[0].ports[0].port: \"Http\" is not a port number or a container port name"},
      {R"({"podSelector": {}, "ingress": [{"ports": [{"endPort": 90}]}]})",
       "spec.ingress[0].ports[0].endPort: may only be given with a numeric port"},
      {R"({"podSelector": {}, "ingress": [{"ports": [{"port": "http", "endPort": 90}]}]})",
       "spec.ingress[0].ports[0].endPort: may only be given with a numeric port"},
      {R"({"podSelector": {}, "ingress": [{"ports": [{"port": 100, "endPort": 90}]}]})",
       "spec.ingress[0].ports[0].endPort: 90 is below port 100"},
      {R"({"podSelector": {}, "ingress": [{"ports": [{"port": 80, "name": "x"}]}]})",
       "spec.ingress[0].ports[0].name: is not a field of a port (protocol, port, endPort)"},
      {R"({"podSelector": {"matchLabels": {"app": "x y"}}})", "spec.podSelector.matchLabels.app: \"x y\" is not"},
  };
  for (const auto& [spec, expected] : cases) {
    INFO(spec);
    const MultiNetworkPolicy p = read_policy(object(spec));
    CHECK_FALSE(p.valid());
    CHECK_THAT(p.error, Catch::StartsWith(expected));
  }
}

TEST_CASE("policy: an invalid policy closes: both directions, no rules, what it may select", "[policy]") {
  const MultiNetworkPolicy bad_port = read_policy(object(
      R"({"podSelector": {"matchLabels": {"app": "web"}}, "policyTypes": ["Ingress"],
          "ingress": [{"ports": [{"port": -1}]}], "egress": [{}]})"));
  CHECK_FALSE(bad_port.valid());
  CHECK(bad_port.ingress);
  CHECK(bad_port.egress);
  CHECK(bad_port.ingress_rules.empty());
  CHECK(bad_port.egress_rules.empty());
  CHECK(bad_port.networks == std::vector<NetworkRef>{{"default", "blue"}});  // policy-for still applies
  REQUIRE(bad_port.pod_selector.has_value());
  CHECK(bad_port.pod_selector->matches({{"app", "web"}}));

  const MultiNetworkPolicy bad_selector = read_policy(object(R"({"podSelector": {"matchLabels": []}})"));
  CHECK_FALSE(bad_selector.valid());
  CHECK_FALSE(bad_selector.pod_selector.has_value());  // selects every pod

  const MultiNetworkPolicy bad_for = read_policy(object(R"({"podSelector": {}})", "blue,,red"));
  CHECK_FALSE(bad_for.valid());
  CHECK(bad_for.all_networks);
  CHECK(bad_for.covers("anything/at-all"));
  CHECK_THAT(bad_for.error, Catch::StartsWith("metadata.annotations[\"k8s.v1.cni.cncf.io/policy-for\"]: \"\""));
}

TEST_CASE("policy: metadata problems and non-objects are errors, the listed namespace stands in", "[policy]") {
  CHECK_THAT(read_policy(Json::array()).error, Catch::StartsWith("(object): is not a JSON object"));
  Json no_ns = object(R"({"podSelector": {}})");
  no_ns["metadata"].erase("namespace");
  CHECK_THAT(read_policy(no_ns).error, Catch::StartsWith("metadata.namespace: must be"));
  const MultiNetworkPolicy listed = read_policy(no_ns, "team-a");
  CHECK(listed.valid());
  CHECK(listed.ns == "team-a");
  CHECK(listed.networks == std::vector<NetworkRef>{{"team-a", "blue"}});
  Json bad_name = object(R"({"podSelector": {}})");
  bad_name["metadata"]["name"] = "Not_Valid";
  CHECK_THAT(read_policy(bad_name).error, Catch::StartsWith("metadata.name: must be"));
  Json bad_annotations = object(R"({"podSelector": {}})");
  bad_annotations["metadata"]["annotations"] = {{std::string(kPolicyForAnnotation), 5}};
  const MultiNetworkPolicy p = read_policy(bad_annotations);
  CHECK_THAT(p.error, Catch::StartsWith("metadata.annotations[\"k8s.v1.cni.cncf.io/policy-for\"]: must be a string"));
  CHECK(p.all_networks);
  CHECK_THAT(read_policy(object("5")).error, Catch::StartsWith("spec: is required (an object)"));
}

TEST_CASE("policy: container port names follow the IANA service name syntax", "[policy]") {
  for (const char* ok : {"http", "h2c", "a-b", "x1", "abcdefghijklmno"}) CHECK(is_port_name(ok));
  for (const char* bad : {"", "80", "-http", "http-", "a--b", "HTTP", "abcdefghijklmnop", "a_b"}) {
    INFO(bad);
    CHECK_FALSE(is_port_name(bad));
  }
  CHECK(protocol_name(Protocol::Sctp) == "sctp");
}
