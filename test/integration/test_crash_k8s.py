#!/usr/bin/env python3
"""Crash consistency with Kubernetes (scenario b): the cluster network (bridge + host-local, eth0)
and two NADs from the pod's networks annotation, a macvlan with a static address (net1) and a
macvlan with host-local IPAM (net2), looked up in the API server double, with the network-status
PUT and events. Every TLS write to the API is a step. manifold is killed at every side-effect step
of ADD, CHECK, DEL and GC and fails at cache and netlink calls (crash/campaign.py); after the
runtime's recovery nothing may be left (namespaces, cniDir, reservations, libcni's cache,
device-info files), and a fresh ADD and DEL of the same container must work. A killed ADD that
had not cached anything yet is DELed from the pod and its NADs, read from the API again.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from crash.campaign import KEEP, CrashMixin  # noqa: E402
from crash.residue import Places  # noqa: E402
from harness import main  # noqa: E402
from k8s_case import NETWORKS, K8sTestCase, pod_cni_args  # noqa: E402

KEEP_POD = "crash-keep"


class CrashK8sTest(CrashMixin, K8sTestCase):
    """One campaign per verb on [bridge + host-local, NAD macvlan static, NAD macvlan host-local]."""

    scenario = "k8s"

    def setUp(self):
        super().setUp()
        self.device_info_dir = self.tree.path("devinfo")
        os.makedirs(self.device_info_dir)
        self.api.add_nad("default", "mac-static", self.macvlan_nad_conf("198.51.100.10/24"))
        self.api.add_nad("default", "mac-pool", self.hostlocal_nad_conf())
        networks = {NETWORKS: "mac-static, mac-pool"}
        self.add_pod(networks)
        self.add_pod(networks, name=KEEP_POD, uid="uid-" + KEEP_POD)
        self.write_k8s(version="1.1.0", deviceInfoDir=self.device_info_dir)

    def invoke(self, verb, container, ns, valid):
        """The libcni driver's call with the pod's CNI_ARGS (GC: only the valid attachments)."""
        if verb == "GC":
            return self.driver("gc", "", valid_attachments=valid)
        pod = KEEP_POD if container == KEEP else self.pod_name
        args = pod_cni_args("default", pod, "uid-" + pod, container)
        return self.driver(verb.lower(), ns.path, container_id=container, cni_args=args)

    def places(self):
        """The test's namespaces and directories, with the device-info directory."""
        return Places(self.pod, self.node, self.tree.cni_dir, self.tree.ipam_dir, self.tree.libcni_cache,
                      self.device_info_dir)


if __name__ == "__main__":
    main()
