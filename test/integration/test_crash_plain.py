#!/usr/bin/env python3
"""Crash consistency without Kubernetes (scenario a): the cluster network (bridge + host-local,
eth0) and a macvlan network with a static address (net1). manifold is killed at every side-effect
step of ADD, CHECK, DEL and GC, and fails at cache and netlink calls (crash/campaign.py); after the
runtime's recovery the pod and node namespaces, cniDir, host-local's reservations and libcni's
cache must be as before, and a fresh ADD and DEL of the same container must work. GC collects the
crashed container while a second one (ctr-keep) stays valid.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from crash.campaign import DriverCrashMixin  # noqa: E402
from harness import ManifoldTestCase, main  # noqa: E402


class CrashPlainTest(DriverCrashMixin, ManifoldTestCase):
    """One campaign per verb on [bridge + host-local, macvlan]."""

    scenario = "plain"

    def setUp(self):
        super().setUp()
        self.write_manifold("1.1.0", [self.cluster_conf(), self.macvlan_conf()])


if __name__ == "__main__":
    main()
