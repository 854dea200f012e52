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

from crash.campaign import CrashMixin  # noqa: E402
from crash.residue import Places  # noqa: E402
from harness import ManifoldTestCase, main  # noqa: E402
from scoping_world import mesh, net1_conf  # noqa: E402


class CrashScopingTest(CrashMixin, ManifoldTestCase):
    """One campaign per verb on [bridge + host-local, macvlan with sourceRouting and nft mesh]."""

    scenario = "scoping"

    def setUp(self):
        super().setUp()
        scoped = net1_conf(False, mesh("nft"), {"enabled": True})
        self.write_manifold("1.1.0", [self.cluster_conf(), scoped])

    def invoke(self, verb, container, ns, valid):
        """The libcni driver's call (GC through pkg/invoke with the valid attachments)."""
        if verb == "GC":
            return self.driver("gc", "", valid_attachments=valid)
        return self.driver(verb.lower(), ns.path, container_id=container)

    def places(self):
        """The test's namespaces and directories."""
        return Places(self.pod, self.node, self.tree.cni_dir, self.tree.ipam_dir, self.tree.libcni_cache)


if __name__ == "__main__":
    main()
