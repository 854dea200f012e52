// Unit tests for the agent's MultiNetworkPolicy sync with a fake iptables: ADD's closed rules are
// filled in with the peers, a policy or peer change rewrites exactly the rule text it must, a
// change that changes nothing restores nothing, a network whose NAD is not known to exist closes,
// and the compact peer store keeps only what can be a peer.
#include <catch2/catch.hpp>

#include "firewall/fake_runner.h"
#include "policy/enforce.h"
#include "policysync/peer_index.h"
#include "policysync/policy_sync.h"
#include "policysync/policy_warnings.h"
#include "policy/policy_world.h"

using namespace manifold;
using namespace manifold::policysync;
using firewall::Backend;
using firewall::FakeIptablesRunner;
using firewall::Family;
using firewall::Table;

namespace {

const char* kFromClients = R"({"podSelector": {"matchLabels": {"app": "web"}},
  "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "client"}}}], "ports": [{"port": 8080}]}]})";

policy::PolicyConfig enabled() { return policy::read_policy_config(Json{{"enabled", true}}); }

IpsByNetwork blue(const std::string& ip) { return {{"default/blue", {util::parse_ip_or_cidr(ip).value().address}}}; }

// One node: web's net1 with ADD's rules (no peers) in a fake pod namespace, and the sync over it.
struct Node {
  FakeIptablesRunner runner;
  std::vector<LocalAttachment> attachments;
  PolicySync sync{[this](const LocalAttachment& a, const policy::AttachmentRules& rules) {
    policy::PolicyState state = a.state;
    return policy::apply_policy_if_changed(runner, state, rules, a.config);
  }};

  explicit Node(const std::vector<policy::MultiNetworkPolicy>& policies) {
    const policy::AttachmentRules closed = policy::evaluate(test::web_pod(), "default/blue", policies, nullptr);
    policy::PolicyState state = policy::apply_policy(
        runner, policy::PolicyState::planned("net1", "default/blue", {Family::V4}, 30), closed, enabled());
    attachments.push_back({{"ctr1", "mf", "eth0"}, "default", "web", "/run/netns/web", state, enabled(), {}});
    for (const auto& p : policies) sync.put_policy(p);
    sync.put_local_pod(test::web_pod());
  }
  std::string filter() const { return runner.table_text(Family::V4, Backend::Nft, Table::Filter); }
  int restores() const { return static_cast<int>(runner.count("restore")); }
};

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

const std::string kClientA = "-A MNP-IN-net1 -s 10.1.0.5/32 -p tcp -m conntrack --ctorigdstport 8080";
const std::string kClientB = "-A MNP-IN-net1 -s 10.1.0.6/32 -p tcp -m conntrack --ctorigdstport 8080";

}  // namespace

TEST_CASE("policysync: the peers ADD could not know are filled in, once", "[policysync]") {
  Node node({test::policy_of("clients", kFromClients)});
  CHECK_FALSE(has(node.filter(), kClientA));
  node.sync.peers().put_pod("default", "client-a", {{"role", "client"}}, blue("10.1.0.5"));
  node.sync.peers().put_pod("default", "db", {{"role", "db"}}, blue("10.1.0.7"));
  const int before = node.restores();
  const SyncResult first = node.sync.sync(node.attachments, false);
  CHECK(first.evaluated == 1);
  CHECK(first.changed == 1);
  CHECK(first.restored == 1);
  CHECK(has(node.filter(), kClientA));
  CHECK_FALSE(has(node.filter(), "10.1.0.7"));
  CHECK(node.restores() == before + 1);

  SECTION("nothing changed: no restore, not even a save") {
    const int calls = static_cast<int>(node.runner.calls().size());
    const SyncResult again = node.sync.sync(node.attachments, false);
    CHECK(again.changed == 0);
    CHECK(static_cast<int>(node.runner.calls().size()) == calls);
    node.sync.peers().put_pod("default", "db", {{"role", "db"}, {"tier", "x"}}, blue("10.1.0.7"));  // no peer
    CHECK(node.sync.sync(node.attachments, false).changed == 0);
  }
  SECTION("the forced pass compares the tables and restores nothing when they match") {
    const SyncResult forced = node.sync.sync(node.attachments, true);
    CHECK(forced.changed == 1);
    CHECK(forced.restored == 0);
    CHECK(node.restores() == before + 1);
  }
  SECTION("a peer added, relabelled, removed") {
    node.sync.peers().put_pod("default", "client-b", {{"role", "client"}}, blue("10.1.0.6"));
    CHECK(node.sync.sync(node.attachments, false).restored == 1);
    CHECK(has(node.filter(), kClientB));
    node.sync.peers().put_pod("default", "client-b", {{"role", "other"}}, blue("10.1.0.6"));
    CHECK(node.sync.sync(node.attachments, false).restored == 1);
    CHECK_FALSE(has(node.filter(), kClientB));
    CHECK(has(node.filter(), kClientA));
    CHECK(node.sync.peers().remove_pod("default", "client-a"));
    CHECK(node.sync.sync(node.attachments, false).restored == 1);
    CHECK_FALSE(has(node.filter(), "-s 10.1.0.5/32"));
    CHECK(has(node.filter(), "-A MNP-IN-net1 -m comment --comment \"mnp/net1/deny\" -j DROP"));
  }
  SECTION("a policy change rewrites the rule") {
    node.sync.put_policy(test::policy_of("clients", R"({"podSelector": {"matchLabels": {"app": "web"}},
      "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "client"}}}], "ports": [{"port": 9090}]}]})"));
    CHECK(node.sync.sync(node.attachments, false).restored == 1);
    CHECK(has(node.filter(), "-A MNP-IN-net1 -s 10.1.0.5/32 -p tcp -m conntrack --ctorigdstport 9090"));
    CHECK_FALSE(has(node.filter(), kClientA));
    node.sync.remove_policy("default", "clients");
    CHECK(node.sync.sync(node.attachments, false).restored == 1);
    CHECK_FALSE(has(node.filter(), "MNP-IN-net1"));
  }
}

TEST_CASE("policysync: namespaceSelector peers follow the namespaces' labels", "[policysync]") {
  Node node({test::policy_of("team-a", R"({"podSelector": {},
    "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}]}]})")});
  node.sync.peers().put_namespace("team-a", {{"team", "a"}});
  node.sync.peers().put_namespace("team-b", {{"team", "b"}});
  node.sync.peers().put_pod("team-a", "c", {}, blue("10.1.0.8"));
  node.sync.peers().put_pod("team-b", "d", {}, blue("10.1.0.9"));
  node.sync.sync(node.attachments, false);
  CHECK(has(node.filter(), "-A MNP-IN-net1 -s 10.1.0.8/32 -m comment"));
  CHECK_FALSE(has(node.filter(), "10.1.0.9"));
  node.sync.peers().put_namespace("team-b", {{"team", "a"}});
  CHECK(node.sync.sync(node.attachments, false).restored == 1);
  CHECK(has(node.filter(), "-A MNP-IN-net1 -s 10.1.0.9/32 -m comment"));
}

TEST_CASE("policysync: a policy-for network the NAD view does not hold closes until it does", "[policysync]") {
  Node node({test::policy_of("clients", kFromClients, "blue, default/missing")});
  node.sync.peers().put_pod("default", "client-a", {{"role", "client"}}, blue("10.1.0.5"));
  const SyncResult closed = node.sync.sync(node.attachments, false);
  REQUIRE(closed.invalid.size() == 2);  // both directions
  CHECK(has(closed.invalid[0].error, "names network default/missing, which does not exist"));
  CHECK(closed.invalid[0].where == "net1 (default/blue)");
  CHECK(closed.invalid[0].pod_ns + "/" + closed.invalid[0].pod_name == "default/web");
  CHECK_FALSE(has(node.filter(), "10.1.0.5"));
  CHECK(has(node.filter(), "MNP-OUT-net1"));  // invalid: both directions closed
  node.sync.put_network("default/missing");
  CHECK(node.sync.sync(node.attachments, false).invalid.empty());
  CHECK(has(node.filter(), kClientA));
  CHECK_FALSE(has(node.filter(), "MNP-OUT-net1"));
  node.sync.remove_network("default/missing");
  CHECK(node.sync.sync(node.attachments, false).invalid.size() == 2);
  CHECK(has(node.filter(), "MNP-OUT-net1"));

  SECTION("a network the pod may never join is not asked about, as at ADD") {
    node.sync.put_policy(test::policy_of("clients", kFromClients, "blue, elsewhere/missing"));
    CHECK(node.sync.sync(node.attachments, false).invalid.size() == 2);
    node.attachments[0].isolation.isolation = true;  // "elsewhere" is not a global namespace
    CHECK(node.sync.sync(node.attachments, false).invalid.empty());
    CHECK(has(node.filter(), kClientA));
  }
}

TEST_CASE("policysync: a pod the watch has not delivered keeps ADD's rules", "[policysync]") {
  Node node({test::policy_of("clients", kFromClients)});
  node.sync.remove_local_pod("default", "web");
  const int before = node.restores();
  CHECK(node.sync.sync(node.attachments, false).evaluated == 0);
  CHECK(node.restores() == before);
}

TEST_CASE("policysync: the peer store keeps pods with a NAD network only, and relists", "[policysync]") {
  PeerIndex index;
  CHECK_FALSE(index.put_pod("default", "plain", {{"a", "b"}}, {{"cluster", {}}}));
  CHECK(index.pods() == 0);
  CHECK(index.put_pod("default", "p", {{"a", "b"}, {"c", ""}}, blue("10.1.0.5")));
  CHECK_FALSE(index.put_pod("default", "p", {{"a", "b"}, {"c", ""}}, blue("10.1.0.5")));
  CHECK(index.put_pod("default", "q", {}, blue("10.1.0.6")));
  const policy::PeerWorld w = index.world("default/blue", nullptr);
  REQUIRE(w.pods.size() == 2);
  CHECK(index.world("default/blue", [](std::string_view, std::string_view packed) { return packed.starts_with("a="); })
            .pods.size() == 1);
  CHECK(index.world("default/red", nullptr).pods.empty());
  index.begin_pods_relist();
  index.put_pod("default", "q", {}, blue("10.1.0.6"));
  CHECK(index.end_pods_relist());
  CHECK(index.pods() == 1);
  CHECK(unpack_labels(pack_labels({{"a", "b"}, {"k8s.io/x", ""}})) == policy::Labels{{"a", "b"}, {"k8s.io/x", ""}});
}

TEST_CASE("policysync: an invalid policy is told once per pod while it lasts", "[policysync]") {
  PolicyWarnings warnings;
  const std::vector<InvalidPolicy> invalid{{"default/p: spec: bad", "net1 (default/blue)", "default", "web"},
                                           {"default/p: spec: bad", "net2 (default/red)", "default", "web"},
                                           {"default/p: spec: bad", "net1 (default/blue)", "default", "other"}};
  warnings.set_pod("default", "web", "uid-web", "7");
  std::vector<Json> events = warnings.take(invalid);
  REQUIRE(events.size() == 1);  // "other" waits for its identity
  CHECK(events[0]["reason"] == "InvalidMultiNetworkPolicy");
  CHECK(events[0]["type"] == "Warning");
  CHECK(events[0]["involvedObject"]["uid"] == "uid-web");
  CHECK(events[0]["message"] ==
        "MultiNetworkPolicy default/p: spec: bad; until it is fixed it isolates net1 (default/blue), net2 "
        "(default/red) in both directions and allows nothing there");
  CHECK(warnings.take(invalid).empty());
  warnings.set_pod("default", "other", "uid-other", "8");
  CHECK(warnings.take(invalid).size() == 1);
  CHECK(warnings.take({}).empty());
  CHECK(warnings.take(invalid).size() == 2);  // fixed, then broken again: told again
}

TEST_CASE("policysync: the peer views run only while a policy of a covered pod's namespace needs them",
          "[policysync]") {
  Node node({test::policy_of("blocks",
                             R"({"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]})")});
  CHECK_FALSE(node.sync.needs(node.attachments).pods);
  CHECK(node.sync.needs(node.attachments).nads);
  node.sync.put_policy(policy::read_policy(Json::parse(R"({"metadata": {"name": "elsewhere", "namespace": "other"},
      "spec": {"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {}}]}]}})")));
  CHECK_FALSE(node.sync.needs(node.attachments).pods);  // no covered pod in "other"
  node.sync.put_policy(test::policy_of("clients", kFromClients));
  CHECK(node.sync.needs(node.attachments).pods);
  CHECK_FALSE(node.sync.needs(node.attachments).namespaces);
  node.sync.put_policy(test::policy_of("teams", R"({"podSelector": {},
    "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}]}]})"));
  CHECK(node.sync.needs(node.attachments).namespaces);
  CHECK_FALSE(node.sync.needs({}).pods);
  CHECK_FALSE(node.sync.needs({}).nads);
}
