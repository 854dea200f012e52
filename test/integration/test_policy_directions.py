#!/usr/bin/env python3
"""MultiNetworkPolicy directions and what is always allowed, proven by traffic over IPv4 and IPv6
between pods attached by manifold (net1 by Debian's bridge plugin), rules by lib/policy:

- stacked policies add up (OR): each allows its own peer and port, neither takes anything away;
- ingress-only: the pod still opens connections over net1 and their replies come back;
- egress-only: only the allowed destination is reachable, while incoming connections (and their
  replies, which leave through the isolated direction) still work;
- a pod isolated both ways with nothing allowed still resolves its IPv6 neighbours (the refusal is
  our ICMPv6 administratively prohibited, not a failed neighbour resolution; the neighbour
  entries are there) and still gets DHCP and DHCPv6 client traffic in and out;
- the peers' addresses change (a peer gone, a new one) and re-applying follows.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import main  # noqa: E402
from policy_world import PolicyTestCase, policy  # noqa: E402

WEB = {"matchLabels": {"app": "web"}}


def allow(name, labels, port, types=("Ingress",)):
    peer = {"podSelector": {"matchLabels": labels}}
    spec = {"podSelector": WEB, "policyTypes": list(types)}
    if "Ingress" in types:
        spec["ingress"] = [{"from": [peer], "ports": [{"port": port}]}]
    if "Egress" in types:
        spec["egress"] = [{"to": [peer], "ports": [{"port": port}]}]
    return policy(name, spec)


class PolicyDirections(PolicyTestCase):
    def setUp(self):
        super().setUp()
        self.web = self.add_pod("web", {"app": "web"})
        self.a = self.add_pod("client-a", {"role": "a"})
        self.b = self.add_pod("client-b", {"role": "b"})
        for pod in (self.web, self.a, self.b):
            self.serve(pod, "tcp:8080", "tcp:9090")

    def test_stacked_policies_add_up(self):
        web, a, b = self.web, self.a, self.b
        self.apply(web, [allow("a-8080", {"role": "a"}, 8080), allow("b-9090", {"role": "b"}, 9090)])
        self.assertTraffic([(a, web, "tcp", 8080, True), (b, web, "tcp", 9090, True),
                            (a, web, "tcp", 9090, False), (b, web, "tcp", 8080, False)])

    def test_ingress_only_keeps_outgoing_connections(self):
        web, a, b = self.web, self.a, self.b
        self.apply(web, [policy("deny-in", {"podSelector": WEB, "policyTypes": ["Ingress"]})])
        self.assertTraffic([(a, web, "tcp", 8080, False), (web, a, "tcp", 8080, True), (web, b, "tcp", 9090, True)])

    def test_egress_only(self):
        web, a, b = self.web, self.a, self.b
        self.apply(web, [allow("to-a", {"role": "a"}, 8080, types=("Egress",))])
        self.assertTraffic([(web, a, "tcp", 8080, True), (web, a, "tcp", 9090, False, True),
                            (web, b, "tcp", 8080, False, True), (b, web, "tcp", 9090, True),
                            (a, web, "tcp", 8080, True)])

    def test_isolated_pod_keeps_neighbour_discovery_and_dhcp(self):
        web, a = self.web, self.a
        self.apply(web, [policy("nothing", {"podSelector": WEB, "policyTypes": ["Ingress", "Egress"]})])
        self.serve(web, "udp:68", "udp:546", label="web-dhcp")
        self.serve(a, "udp:67", "udp:547", label="a-dhcp")
        if self.v6:
            for pod in (web, a):
                pod.netns.ip("-6", "neigh", "flush", "dev", "net1")
            # a resolves web (NS in, NA out through web's chains), then web refuses the SYN itself.
            self.assertEqual(self.probe(a, web, "tcp", 8080, 6), "unreachable EACCES")
            entries = web.netns.ip_json("-6", "neigh", "show", "dev", "net1")
            self.assertIn(a.ips[6], [e.get("dst") for e in entries if "FAILED" not in e.get("state", [])])
            self.assertEqual(self.probe(a, web, "udp", 546, 6, sport=547), "web-dhcp udp:546")
            self.assertEqual(self.probe(web, a, "udp", 547, 6, sport=546), "a-dhcp udp:547")
        self.assertEqual(self.probe(a, web, "udp", 68, 4, sport=67), "web-dhcp udp:68")
        self.assertEqual(self.probe(web, a, "udp", 67, 4, sport=68), "a-dhcp udp:67")
        self.assertTraffic([(a, web, "tcp", 8080, False), (web, a, "tcp", 8080, False, True)])

    def test_reapply_follows_the_peers(self):
        web, a, b = self.web, self.a, self.b
        rules = [allow("clients", {"tier": "client"}, 8080)]
        a.labels = {"tier": "client"}
        state = self.apply(web, rules, peers=[a])
        self.assertTraffic([(a, web, "tcp", 8080, True), (b, web, "tcp", 8080, False)])
        b.labels = {"tier": "client"}
        restored, state = self.reapply(web, state, rules, peers=[a, b])
        self.assertEqual(restored, len(self.families))
        self.assertTraffic([(a, web, "tcp", 8080, True), (b, web, "tcp", 8080, True)])
        restored, state = self.reapply(web, state, rules, peers=[b])
        self.assertTraffic([(a, web, "tcp", 8080, False), (b, web, "tcp", 8080, True)])


if __name__ == "__main__":
    main()
