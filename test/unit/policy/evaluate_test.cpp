// Unit tests for the per-network semantics: which policies isolate an attachment, what each kind
// of peer and port allows, stacking, named ports in both directions, the fail-closed form without
// peers, invalid policies, and independence from input order.
#include <catch2/catch.hpp>

#include <algorithm>

#include "policy_world.h"

using namespace manifold;
using namespace manifold::policy;
using test::peer_world;
using test::policy_of;
using test::web_pod;

namespace {

constexpr const char* kBlue = "default/blue";

util::IpPrefix host(const char* ip) { return util::IpPrefix::host(*util::parse_ip(ip)); }
util::IpPrefix cidr(const char* text) { return *util::parse_cidr(text); }
PortMatch tcp(std::uint16_t first, std::uint16_t last = 0) { return {Protocol::Tcp, first, last ? last : first}; }

// The allows of a direction without their origins, for comparisons of what passes.
std::vector<std::pair<std::optional<util::IpPrefix>, std::optional<PortMatch>>> passes(const DirectionRules& d) {
  std::vector<std::pair<std::optional<util::IpPrefix>, std::optional<PortMatch>>> out;
  for (const Allow& a : d.allows) out.emplace_back(a.peer, a.port);
  return out;
}

}  // namespace

TEST_CASE("policy: an attachment no policy covers, selects or owns is not isolated", "[policy]") {
  const PeerWorld world = peer_world();
  CHECK_FALSE(evaluate(web_pod(), kBlue, {}, &world).covered());
  const auto other_network = policy_of("p", R"({"podSelector": {}})", "red");
  CHECK_FALSE(evaluate(web_pod(), kBlue, {other_network}, &world).covered());
  const auto other_pods = policy_of("p", R"({"podSelector": {"matchLabels": {"app": "db"}}})");
  CHECK_FALSE(evaluate(web_pod(), kBlue, {other_pods}, &world).covered());
  Json foreign = {
      {"metadata",
       {{"name", "p"}, {"namespace", "team-a"}, {"annotations", {{"k8s.v1.cni.cncf.io/policy-for", "default/blue"}}}}},
      {"spec", {{"podSelector", Json::object()}}}};
  CHECK_FALSE(evaluate(web_pod(), kBlue, {read_policy(foreign)}, &world).covered());  // policies select their own ns
  const auto same = policy_of("p", R"({"podSelector": {}})", "default/blue");
  CHECK(evaluate(web_pod(), kBlue, {same}, &world).covered());
}

TEST_CASE("policy: the golden example with every peer known", "[policy]") {
  const PeerWorld world = peer_world();
  const AttachmentRules r = evaluate(web_pod(), kBlue, {test::golden_policy()}, &world);
  CHECK(r.ingress.isolated);
  CHECK(r.egress.isolated);
  CHECK(r.complete());
  CHECK(r.ingress.policies == std::vector<std::string>{"default/allow-clients"});
  // client-a only: client-b has no blue attachment, client-c/d live in other namespaces.
  CHECK(passes(r.ingress) == decltype(passes(r.ingress)){{host("10.1.0.5"), tcp(8080)},
                                                         {host("10.1.0.5"), tcp(9000, 9010)},
                                                         {host("2001:db8:1::5"), tcp(8080)},
                                                         {host("2001:db8:1::5"), tcp(9000, 9010)},
                                                         {cidr("192.0.2.0/25"), std::nullopt}});
  CHECK(r.ingress.allows[0].origin == "allow-clients ingress[0]");
  CHECK(r.ingress.allows[4].origin == "allow-clients ingress[1]");
  CHECK(passes(r.egress) == decltype(passes(r.egress)){{cidr("198.51.100.0/24"), PortMatch{Protocol::Udp, 53, 53}},
                                                       {host("10.1.0.7"), tcp(8080)}});  // db's own "http"
}

TEST_CASE("policy: without peers, ADD's form keeps what is knowable and is marked incomplete", "[policy]") {
  const AttachmentRules r = evaluate(web_pod(), kBlue, {test::golden_policy()}, nullptr);
  CHECK(r.ingress.isolated);
  CHECK(r.egress.isolated);
  CHECK_FALSE(r.ingress.complete);
  CHECK_FALSE(r.egress.complete);
  CHECK(passes(r.ingress) == decltype(passes(r.ingress)){{cidr("192.0.2.0/25"), std::nullopt}});
  CHECK(passes(r.egress) == decltype(passes(r.egress)){{cidr("198.51.100.0/24"), PortMatch{Protocol::Udp, 53, 53}}});
  // A rule that needs no peer at all is complete at once.
  const auto open_port = policy_of("p", R"({"podSelector": {}, "ingress": [{"ports": [{"port": "http"}]}]})");
  const AttachmentRules knowable = evaluate(web_pod(), kBlue, {open_port}, nullptr);
  CHECK(knowable.complete());
  CHECK(passes(knowable.ingress) == decltype(passes(knowable.ingress)){{std::nullopt, tcp(8080)}});
}

TEST_CASE("policy: namespaceSelector alone, with podSelector, and empty", "[policy]") {
  const PeerWorld world = peer_world();
  auto ingress_from = [&](const std::string& peer) {
    const auto p = policy_of("p", R"({"podSelector": {}, "ingress": [{"from": [)" + peer + "]}]}");
    return passes(evaluate(web_pod(), kBlue, {p}, &world).ingress);
  };
  using List = decltype(ingress_from(""));
  CHECK(ingress_from(R"({"namespaceSelector": {"matchLabels": {"team": "a"}}})") == List{{host("10.1.0.8"), {}}});
  CHECK(ingress_from(R"({"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Exists"}]},
                         "podSelector": {"matchLabels": {"role": "client"}}})") ==
        List{{host("10.1.0.8"), {}}, {host("10.1.0.9"), {}}});
  CHECK(ingress_from(
            R"({"namespaceSelector": {"matchLabels": {"team": "a"}}, "podSelector": {"matchLabels": {"role": "db"}}})")
            .empty());
  // {} selects every namespace: every peer pod with an IP on blue.
  CHECK(ingress_from(R"({"namespaceSelector": {}})") == List{{host("10.1.0.5"), {}},
                                                             {host("2001:db8:1::5"), {}},
                                                             {host("10.1.0.7"), {}},
                                                             {host("10.1.0.8"), {}},
                                                             {host("10.1.0.9"), {}}});
  CHECK(ingress_from(R"({"podSelector": {}})") ==
        List{{host("10.1.0.5"), {}}, {host("2001:db8:1::5"), {}}, {host("10.1.0.7"), {}}});
}

TEST_CASE("policy: stacked policies add up and each allow is kept once", "[policy]") {
  const PeerWorld world = peer_world();
  const auto a = policy_of("a", R"({"podSelector": {}, "ingress": [{"ports": [{"port": 80}]}]})");
  const auto b = policy_of("b", R"({"podSelector": {"matchLabels": {"app": "web"}},
                                     "ingress": [{"ports": [{"port": 80}, {"protocol": "UDP", "port": 5353}]}]})");
  const auto deny_all = policy_of("c", R"({"podSelector": {}})");
  const AttachmentRules r = evaluate(web_pod(), kBlue, {deny_all, b, a}, &world);
  CHECK(r.ingress.policies == std::vector<std::string>{"default/a", "default/b", "default/c"});
  REQUIRE(r.ingress.allows.size() == 2);
  CHECK(r.ingress.allows[0].origin == "a ingress[0]");
  CHECK(r.ingress.allows[1].port == PortMatch{Protocol::Udp, 5353, 5353});
  CHECK_FALSE(r.egress.isolated);
}

TEST_CASE("policy: ingress-only and egress-only policies isolate one direction", "[policy]") {
  const PeerWorld world = peer_world();
  const auto in = policy_of("in", R"({"podSelector": {}, "policyTypes": ["Ingress"]})");
  const auto out = policy_of("out", R"({"podSelector": {}, "policyTypes": ["Egress"]})");
  const AttachmentRules ri = evaluate(web_pod(), kBlue, {in}, &world);
  CHECK((ri.ingress.isolated && !ri.egress.isolated));
  CHECK(ri.ingress.allows.empty());
  const AttachmentRules ro = evaluate(web_pod(), kBlue, {out}, &world);
  CHECK((!ro.ingress.isolated && ro.egress.isolated));
}

TEST_CASE("policy: named ports resolve against the pod (ingress) and each destination (egress)", "[policy]") {
  PeerWorld world = peer_world();
  const auto dns = policy_of("p", R"({"podSelector": {}, "policyTypes": ["Ingress", "Egress"],
      "ingress": [{"ports": [{"protocol": "UDP", "port": "dns"}, {"port": "dns"}, {"port": "missing"}]}],
      "egress": [{"ports": [{"port": "http"}, {"port": 443}]}]})");
  const AttachmentRules r = evaluate(web_pod(), kBlue, {dns}, &world);
  CHECK(passes(r.ingress) == decltype(passes(r.ingress)){{std::nullopt, PortMatch{Protocol::Udp, 53, 53}}});
  // Egress without peers: 443 to anywhere; http to every known pod on blue that names it.
  CHECK(passes(r.egress) == decltype(passes(r.egress)){{std::nullopt, tcp(443)},
                                                       {host("10.1.0.5"), tcp(8080)},
                                                       {host("2001:db8:1::5"), tcp(8080)},
                                                       {host("10.1.0.7"), tcp(8080)},
                                                       {host("10.1.0.8"), tcp(8080)},
                                                       {host("10.1.0.9"), tcp(8080)}});
  // A peer known by its metadata alone has no known ports: nothing opens for it.
  for (PodView& p : world.pods) {
    p.ports_known = false;
    p.ports.clear();
  }
  const AttachmentRules metadata_only = evaluate(web_pod(), kBlue, {dns}, &world);
  CHECK(passes(metadata_only.egress) == decltype(passes(r.egress)){{std::nullopt, tcp(443)}});
  CHECK(metadata_only.egress.complete);
  // Without peers at all, the named egress port waits for them.
  CHECK_FALSE(evaluate(web_pod(), kBlue, {dns}, nullptr).egress.complete);
  // An ipBlock destination has no container ports either.
  const auto block = policy_of("q", R"({"podSelector": {}, "policyTypes": ["Egress"],
      "egress": [{"to": [{"ipBlock": {"cidr": "10.1.0.0/24"}}], "ports": [{"port": "http"}]}]})");
  CHECK(evaluate(web_pod(), kBlue, {block}, &world).egress.allows.empty());
}

TEST_CASE("policy: an invalid policy isolates what it may select and allows nothing", "[policy]") {
  const PeerWorld world = peer_world();
  const auto bad = policy_of("bad", R"({"podSelector": {}, "ingress": [{"ports": [{"port": "80"}]}]})");
  const auto good = policy_of("good", R"({"podSelector": {}, "ingress": [{}]})");
  const AttachmentRules r = evaluate(web_pod(), kBlue, {bad, good}, &world);
  CHECK(r.ingress.isolated);
  CHECK(r.egress.isolated);  // the invalid policy closes egress too
  CHECK(r.egress.allows.empty());
  CHECK(r.ingress.allows.size() == 1);  // the valid policy's allow still counts
  REQUIRE(r.ingress.invalid.size() == 1);
  CHECK_THAT(r.ingress.invalid[0], Catch::StartsWith("default/bad: spec.ingress[0].ports[0].port:"));
  // An invalid policy that plainly selects other pods leaves this one alone.
  const auto elsewhere = policy_of("x", R"({"podSelector": {"matchLabels": {"app": "db"}}, "ingress": 5})");
  CHECK_FALSE(elsewhere.valid());
  CHECK_FALSE(evaluate(web_pod(), kBlue, {elsewhere}, &world).covered());
  // One whose policy-for cannot be read may cover any network.
  const auto any_network = policy_of("y", R"({"podSelector": {}})", "blue,");
  CHECK(evaluate(web_pod(), "default/green", {any_network}, &world).covered());
}

TEST_CASE("policy: the result does not depend on the order of policies or pods", "[policy]") {
  PeerWorld world = peer_world();
  std::vector<MultiNetworkPolicy> policies = {
      test::golden_policy(),
      policy_of("z", R"({"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {}}]}]})")};
  const AttachmentRules first = evaluate(web_pod(), kBlue, policies, &world);
  std::reverse(policies.begin(), policies.end());
  std::reverse(world.pods.begin(), world.pods.end());
  CHECK(evaluate(web_pod(), kBlue, policies, &world) == first);
}
