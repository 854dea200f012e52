// Verb tests of MultiNetworkPolicy enforcement over the fake world: the requests an ADD makes (none
// without the key; one LIST; the policy-for NADs the pod does not join), the rules in the pod's
// filter table before the delegate runs, the recorded state, DEL and rollback taking them away,
// CHECK against the current policies, the fail-closed handling of invalid policies with their
// Warning events, and the API failing.
#include <catch2/catch.hpp>

#include "kube_fixtures.h"

using namespace manifold;
using namespace manifold::test;
using namespace manifold::test::kube;
using firewall::Backend;
using firewall::Family;
using firewall::Table;

namespace {

const std::string kPolicies = "/apis/k8s.cni.cncf.io/v1beta1/namespaces/team-a/multi-networkpolicies";
const char* kBlue = R"({"cniVersion":"1.0.0","type":"macvlan","master":"eth1"})";

Json policy_config(const World& w, const char* key = R"({"enabled": true, "iptablesMode": "nft"})") {
  Json c = kube_config(w);
  c["multiNetworkPolicy"] = Json::parse(key);
  return c;
}

Json policy_json(const std::string& name, const std::string& spec, const std::string& policy_for = "blue") {
  return {{"apiVersion", "k8s.cni.cncf.io/v1beta1"},
          {"kind", "MultiNetworkPolicy"},
          {"metadata",
           {{"name", name}, {"namespace", "team-a"}, {"annotations", {{"k8s.v1.cni.cncf.io/policy-for", policy_for}}}}},
          {"spec", Json::parse(spec)}};
}

Json list_of(const std::vector<Json>& items) {
  return {{"apiVersion", "k8s.cni.cncf.io/v1beta1"}, {"kind", "MultiNetworkPolicyList"}, {"items", items}};
}

// The API answers of a 1-NAD ADD up to the LIST: the pod (networks "blue"), the NAD, the policies.
void script_plan(World& w, const std::vector<Json>& policies) {
  w.http.push_response(200, pod_with_networks("blue").dump());
  w.http.push_response(200, nad_json("team-a", "blue", kBlue).dump());
  w.http.push_response(200, list_of(policies).dump());
}

// The answers after the plan: the status PUT and its two AddedInterface events.
void script_status(World& w) {
  w.http.push_response(200, pod_with_networks("blue", "uid-1", "43").dump());
  script_events(w, 2);
}

std::string filter(World& w) { return w.iptables.table_text(Family::V4, Backend::Nft, Table::Filter); }

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

const char* kOnlyClients = R"({"podSelector": {}, "ingress": [{"from": [{"podSelector": {}}]},
                                 {"from": [{"ipBlock": {"cidr": "10.9.0.0/16"}}], "ports": [{"port": 443}]}]})";

}  // namespace

TEST_CASE("policy: without the key an ADD reads no policy and writes no rule", "[plugin][mnp]") {
  World w;
  setup_kube(w);
  w.http.push_response(200, pod_with_networks("blue").dump());
  w.http.push_response(200, nad_json("team-a", "blue", kBlue).dump());
  script_status(w);
  REQUIRE(w.run("ADD", kube_config(w), with_args(kPodArgs)).exit_code == 0);
  for (const std::string& line : request_lines(w)) CHECK_FALSE(has(line, "multi-networkpolicies"));
  CHECK(w.iptables.count("restore") == 0);
}

TEST_CASE("policy: ADD lists the namespace's policies once and installs the rules before the delegate runs",
          "[plugin][mnp]") {
  World w;
  setup_kube(w);
  script_plan(w, {policy_json("clients", kOnlyClients)});
  script_status(w);
  std::size_t restores_before_macvlan = 0;
  w.intercept = [&](const Call& c) -> std::optional<exec::ProcessResult> {
    if (c.type == "macvlan" && c.command == "ADD") restores_before_macvlan = w.iptables.count("restore");
    return std::nullopt;
  };
  const auto out = w.run("ADD", policy_config(w), with_args(kPodArgs));
  INFO(out.stdout_text);
  REQUIRE(out.exit_code == 0);
  CHECK(request_lines(w) == Strings{"GET " + kPodPath,
                                    "GET /apis/k8s.cni.cncf.io/v1/namespaces/team-a/"
                                    "network-attachment-definitions/blue",
                                    "GET " + kPolicies, "PUT " + kPodPath + "/status", "POST " + kEventsPath,
                                    "POST " + kEventsPath});
  CHECK(restores_before_macvlan == 1);
  CHECK(w.iptables.count("detect") == 0);  // iptablesMode nft
  const std::string table = filter(w);
  CHECK(has(table, "-A INPUT -i net1 -m comment --comment \"mnp/net1/ingress\" -j MNP-IN-net1"));
  // The podSelector peer is not known at ADD: only the ipBlock allow is there, then the deny.
  CHECK(has(table,
            "-A MNP-IN-net1 -s 10.9.0.0/16 -p tcp -m conntrack --ctorigdstport 443 -m comment --comment "
            "\"mnp/net1/clients ingress[1]\" -j ACCEPT\n-A MNP-IN-net1 -m comment --comment \"mnp/net1/deny\" "
            "-j DROP"));
  CHECK_FALSE(has(table, "MNP-OUT-net1"));
  CHECK_FALSE(has(table, "eth0"));
  const auto record = w.cache.load(World::key("ctr1"));
  REQUIRE(record);
  CHECK(record->attachments.at(0).policy.is_null());
  CHECK(record->attachments.at(1).policy.dump() ==
        R"({"ifname":"net1","network":"team-a/blue","backend":"nft","families":[4],"lockWaitSeconds":30,)"
        R"("applied":true,"complete":false})");

  // CHECK: the rules are what the policies generate; then a rule goes missing; then a policy changes.
  w.http.push_response(200, pod_with_networks("blue").dump());
  w.http.push_response(200, list_of({policy_json("clients", kOnlyClients)}).dump());
  CHECK(w.run("CHECK", policy_config(w), with_args(kPodArgs)).exit_code == 0);
  w.iptables.load(Family::V4, Backend::Nft,
                  "*filter\n-D MNP-IN-net1 -m comment --comment \"mnp/net1/deny\" -j DROP\nCOMMIT\n");
  w.http.push_response(200, pod_with_networks("blue").dump());
  w.http.push_response(200, list_of({policy_json("clients", kOnlyClients)}).dump());
  Json e = error_of(w.run("CHECK", policy_config(w), with_args(kPodArgs)));
  CHECK(e["code"] == 107);
  CHECK_THAT(e["msg"].get<std::string>(), Catch::Contains("net1: IPv4: MNP-IN-net1 is missing the rule: -A MNP-IN-net1 "
                                                          "-m comment --comment \"mnp/net1/deny\" -j DROP"));
  w.iptables.load(Family::V4, Backend::Nft,
                  "*filter\n-A MNP-IN-net1 -m comment --comment \"mnp/net1/deny\" -j DROP\nCOMMIT\n");
  w.http.push_response(200, pod_with_networks("blue").dump());
  w.http.push_response(200,
                       list_of({policy_json("clients", R"({"podSelector": {}, "policyTypes": ["Egress"]})")}).dump());
  e = error_of(w.run("CHECK", policy_config(w), with_args(kPodArgs)));
  CHECK_THAT(e["msg"].get<std::string>(), Catch::Contains("unexpected chain MNP-IN-net1"));
  CHECK_THAT(e["msg"].get<std::string>(), Catch::Contains("chain MNP-OUT-net1 is missing"));

  // DEL takes the rules away (no API request) and forgets the entry.
  const std::size_t requests = w.http.requests().size();
  REQUIRE(w.run("DEL", policy_config(w), with_args(kPodArgs)).exit_code == 0);
  CHECK(w.http.requests().size() == requests);
  CHECK_FALSE(has(filter(w), "MNP-"));
  CHECK(w.ids().empty());
}

TEST_CASE("policy: an attachment no policy covers gets no rule; a missing CRD means no policy", "[plugin][mnp]") {
  World w;
  setup_kube(w);
  SECTION("policies for other networks and pods") {
    script_plan(w, {policy_json("elsewhere", R"({"podSelector": {}})", "red"),
                    policy_json("others", R"({"podSelector": {"matchLabels": {"app": "db"}}})")});
    w.http.push_response(200, nad_json("team-a", "red", kBlue).dump());  // red exists
  }
  SECTION("the API does not serve MultiNetworkPolicy") {
    w.http.push_response(200, pod_with_networks("blue").dump());
    w.http.push_response(200, nad_json("team-a", "blue", kBlue).dump());
    w.http.push_response(404, status_json(404, "NotFound").dump());
  }
  script_status(w);
  const auto out = w.run("ADD", policy_config(w), with_args(kPodArgs));
  INFO(out.stdout_text);
  REQUIRE(out.exit_code == 0);
  CHECK(w.iptables.count("restore") == 0);
  CHECK(w.cache.load(World::key("ctr1"))->attachments.at(1).policy.is_null());
}

TEST_CASE("policy: an invalid policy closes its pods' networks and says so in a Warning event", "[plugin][mnp]") {
  World w;
  setup_kube(w);
  std::string error;
  SECTION("a selector that does not validate") {
    script_plan(w, {policy_json("bad", R"({"podSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}})")});
    error = "team-a/bad: spec.podSelector.matchExpressions[0].values: must list at least one value";
  }
  SECTION("policy-for naming a network that does not exist") {
    script_plan(w, {policy_json("typo", R"({"podSelector": {}, "ingress": [{}]})", "blue,gren")});
    w.http.push_response(404, status_json(404, "NotFound").dump());  // GET NAD gren
    error =
        "team-a/typo: metadata.annotations[\"k8s.v1.cni.cncf.io/policy-for\"]: names network team-a/gren, which "
        "does not exist";
  }
  script_events(w, 1);  // the warning
  script_status(w);
  const auto out = w.run("ADD", policy_config(w), with_args(kPodArgs));
  INFO(out.stdout_text);
  REQUIRE(out.exit_code == 0);
  const std::string table = filter(w);
  CHECK(has(table,
            "-A MNP-IN-net1 -m conntrack --ctstate RELATED,ESTABLISHED -m comment --comment \"mnp/net1/replies\" "
            "-j ACCEPT\n-A MNP-IN-net1 -p udp -m udp --sport 67 --dport 68 -m comment --comment "
            "\"mnp/net1/dhcp\" -j ACCEPT\n-A MNP-IN-net1 -m comment --comment \"mnp/net1/deny\" -j DROP\n"));
  CHECK(has(table,
            "-A MNP-OUT-net1 -p udp -m udp --sport 68 --dport 67 -m comment --comment \"mnp/net1/dhcp\" -j "
            "ACCEPT\n-A MNP-OUT-net1 -m comment --comment \"mnp/net1/deny\" -j DROP\n"));
  const auto& reqs = w.http.requests();
  const auto warning = std::find_if(reqs.begin(), reqs.end(), [](const http::HttpRequest& r) {
    return r.method == "POST" && has(r.body, "InvalidMultiNetworkPolicy");
  });
  REQUIRE(warning != reqs.end());
  const Json event = Json::parse(warning->body);
  CHECK(event["type"] == "Warning");
  CHECK_THAT(event["message"].get<std::string>(), Catch::StartsWith("MultiNetworkPolicy " + error));
  CHECK_THAT(event["message"].get<std::string>(),
             Catch::EndsWith("until it is fixed it isolates net1 (team-a/blue) in both directions and allows nothing "
                             "there"));
}

TEST_CASE("policy: a LIST that fails fails the ADD before anything is attached", "[plugin][mnp]") {
  World w;
  setup_kube(w);
  w.http.push_response(200, pod_with_networks("blue").dump());
  w.http.push_response(200, nad_json("team-a", "blue", kBlue).dump());
  w.http.push_response(403, status_json(403, "Forbidden").dump());
  Json e = error_of(w.run("ADD", policy_config(w), with_args(kPodArgs)));
  CHECK(e["code"] == 103);
  CHECK_THAT(e["msg"].get<std::string>(), Catch::Contains("multi-networkpolicies"));
  CHECK(w.call_count() == 0);
  CHECK(w.ids().empty());
}

TEST_CASE("policy: a failing later delegate rolls the rules back", "[plugin][mnp]") {
  World w;
  setup_kube(w);
  w.http.push_response(200, pod_with_networks("blue,red").dump());
  w.http.push_response(200, nad_json("team-a", "blue", kBlue).dump());
  w.http.push_response(200, nad_json("team-a", "red", R"({"cniVersion":"1.0.0","type":"ptp"})").dump());
  w.http.push_response(200, list_of({policy_json("clients", kOnlyClients)}).dump());
  w.intercept = [&](const Call& c) -> std::optional<exec::ProcessResult> {
    if (c.type == "ptp" && c.command == "ADD") return cni_error_answer(11, "ptp refused");
    return std::nullopt;
  };
  Json e = error_of(w.run("ADD", policy_config(w), with_args(kPodArgs)));
  CHECK(e["code"] == 11);
  CHECK(w.iptables.count("restore") == 2);  // installed, then removed
  CHECK_FALSE(has(filter(w), "MNP-"));
  CHECK(w.ids().empty());
}

TEST_CASE("policy: a bad multiNetworkPolicy key is error 7 before anything runs", "[plugin][mnp]") {
  World w;
  Json e = error_of(w.run("ADD", policy_config(w, R"({"enabled": true, "denyAction": "ignore"})")));
  CHECK(e["code"] == 7);
  CHECK_THAT(e["msg"].get<std::string>(), Catch::StartsWith("invalid multiNetworkPolicy.denyAction"));
  CHECK(w.call_count() == 0);
}

TEST_CASE("policy: a DEL that cannot remove the rules keeps the entry, the next DEL removes them", "[plugin][mnp]") {
  World w;
  setup_kube(w);
  script_plan(w, {policy_json("clients", kOnlyClients)});
  script_status(w);
  REQUIRE(w.run("ADD", policy_config(w), with_args(kPodArgs)).exit_code == 0);
  w.iptables.fail_restores(Family::V4, 2);  // the removal and its one retry
  Json e = error_of(w.run("DEL", policy_config(w), with_args(kPodArgs)));
  CHECK(e["code"] == 106);
  CHECK_THAT(e["msg"].get<std::string>(), Catch::Contains("removing the MultiNetworkPolicy rules of"));
  CHECK(has(filter(w), "MNP-IN-net1"));
  REQUIRE(w.cache.load(World::key("ctr1")));  // kept, with the attachment
  REQUIRE(w.run("DEL", policy_config(w), with_args(kPodArgs)).exit_code == 0);
  CHECK_FALSE(has(filter(w), "MNP-"));
  CHECK(w.ids().empty());
}
