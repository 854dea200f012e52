#!/usr/bin/env python3
"""The node agent fills in the MultiNetworkPolicy peers ADD could not know, and keeps them current,
proven by real traffic between pods attached by manifold (net1 from Debian's bridge plugin), with
the pods, namespaces and policies in the API server double and `manifold agent` watching them:

- podSelector: before the agent runs, web's net1 refuses the role=client pod (ADD closes what
  needs peers); once the agent has filled the peers in, the client gets through and another pod
  does not; relabelled, the client is refused again and the newly labelled pod gets through;
- namespaceSelector: a pod of a namespace labelled team=a gets through, and is refused once the
  namespace's labels change;
- the agent reads pods metadata only (PartialObjectMetadata) for the peers;
- CHECK: right after ADD it expects ADD's closed rules; once the agent has filled the peers in, the
  rules the current policies generate with the current peers (which CHECK lists itself): a peer
  relabelled while the agent is stopped makes CHECK fail (107) on its stale allow, and passes again
  once the agent, restarted, has caught up;
- both backends: iptablesMode nft and legacy (the agent uses the backend ADD recorded).
Every wait is on observable state (the rules in web's namespace), with a hang guard.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from agent_case import NODE, AgentTestCase  # noqa: E402
from harness import main  # noqa: E402
from policy_k8s import ENFORCE, PolicyK8sTestCase  # noqa: E402

WEB = {"matchLabels": {"app": "web"}}
PORTS = [{"protocol": "TCP", "port": 8080}]


class PolicyAgent(PolicyK8sTestCase, AgentTestCase):
    node_name = NODE
    mode = "nft"

    def setUp(self):
        super().setUp()
        self.write_world()

    def peers_in_force(self, web, *pods):
        """The source addresses of web's MNP-IN-net1 allows (every family) are exactly `pods`'."""
        want = {"-s %s/%d" % (p.ips[f], 32 if f == 4 else 128) for p in pods for f in self.families}
        have = set()
        for family in self.families:
            for line in self.filter_save(web, self.mode, family).splitlines():
                if line.startswith("-A MNP-IN-net1 -s "):
                    have.add(" ".join(line.split()[2:4]))
        return have == want

    def wait_peers(self, web, *pods):
        self.wait_for(lambda: self.peers_in_force(web, *pods),
                      "web's allows for %s" % [p.name for p in pods])

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
