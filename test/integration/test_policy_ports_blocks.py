#!/usr/bin/env python3
"""MultiNetworkPolicy ports and IP blocks, proven by TCP and UDP traffic over IPv4 and IPv6 between
pods attached by manifold (net1 by Debian's bridge plugin), rules by lib/policy with real iptables:

- ipBlock with except: the whole subnet but one pod's address gets through, that pod is refused;
- named ports: ingress resolves "http" against the pod's own container port (8080), egress against
  each destination pod's; other ports are refused, by the receiver or the sender;
- port ranges (endPort) of TCP and UDP;
- protocol-only rules: every UDP port passes, TCP does not.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import main  # noqa: E402
from policy_world import SUBNETS, PolicyTestCase, policy  # noqa: E402

WEB = {"matchLabels": {"app": "web"}}


class PolicyPortsAndBlocks(PolicyTestCase):
    def setUp(self):
        super().setUp()
        self.web = self.add_pod("web", {"app": "web"})
        self.a = self.add_pod("client-a", {"role": "client"})
        self.b = self.add_pod("client-b", {"role": "client"})
        self.serve(self.web, "tcp:8080", "tcp:9090", "udp:53", "udp:8053", "udp:7000")
        for pod in (self.a, self.b):
            self.serve(pod, "tcp:8080", "tcp:9090")

    def test_ip_block_with_except(self):
        web, a, b = self.web, self.a, self.b
        blocks = [{"ipBlock": {"cidr": SUBNETS["bridge"][0], "except": [a.ips[4] + "/32"]}}]
        if self.v6:
            blocks.append({"ipBlock": {"cidr": SUBNETS["bridge"][1], "except": [a.ips[6] + "/128"]}})
        self.apply(web, [policy("blocks", {"podSelector": WEB, "ingress": [{"from": blocks}]})])
        self.assertTraffic([(b, web, "tcp", 8080, True), (b, web, "udp", 53, True),
                            (a, web, "tcp", 8080, False), (a, web, "udp", 53, False)])

    def test_named_ports_both_directions(self):
        web, a, b = self.web, self.a, self.b
        spec = {"podSelector": WEB, "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"ports": [{"port": "http"}, {"protocol": "UDP", "port": "dns"}]}],
                "egress": [{"to": [{"podSelector": {"matchLabels": {"role": "client"}}}], "ports": [{"port": "http"}]}]}
        self.apply(web, [policy("named", spec)])
        self.assertTraffic([(a, web, "tcp", 8080, True), (b, web, "udp", 53, True),
                            (a, web, "tcp", 9090, False), (b, web, "udp", 8053, False),
                            (web, a, "tcp", 8080, True), (web, b, "tcp", 8080, True),
                            (web, a, "tcp", 9090, False, True)])

    def test_port_ranges(self):
        web, a = self.web, self.a
        spec = {"podSelector": WEB, "ingress": [{"ports": [{"port": 8000, "endPort": 8100},
                                                           {"protocol": "UDP", "port": 8000, "endPort": 8100}]}]}
        self.apply(web, [policy("ranges", spec)])
        self.assertTraffic([(a, web, "tcp", 8080, True), (a, web, "udp", 8053, True),
                            (a, web, "tcp", 9090, False), (a, web, "udp", 53, False), (a, web, "udp", 7000, False)])

    def test_protocol_only(self):
        web, a = self.web, self.a
        self.apply(web, [policy("udp-only", {"podSelector": WEB, "ingress": [{"ports": [{"protocol": "UDP"}]}]})])
        self.assertTraffic([(a, web, "udp", 53, True), (a, web, "udp", 7000, True),
                            (a, web, "tcp", 8080, False), (a, web, "tcp", 9090, False)])


if __name__ == "__main__":
    main()
