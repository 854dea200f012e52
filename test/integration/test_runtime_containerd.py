#!/usr/bin/env python3
"""manifold under containerd 1.6 through `ctr run --cni` (go-cni in the ctr process): a manifold
conflist at 1.0.0 and a manifold conf at 0.4.0 attach the three delegates, and when the container
exits or its task is killed ctr DELs (with an empty CNI_NETNS: the namespace died with the task)
and nothing is left. Each test has its own containerd (it boots in well under a second) in its own
tree and namespaces (runtimes/containerd.py) and ends with the runtime leak check of
runtimes/case.py.

Two properties of ctr 1.6 shape these tests. It DELs only in the foreground: `ctr run --detach`
followed by `ctr tasks delete` and `ctr containers delete` never runs CNI DEL, so the tests run ctr
in the foreground. And it loads only the first network of /etc/cni/net.d (go-cni's
WithDefaultConf), so several manifold networks in one container are tested through the CRI plugin
(test_runtime_cri.py), which loads up to max_conf_num of them. The tuning plugin cannot restore a
namespace that is gone and keeps its backup file when DEL has no CNI_NETNS: after a ctr DEL the
only file left is that backup, in the tree's /run/cni/tuning.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import TUNED_MAC  # noqa: E402
from runtimes.case import RuntimeTestCase, SandboxNet, main  # noqa: E402
from runtimes.containerd import NAMESPACE, Containerd  # noqa: E402

KILLED = 128 + 9


class ContainerdTest(RuntimeTestCase):
    """Each test has its own containerd; ctr reads the test's /etc/cni/net.d and /opt/cni/bin."""

    def setUp(self):
        super().setUp()
        self.containerd = self._stack.enter_context(
            Containerd(self.tree.path("containerd"), self.mounts, self.node.path))

    def write_network(self, filename, conf):
        """A network config file in the /etc/cni/net.d ctr reads."""
        with open(os.path.join(self.cni_conf_dir, filename), "w", encoding="utf-8") as f:
            json.dump(conf, f, indent=2)

    def delegates(self, version):
        """The cluster network plus the two macvlan secondaries."""
        return [self.cluster_list(version)] + self.secondaries(version)

    def assertAttached(self, run):
        """The container holds eth0 (cluster subnet), net1 and net2 (their static addresses)."""
        sandbox = SandboxNet(run.pid)
        self.assertEqual(sandbox.link_names(), ["eth0", "lo", "net1", "net2"],
                         self.tree.log_tail())
        self.assertEqual(len(sandbox.addresses("eth0")), 1)
        self.assertTrue(sandbox.addresses("eth0")[0].startswith("192.0.2."))
        self.assertEqual(sandbox.addresses("net1"), ["198.51.100.10/24"])
        self.assertEqual(sandbox.addresses("net2"), ["198.51.100.20/24"])
        self.assertEqual(sandbox.mac("net2"), TUNED_MAC)

    def assertEnded(self, run, outcome, rc):
        """ctr ended with rc after its DEL; once the container is deleted nothing is left but the
        tuning plugin's backup of net2."""
        self.assertEqual(outcome[0], rc, outcome[2])
        tuning_backup = ["tuning/%s-%s_net2.json" % (NAMESPACE, run.cid)]
        self.assertRuntimeClean(tuning_state=tuning_backup)
        self.containerd.ctr("containers", "delete", run.cid)
        self.assertEqual(self.containerd.ctr("containers", "list", "--quiet").stdout, "")
        self.assertRuntimeClean(tuning_state=tuning_backup)

    def test_conflist_attaches_and_exit_releases(self):
        self.write_network("10-mfa.conflist", self.manifold_list("mfa", self.delegates("1.0.0")))
        run = self.containerd.run_foreground("exits", self.rootfs, self.cgroup_parent)
        self.assertAttached(run)
        self.assertEqual(self.tree.libcni_cache_files(),
                         ["results/mfa-%s-exits-eth0" % NAMESPACE])
        self.assertEnded(run, run.exit(), 0)

    def test_conf_attaches_and_kill_releases(self):
        self.write_network("10-mfconf.conf",
                           self.manifold_network("mfconf", self.delegates("0.4.0"), "0.4.0"))
        run = self.containerd.run_foreground("killed", self.rootfs, self.cgroup_parent)
        self.assertAttached(run)
        self.assertEnded(run, run.kill(), KILLED)

if __name__ == "__main__":
    main()
