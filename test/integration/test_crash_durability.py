#!/usr/bin/env python3
"""A power loss after ADD: manifold's cache writes are not fsynced (lib/store/cache.h), so a power
loss may lose the entry or leave it empty — and the reboot destroys the pod's namespace too. The
runtime then DELs the sandbox with its old, now missing namespace path; manifold must rebuild the
delegate list from its config (and, with Kubernetes, from the pod and its NADs) and DEL every
delegate without a namespace, so host-local releases every address. Checked without and with
Kubernetes, for an entry that was lost (every file under cniDir removed, whatever the cache layout)
and for one left empty (every file truncated to 0 bytes).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import ManifoldTestCase, main  # noqa: E402
from harness.tree import container_files  # noqa: E402
from k8s_case import NETWORKS, K8sTestCase  # noqa: E402

CONTAINER = "ctr-power-loss"


def cache_files(cni_dir):
    """Every regular file under cniDir but the node's stored TLS session (a lost or emptied one only
    means a full handshake)."""
    return [os.path.join(cni_dir, f) for f in container_files(cni_dir)]


def lose_entries(cni_dir):
    """The power loss took the entries: no file is left under cniDir."""
    for path in cache_files(cni_dir):
        os.unlink(path)


def empty_entries(cni_dir):
    """The power loss kept the names but not the data: every file is empty."""
    for path in cache_files(cni_dir):
        os.truncate(path, 0)


class PowerLoss:
    """The power-loss sequence, for a test case providing add() and delete(netns)."""

    def power_loss(self, damage):
        """ADD, damage the cache, lose the pod's namespace, DEL: every reservation is released."""
        self.assertOk(self.add())
        self.assertGreater(len(self.tree.reservations()), 0)
        netns = self.pod.path
        damage(self.tree.cni_dir)
        self.pod.delete()
        self.assertOk(self.delete(netns))
        self.assertEqual(self.tree.reservations(), [], "host-local reservations left")
        self.assertEqual(cache_files(self.tree.cni_dir), [], "cache files left")
        self.assertEqual(self.tree.libcni_cache_files(), [], "libcni cache entries left")
        self.assertEqual(self.stray_node_links(), [], "links left in the node namespace")


class PowerLossPlainTest(PowerLoss, ManifoldTestCase):
    """[bridge + host-local, macvlan + host-local] without Kubernetes."""

    def setUp(self):
        super().setUp()
        pool = self.macvlan_conf()
        pool["ipam"] = {"type": "host-local", "subnet": "198.51.100.0/24",
                        "rangeStart": "198.51.100.100", "dataDir": self.tree.ipam_dir}
        self.write_manifold("1.0.0", [self.cluster_conf(), pool])

    def add(self):
        return self.driver("add", self.pod.path, container_id=CONTAINER)

    def delete(self, netns):
        return self.driver("del", netns, container_id=CONTAINER)

    def test_lost_entry(self):
        self.power_loss(lose_entries)

    def test_empty_entry(self):
        self.power_loss(empty_entries)


class PowerLossK8sTest(PowerLoss, K8sTestCase):
    """The cluster network and two NADs (static and host-local macvlan) of the pod's annotation."""

    def setUp(self):
        super().setUp()
        self.api.add_nad("default", "mac-static", self.macvlan_nad_conf("198.51.100.10/24"))
        self.api.add_nad("default", "mac-pool", self.hostlocal_nad_conf())
        self.add_pod({NETWORKS: "mac-static, mac-pool"})
        self.write_k8s()

    def delete(self, netns):
        return super().delete(netns=netns)

    def test_lost_entry(self):
        self.power_loss(lose_entries)

    def test_empty_entry(self):
        self.power_loss(empty_entries)


if __name__ == "__main__":
    main()
