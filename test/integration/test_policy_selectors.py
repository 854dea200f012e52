#!/usr/bin/env python3
"""MultiNetworkPolicy peers chosen by selectors, proven by TCP and UDP traffic over IPv4 and IPv6
between pods attached by manifold (net1 made by Debian's bridge plugin), the rules installed by
lib/policy with the real iptables (nft, denyAction reject):

- podSelector alone selects pods of the policy's namespace: the role=client pod of "default" gets
  through on the allowed ports only; a pod with other labels and a role=client pod of another
  namespace are refused;
- namespaceSelector alone selects every pod of the matching namespaces;
- both together select the matching pods of the matching namespaces;
- the policy changes in place (re-apply restores only what differs, and nothing when nothing does);
- eth0 is never filtered, and net1's egress stays open while only ingress is isolated;
- CHECK passes while the rules are what the policies generate and names a difference after a
  rule is deleted behind our back; removal leaves no MNP chain or jump.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import main  # noqa: E402
from policy_world import PolicyTestCase, namespace, policy  # noqa: E402

NAMESPACES = [namespace("default"), namespace("team-a", {"team": "a"})]
PORTS = [{"protocol": "TCP", "port": 8080}, {"protocol": "UDP", "port": 53}]


def ingress_from(peer):
    return {"podSelector": {"matchLabels": {"app": "web"}}, "ingress": [{"from": [peer], "ports": PORTS}]}


class PolicySelectors(PolicyTestCase):
    def setUp(self):
        super().setUp()
        self.web = self.add_pod("web", {"app": "web"})
        self.a = self.add_pod("client-a", {"role": "client"})
        self.b = self.add_pod("client-b", {"role": "other"})
        self.c = self.add_pod("client-c", {"role": "client"}, ns="team-a")
        self.serve(self.web, "tcp:8080", "udp:53", "tcp:9090")
        for pod in (self.a, self.b, self.c):
            self.serve(pod, "tcp:8080")

    def test_selectors(self):
        web, a, b, c = self.web, self.a, self.b, self.c
        by_pod = [policy("clients", ingress_from({"podSelector": {"matchLabels": {"role": "client"}}}))]
        state = self.apply(web, by_pod, namespaces=NAMESPACES)
        with self.subTest("podSelector"):
            self.assertTraffic([(a, web, "tcp", 8080, True), (a, web, "udp", 53, True),
                                (a, web, "tcp", 9090, False), (b, web, "tcp", 8080, False),
                                (b, web, "udp", 53, False), (c, web, "tcp", 8080, False),
                                (web, a, "tcp", 8080, True), (web, c, "tcp", 8080, True)])
            self.assertEqual(self.check(web, state, by_pod, namespaces=NAMESPACES), [])

        by_ns = [policy("team-a", ingress_from({"namespaceSelector": {"matchLabels": {"team": "a"}}}))]
        restored, state = self.reapply(web, state, by_ns, namespaces=NAMESPACES)
        self.assertEqual(restored, 1 if len(self.families) == 1 else 2)
        with self.subTest("namespaceSelector"):
            self.assertTraffic([(c, web, "tcp", 8080, True), (c, web, "udp", 53, True),
                                (a, web, "tcp", 8080, False), (b, web, "udp", 53, False)])

        both = [policy("clients-anywhere", ingress_from({"namespaceSelector": {},
                                                         "podSelector": {"matchLabels": {"role": "client"}}}))]
        restored, state = self.reapply(web, state, both, namespaces=NAMESPACES)
        with self.subTest("podSelector and namespaceSelector"):
            self.assertTraffic([(a, web, "tcp", 8080, True), (c, web, "udp", 53, True),
                                (b, web, "tcp", 8080, False), (c, web, "tcp", 9090, False)])
        restored, state = self.reapply(web, state, both, namespaces=NAMESPACES)
        self.assertEqual(restored, 0, "nothing changed, nothing restored")

        with self.subTest("eth0 is never filtered"):
            eth0 = web.netns.addresses("eth0", 4)[0].split("/")[0]
            self.assertEqual(self.probe(b, web, "tcp", 9090, dst_ip=eth0).split(" ")[0], "web")

        with self.subTest("CHECK"):
            self.assertEqual(self.check(web, state, both, namespaces=NAMESPACES), [])
            web.netns.exec("iptables-nft", "-D", "MNP-IN-net1", "-m", "conntrack", "--ctstate",
                           "RELATED,ESTABLISHED", "-m", "comment", "--comment", "mnp/net1/replies", "-j", "ACCEPT")
            diffs = self.check(web, state, both, namespaces=NAMESPACES)
            self.assertEqual(len(diffs), 1, diffs)
            self.assertIn("IPv4: MNP-IN-net1 is missing the rule: -A MNP-IN-net1 -m conntrack --ctstate "
                          "RELATED,ESTABLISHED", diffs[0])
            self.assertNotEqual(self.check(web, state, by_pod, namespaces=NAMESPACES), [])

        self.remove(web, state)
        self.assertNoPolicyRules(web)
        self.assertAllowed(b, web, "tcp", 9090)


if __name__ == "__main__":
    main()
