#!/usr/bin/env python3
"""The node agent fills in the MultiNetworkPolicy peers ADD could not know, and keeps them current,
proven by real traffic between pods attached by manifold (net1 from Debian's bridge plugin), with
the pods, namespaces and policies in the API server double and `manifold agent` watching them:

- podSelector: before the agent runs, web's net1 refuses the role=client pod (ADD closes what
  needs peers); once the agent has filled the peers in, the client gets through and another pod
  does not; relabelled, the client is refused again and the newly labelled pod gets through;
- namespaceSelector: a pod of a namespace labelled team=a gets through, and is refused once the
  namespace's labels change;
- the agent reads pods metadata only (PartialObjectMetadata) for the peers, and watches every pod
  only while a policy of a namespace with a covered pod here has a selector peer, the namespaces
  only while one has a namespaceSelector;
- CHECK: right after ADD it expects ADD's closed rules; once the agent has filled the peers in, the
  rules the current policies generate with the current peers (which CHECK lists itself): a peer
  relabelled while the agent is stopped makes CHECK fail (107) on its stale allow, and passes again
  once the agent, restarted, has caught up;
- fail closed: a policy that becomes invalid while the agent runs (policy-for naming a NAD that
  does not exist) closes web's network both ways with one Warning event, as at ADD; once the NAD is
  created (the agent watches NADs) it opens, once deleted it closes again; fixed, it opens;
- hot-plug: a network the agent attaches to a running pod (a `kubectl annotate`) gets the same rules
  as ADD gives, closed from the start, and then its peers: a client hot-plugged onto the same
  network gets through to it, another pod does not;
- both backends: iptablesMode nft and legacy (the agent uses the backend ADD recorded).
Every wait is on observable state (the rules in web's namespace), with a hang guard.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from agent_case import NODE, AgentTestCase  # noqa: E402
from harness import main  # noqa: E402
from harness.netns import run  # noqa: E402
from policy_k8s import ENFORCE, PolicyK8sTestCase  # noqa: E402
from policy_world import PROBE, REFUSED  # noqa: E402

WEB = {"matchLabels": {"app": "web"}}
PORTS = [{"protocol": "TCP", "port": 8080}]
GREEN = ("10.79.0.0/24", "2001:db8:79::/64")
BLUE_AND_GREEN = json.dumps([{"name": "blue", "namespace": "default"}, {"name": "green", "namespace": "default"}])


class PolicyAgent(PolicyK8sTestCase, AgentTestCase):
    node_name = NODE
    mode = "nft"

    def setUp(self):
        super().setUp()
        self.write_world()

    def peers_in_force(self, web, *pods):
        """The peer addresses web's MNP-IN-net1 allows (every family; host prefixes, not ipBlocks)
        are exactly `pods`'."""
        want = {"-s %s/%d" % (p.ips[f], 32 if f == 4 else 128) for p in pods for f in self.families}
        have = set()
        for family in self.families:
            for line in self.filter_save(web, self.mode, family).splitlines():
                if line.startswith("-A MNP-IN-net1 -s ") and line.split()[3].endswith(("/32", "/128")):
                    have.add(" ".join(line.split()[2:4]))
        return have == want

    def wait_peers(self, web, *pods):
        self.wait_for(lambda: self.peers_in_force(web, *pods),
                      "web's allows for %s" % [p.name for p in pods])

    def add_pod(self, name, labels=None, ns="default", **kw):
        """PolicyK8sTestCase's pod, also removed from the double when the test ends: the double
        outlives the test, and a pod left there would be a peer of the next test's policies."""
        pod = super().add_pod(name, labels, ns=ns, **kw)
        self.addCleanup(self.api.delete_pod, ns, getattr(pod, "k8s_name", None) or self.k8s_name(name))
        return pod

    def test_pod_selector_peers(self):
        a = self.add_pod("client-a", {"role": "client"})
        b = self.add_pod("client-b", {"role": "other"})
        self.add_policy("web", {"podSelector": WEB, "ingress": [
            {"from": [{"podSelector": {"matchLabels": {"role": "client"}}}], "ports": PORTS}]})
        web = self.add_pod("web", {"app": "web"}, prepare=lambda pod: self.serve(pod, "tcp:8080"))
        with self.subTest("closed until the agent knows the peers"):
            self.assertTraffic([(a, web, "tcp", 8080, False), (b, web, "tcp", 8080, False)])
        self.start_agent()
        with self.subTest("filled in"):
            self.wait_peers(web, a)
            self.assertTraffic([(a, web, "tcp", 8080, True), (b, web, "tcp", 8080, False)])
        with self.subTest("relabelled"):
            self.api.modify_pod("default", a.k8s_name, labels={"role": "other"})
            self.api.modify_pod("default", b.k8s_name, labels={"role": "client"})
            self.wait_peers(web, b)
            self.assertTraffic([(a, web, "tcp", 8080, False), (b, web, "tcp", 8080, True)])
        with self.subTest("metadata only"):
            watches = [w for w in self.api.requests(path=r"^/api/v1/pods$") if w["verb"] in ("list", "watch")
                       and "spec.nodeName" not in w["query"]]
            self.assertTrue(watches)
            for request in watches:
                self.assertIn("as=PartialObjectMetadata", request["headers"].get("accept", ""), request)

    def check(self, pod):
        return self.driver("check", pod.netns.path, container_id=pod.container_id, cni_args=pod.cni_args)

    def test_check_follows_the_agent(self):
        a = self.add_pod("client-a", {"role": "client"})
        self.add_policy("web", {"podSelector": WEB, "ingress": [
            {"from": [{"podSelector": {"matchLabels": {"role": "client"}}}], "ports": PORTS}]})
        web = self.add_pod("web", {"app": "web"})
        self.assertOk(self.check(web))
        agent = self.start_agent()
        self.wait_peers(web, a)
        self.wait_for(lambda: self.cached_policy_state(web)["complete"], "the entry records the peers filled in")
        self.assertOk(self.check(web))
        self.assertEqual(self.stop_agent(agent), 0)
        self.api.modify_pod("default", a.k8s_name, labels={"role": "gone"})
        run = self.check(web)
        self.assertCniError(run, 107)
        self.assertErrorMentions(run, "MNP-IN-net1 has an unexpected rule", "-s %s/32" % a.ips[4])
        self.start_agent()
        self.wait_peers(web)
        self.assertOk(self.check(web))

    def green_nad(self):
        ranges = [[{"subnet": GREEN[0]}]] + ([[{"subnet": GREEN[1]}]] if self.v6 else [])
        return {"cniVersion": "1.0.0", "name": "green", "plugins": [
            {"type": "bridge", "bridge": "mfpol1", "isGateway": False, "ipMasq": False,
             "ipam": {"type": "host-local", "dataDir": self.tree.ipam_dir, "ranges": ranges}}]}

    def green_probe(self, src, dst, family):
        """From src's net2 address to dst's (network green): the listener's answer or the refusal."""
        src_ip, dst_ip = (p.netns.addresses("net2", family)[0].split("/")[0] for p in (src, dst))
        argv = ["ip", "netns", "exec", src.netns.name, sys.executable, "-B", PROBE, "connect", "tcp", dst_ip,
                "8080", "--bind", src_ip, "--timeout", "20"]
        return run(argv, timeout=80).stdout.strip().split(" peer=")[0]

    def test_hot_plugged_networks_get_the_rules(self):
        self.api.add_nad("default", "green", self.green_nad())
        a = self.add_pod("client-a", {"role": "client"})
        b = self.add_pod("client-b", {"role": "other"})
        self.add_policy("web", {"podSelector": WEB, "ingress": [
            {"from": [{"podSelector": {"matchLabels": {"role": "client"}}}], "ports": PORTS}]},
            policy_for="blue,green")
        web = self.add_pod("web", {"app": "web"}, prepare=lambda pod: self.serve(pod, "tcp:8080"))
        self.start_agent()
        self.wait_peers(web, a)
        for pod in (a, b, web):
            self.annotate(BLUE_AND_GREEN, name=pod.k8s_name)
        for pod in (a, b, web):
            self.wait_for(lambda p=pod: "net2" in p.netns.link_names(), "net2 in %s" % pod.name)
        with self.subTest("the hot-plug's rules, then the peers"):
            self.wait_for(lambda: all(
                "-A MNP-IN-net2 -s %s/" % a.netns.addresses("net2", f)[0].split("/")[0]
                in self.filter_save(web, self.mode, f) for f in self.families), "client-a's allow on web's net2")
            for family in self.families:
                self.assertEqual(self.green_probe(a, web, family), "web tcp:8080")
                self.assertEqual(self.green_probe(b, web, family), REFUSED[family])
        entry = self.tree.cache_entry_path(web.container_id)
        with open(entry, encoding="utf-8") as f:
            states = {a["ifname"]: a["extra"].get("policy") for a in json.load(f)["attachments"]}
        self.assertEqual((states["net2"]["network"], states["net2"]["applied"]), ("default/green", True))

    def test_an_invalid_policy_closes_with_a_warning(self):
        a = self.add_pod("client-a", {"role": "client"})
        spec = {"podSelector": WEB, "ingress": [
            {"from": [{"podSelector": {"matchLabels": {"role": "client"}}}], "ports": PORTS}]}
        self.add_policy("web", spec)
        web = self.add_pod("web", {"app": "web"}, prepare=lambda pod: self.serve(pod, "tcp:8080"))
        self.start_agent()
        self.wait_peers(web, a)
        self.assertTraffic([(a, web, "tcp", 8080, True)])
        self.api.clear_events()
        self.add_policy("web", spec, policy_for="blue,gren")

        def warnings():
            return [e for e in self.api.events() if e.get("reason") == "InvalidMultiNetworkPolicy"
                    and e["involvedObject"]["name"] == web.k8s_name]
        self.wait_for(lambda: warnings() and self.peers_in_force(web), "the invalid policy closing web")
        self.assertIn("MultiNetworkPolicy default/web: ", warnings()[0]["message"])
        self.assertIn("names network default/gren, which does not exist", warnings()[0]["message"])
        self.assertIn("net1 (default/blue) in both directions", warnings()[0]["message"])
        self.assertIn("MNP-OUT-net1", self.filter_save(web, self.mode, 4))
        self.assertTraffic([(a, web, "tcp", 8080, False), (web, a, "tcp", 8080, False, True)])
        with self.subTest("the NAD it names is created: valid, open again"):
            self.api.add_nad("default", "gren", self.blue_nad())
            self.addCleanup(self.api.delete_nad, "default", "gren")
            self.wait_peers(web, a)
            self.assertTraffic([(a, web, "tcp", 8080, True)])
            self.assertNotIn("MNP-OUT-net1", self.filter_save(web, self.mode, 4))
        with self.subTest("the NAD is deleted: closed again, told again"):
            self.api.delete_nad("default", "gren")
            self.wait_for(lambda: len(warnings()) == 2 and self.peers_in_force(web), "the policy closing again")
            self.assertTraffic([(a, web, "tcp", 8080, False)])
        self.add_policy("web", spec)
        self.wait_peers(web, a)
        self.assertTraffic([(a, web, "tcp", 8080, True)])

    def peer_watches(self):
        """The agent's open watches of every pod (metadata) and of the namespaces."""
        return sorted(w["path"] for w in self.api.watches()
                      if w["path"] == "/api/v1/namespaces" or
                      (w["path"] == "/api/v1/pods" and "spec.nodeName" not in w["query"]))

    def test_only_what_the_policies_can_select_is_watched(self):
        a = self.add_pod("client-a", {"role": "client"})
        self.add_policy("web", {"podSelector": WEB, "ingress": [
            {"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": PORTS}]})
        web = self.add_pod("web", {"app": "web"})
        self.start_agent()
        self.wait_for(lambda: "policy sync: 1 attachment(s) evaluated" in self.agent_output(), "the first pass")
        self.assertEqual(self.peer_watches(), [])
        self.add_policy("clients", {"podSelector": WEB, "ingress": [
            {"from": [{"podSelector": {"matchLabels": {"role": "client"}}}], "ports": PORTS}]})
        self.wait_peers(web, a)
        self.assertEqual(self.peer_watches(), ["/api/v1/pods"])
        self.add_policy("teams", {"podSelector": WEB, "ingress": [
            {"from": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}], "ports": PORTS}]})
        self.wait_for(lambda: self.peer_watches() == ["/api/v1/namespaces", "/api/v1/pods"], "the namespace watch")
        self.api.delete_object("multi-networkpolicies", "teams", namespace="default")
        self.api.delete_object("multi-networkpolicies", "clients", namespace="default")
        self.wait_for(lambda: self.peer_watches() == [], "the peer watches to end")
        self.wait_peers(web)

    def test_namespace_selector_peers(self):
        self.api.add_namespace("default")
        self.api.add_namespace("team-a", labels={"team": "a"})
        c = self.add_pod("client-c", {}, ns="team-a")
        d = self.add_pod("client-d", {})
        self.add_policy("web", {"podSelector": WEB, "ingress": [
            {"from": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}], "ports": PORTS}]})
        web = self.add_pod("web", {"app": "web"}, prepare=lambda pod: self.serve(pod, "tcp:8080"))
        self.assertTraffic([(c, web, "tcp", 8080, False)])
        self.start_agent()
        self.wait_peers(web, c)
        self.assertTraffic([(c, web, "tcp", 8080, True), (d, web, "tcp", 8080, False)])
        self.api.add_namespace("team-a", labels={"team": "b"})
        self.wait_peers(web)
        self.assertTraffic([(c, web, "tcp", 8080, False)])


class PolicyAgentLegacy(PolicyAgent):
    policy_key = dict(ENFORCE, iptablesMode="legacy")
    mode = "legacy"


if __name__ == "__main__":
    main()
