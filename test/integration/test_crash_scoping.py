#!/usr/bin/env python3
"""Crash consistency of network scoping (scenario c): the cluster network (bridge + host-local,
eth0) and net1, a macvlan with `sourceRouting` (a routing table and a `from <ip>` rule) and an nft
`mesh` (CNIMESH chains in the pod's nat table, applied with iptables-restore), as in
scoping_world.py. Every netlink request that changes a rule or route, every iptables-save and
iptables-restore started and every rule set fed to it is a step. manifold is killed at every step
of ADD, CHECK, DEL and GC and fails at cache and netlink calls (crash/campaign.py); after the
runtime's recovery the pod must hold no rule, routing table or chain of ours in either iptables
backend, nothing else may be left, and a fresh ADD and DEL of the same container must work.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from crash.campaign import DriverCrashMixin  # noqa: E402
from harness import ManifoldTestCase, main  # noqa: E402
from scoping_world import mesh, net1_conf  # noqa: E402


class CrashScopingTest(DriverCrashMixin, ManifoldTestCase):
    """One campaign per verb on [bridge + host-local, macvlan with sourceRouting and nft mesh]."""

    scenario = "scoping"

    def setUp(self):
        super().setUp()
        scoped = net1_conf(False, mesh("nft"), {"enabled": True})
        self.write_manifold("1.1.0", [self.cluster_conf(), scoped])


if __name__ == "__main__":
    main()
