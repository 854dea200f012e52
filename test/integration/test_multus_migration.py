#!/usr/bin/env python3
"""The DEL of a pod real Multus thin attached, by manifold (a node moved from Multus to manifold).

Multus thin v4 (built from its Go module by test/cluster/build-module.sh, cached per machine) runs
the ADD in a real namespace — a bridge cluster network with ipMasq and a macvlan and a macvlan +
tuning conflist, without Kubernetes, so it attaches its `delegates` — and writes its own cache: the
scratch file of the container and libcni's result file of each delegate. Then manifold, the config
that now wraps the same cluster network, gets the runtime's DEL: it has no entry of its own, reads
Multus's, and every delegate gets its DEL. Nothing may be left: no link in the pod or on the node,
no host-local reservation, no masquerade rule of the bridge, no file of Multus's or manifold's.
Without Multus's cache (multusCniDir ""), the same DEL leaves the bridge's masquerade rules: the
reason the cache is read.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import ci  # noqa: E402
from harness.runner import run_plugin  # noqa: E402
from harness.testcase import ManifoldTestCase, main  # noqa: E402
from harness.tree import cache_files  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONTAINER = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
CNI_ARGS = "IgnoreUnknown=true;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web;" \
           "K8S_POD_INFRA_CONTAINER_ID=" + CONTAINER


def multus_binary():
    """Multus thin's plugin binary, or None when its module cannot be built here."""
    run = subprocess.run(["bash", os.path.join(REPO, "test", "cluster", "build-module.sh"),
                          "multus"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                         timeout=1800)
    return os.path.join(run.stdout.strip(), "multus") if run.returncode == 0 else None


class MultusAttachedPod(ManifoldTestCase):

    def setUp(self):
        super().setUp()
        self.multus = multus_binary()
        if not self.multus:
            ci.skip_or_fail(self, "Multus thin could not be built (test/cluster/build-module.sh)")
        self.multus_dir = self.tree.path("multus")
        cluster = self.cluster_conf()
        cluster["ipMasq"] = True
        self.delegates = [cluster] + self.standard_delegates()[1:]

    def env(self):
        return {"CNI_CONTAINERID": CONTAINER, "CNI_NETNS": self.pod.path, "CNI_IFNAME": "eth0",
                "CNI_PATH": self.tree.cni_path(), "CNI_ARGS": CNI_ARGS}

    def multus_add(self):
        conf = {"cniVersion": "1.0.0", "name": "multus-cni-network", "type": "multus",
                "cniDir": self.multus_dir, "binDir": self.tree.bin_dir, "logToStderr": False,
                "delegates": self.delegates}
        self.assertOk(run_plugin(self.multus, self.node, "ADD", conf, self.env()))
        self.assertEqual(self.pod.link_names(), ["eth0", "lo", "net1", "net2"])
        self.assertEqual(sorted(cache_files(self.multus_dir)), [
            CONTAINER, "results/cluster-%s-eth0" % CONTAINER, "results/macnet-%s-net1" % CONTAINER,
            "results/tunednet-%s-net2" % CONTAINER])
        self.assertTrue(self.masquerade_rules())

    def manifold_del(self, **extra):
        extra.setdefault("multusCniDir", self.multus_dir)
        conf = self.manifold_conf("1.0.0", [self.delegates[0]], name="multus-cni-network", **extra)
        self.assertOk(self.run_manifold("DEL", conf, self.env()))

    def masquerade_rules(self):
        out = self.node.exec("iptables-save", "-t", "nat").stdout
        return [line for line in out.splitlines() if line.startswith("-A") and "192.0.2." in line]

    def test_manifold_deletes_what_multus_attached(self):
        self.multus_add()
        self.manifold_del()
        self.assertNothingLeft()
        self.assertEqual(cache_files(self.multus_dir), [])
        self.assertEqual(self.masquerade_rules(), [])

    def test_without_multus_cache_the_bridge_rules_stay(self):
        self.multus_add()
        self.manifold_del(multusCniDir="")
        self.assertEqual(self.tree.reservations(), [])  # the rebuilt DEL releases the addresses…
        self.assertTrue(self.masquerade_rules())  # …but without the namespace, not the rules
        self.assertEqual(len(cache_files(self.multus_dir)), 4)
        self.manifold_del()  # the cache still there: the next DEL with it cleans up
        self.assertEqual(cache_files(self.multus_dir), [])
        self.assertEqual(self.masquerade_rules(), [])
        self.assertNothingLeft()


if __name__ == "__main__":
    main()
