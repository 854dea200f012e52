"""Shared base of the fault-injection tests (test_faults_*.py): ManifoldTestCase plus a network
with manifold's own scoping state (so every fault also proves that our ip rules and iptables chains
are rolled back or released), helpers that inspect what manifold leaves behind, and a private mount
namespace for the tests that break the cniDir with mounts.

The scoped attachment is net1 of scoping_world.py: macvlan on the node's veth with static
addresses, `sourceRouting` enabled (a routing table and a `from <ip>` rule at priority 30000) and
an nft mesh (CNIMESH-IN/OUT-net1 chains in the pod's nat table). IPv4 only: the faults are about
cleanup, not about the families.
"""
import ctypes
import ctypes.util
import json
import os
import subprocess
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
sys.dont_write_bytecode = True

from harness import ManifoldTestCase  # noqa: E402
from harness.netns import add_veth, run  # noqa: E402
from scoping_world import PRIORITY, mesh, net1_conf  # noqa: E402

ERR_IO = 5
ERR_DECODING = 6
ERR_DELEGATE_FAILED = 101
ERR_KUBERNETES = 103
ERR_CHECK_FAILED = 107

_CLONE_NEWNS = 0x00020000


def enter_private_mount_namespace():
    """Moves this (still single-threaded) test process into a mount namespace of its own, a slave
    of the host's: the tmpfs and bind mounts the tests make on their cniDir are invisible outside
    and vanish with the process, even if it is killed. `ip netns add` works as before inside it."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.unshare(_CLONE_NEWNS) != 0:
        err = ctypes.get_errno()
        raise OSError(err, "unshare(CLONE_NEWNS): " + os.strerror(err))
    run(["mount", "--make-rslave", "/"])


class FaultsTestCase(ManifoldTestCase):
    """ManifoldTestCase plus the scoped attachment and leftover checks."""

    def scoped_conf(self, name="scoped"):
        """net1 with source routing and an nft mesh (manifold's own rules to roll back)."""
        return net1_conf(False, mesh("nft"), {"enabled": True}, name=name)

    def our_rules(self, ns=None):
        """Policy-routing rules at manifold's priority in the pod (IPv4 and IPv6)."""
        ns = ns or self.pod
        rules = ns.ip_json("rule", "show") + ns.ip_json("-6", "rule", "show")
        return [r for r in rules if r.get("priority") == PRIORITY]

    def our_chains(self, ns=None):
        """Lines of the pod's nat tables (nft and legacy, both families) that mention CNIMESH."""
        ns = ns or self.pod
        lines = []
        for binary in ("iptables-nft-save", "ip6tables-nft-save", "iptables-legacy-save",
                       "ip6tables-legacy-save"):
            out = ns.exec(binary, "-t", "nat", check=False).stdout
            lines += [line for line in out.splitlines() if "CNIMESH" in line]
        return lines

    def assertNoScopingLeft(self, ns=None):
        """No ip rule of ours and no CNIMESH chain or jump in the pod (when it still exists)."""
        ns = ns or self.pod
        if not ns.exists():
            return
        self.assertEqual(self.our_rules(ns), [], "ip rules of manifold left in %s" % ns.name)
        self.assertEqual(self.our_chains(ns), [], "iptables rules of manifold left in %s" % ns.name)

    def assertAllReleased(self):
        """Everything of the pod is gone: links, reservations, cache files, rules, chains."""
        self.assertNoScopingLeft()
        self.assertNothingLeft()

    def assertErrorMentions(self, run_, *words):
        """The CNI error's msg (or details) contains every word."""
        self.assertIsNotNone(run_.error, self._explain(run_, "no CNI error"))
        text = run_.error.get("msg", "") + " " + run_.error.get("details", "")
        for word in words:
            self.assertIn(word, text, self._explain(run_, "error does not mention %r" % word))

    def assertLogMentions(self, *words):
        """manifold's log file contains every word."""
        log = self.tree.log_tail(1 << 30)
        for word in words:
            self.assertIn(word, log, "manifold's log does not mention %r" % word)

    def calls(self):
        """(command, ifname, network name) of every fake-plugin call, in order."""
        return [(r["command"], r["ifname"], r["config"].get("name")) for r in self.tree.records()]

    def cache_record(self, container):
        """The parsed cache file of a container (its entry in manifold-net on eth0)."""
        with open(self.cache_path(container), encoding="utf-8") as f:
            return json.load(f)

    def cache_path(self, container):
        """The cache file path of a container's entry in manifold-net on eth0."""
        return self.tree.cache_entry_path(container)

    def add_killed_before_host_device(self, container):
        """The runtime's ADD of [cluster (eth0), fake-record (net1), host-device (net2)] with
        retryDeleteOnError, during which manifold is SIGKILLed while net1's delegate runs: net2
        was recorded but never started. Debian's host-device fails the DEL of an interface it never
        moved ("failed to find net2"), so only a DEL that skips never-started networks succeeds.
        Returns (the ADD's run, the host device's name); the device stays in the node namespace."""
        device = "mfhd%d" % (os.getpid() % 100000)
        add_veth(self.node, device, device + "p")
        self.addCleanup(lambda: self.node.exec("ip", "link", "del", device, check=False))
        host_device = {"cniVersion": "1.0.0", "name": "hostdev", "type": "host-device", "device": device}
        killer = self.fake_conf("fake-record", name="killer", crash="caller")
        self.write_manifold("1.0.0", [self.cluster_conf(), killer, host_device], retryDeleteOnError=True)
        add = self.driver("add", self.pod.path, container_id=container)
        self.assertNotEqual(add.rc, 0, "manifold was not killed")
        return add, device

    def assertDelSkipsNeverStarted(self, container, device):
        """The runtime's DEL after add_killed_before_host_device succeeds, DELs net1 and not
        net2, leaves the host device in the node, and releases everything."""
        self.assertOk(self.driver("del", self.pod.path, container_id=container))
        self.assertEqual(self.calls(), [("ADD", "net1", "killer"), ("DEL", "net1", "killer")])
        self.assertIn(device, self.node.link_names())
        self.node.ip("link", "del", device)
        self.assertAllReleased()
        self.assertOk(self.driver("del", self.pod.path, container_id=container))

    def mount(self, *args):
        """Runs mount in this process's (private) mount namespace."""
        return subprocess.run(["mount", *args], check=True, capture_output=True)

    def unmount_later(self, path):
        """Unmounts path (lazily, every layer) when the test ends."""
        def unmount():
            while subprocess.run(["umount", "-l", path], capture_output=True).returncode == 0:
                pass
        self.addCleanup(unmount)
