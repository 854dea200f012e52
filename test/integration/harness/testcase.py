"""The unittest base class and entry point shared by every integration test file.

Each test gets its own world: a "node" namespace standing in for the host (it holds the bridge of
the cluster network and two veth pairs whose ends serve as macvlan and ipvlan masters), a "pod"
namespace, a TempTree, and a Driver bound to them. Everything is torn down after the test, pass or
fail. The binaries under test come from the environment: MANIFOLD_BIN (the plugin) and CNI_DRIVER
(the libcni runtime driver); CMake sets both when it registers the test.
"""
import contextlib
import os
import sys
import unittest

from . import ci, configs
from .netns import Netns, add_veth, kernel_supports, remove_stale_namespaces
from .runner import Driver, run_plugin
from .tree import TempTree

BRIDGE = "mfbr0"
MACVLAN_MASTER = "mfmac0"
IPVLAN_MASTER = "mfipv0"


class ManifoldTestCase(unittest.TestCase):
    """Base class: builds the per-test world and offers config helpers and assertions."""

    maxDiff = None

    def plugin_binary(self):
        """The manifold binary this test drives: MANIFOLD_BIN (a subclass may name another)."""
        return os.environ["MANIFOLD_BIN"]

    def setUp(self):
        self.manifold_bin = self.plugin_binary()
        self.driver_bin = os.environ["CNI_DRIVER"]
        self._stack = contextlib.ExitStack()
        self.addCleanup(self._stack.close)
        self.tree = self._stack.enter_context(TempTree(self.manifold_bin))
        self.node = self._stack.enter_context(Netns())
        add_veth(self.node, MACVLAN_MASTER, MACVLAN_MASTER + "p")
        add_veth(self.node, IPVLAN_MASTER, IPVLAN_MASTER + "p")
        self.node_baseline = set(self.node.link_names())
        self.pod = self.new_netns()
        self.driver = Driver(self.driver_bin, self.node, self.tree)

    def new_netns(self):
        """Another namespace of ours, deleted when the test ends."""
        return self._stack.enter_context(Netns())

    # ---- configs -------------------------------------------------------------------------------

    def cluster_conf(self, version="1.0.0", **kw):
        """bridge + host-local with its data dir in this test's tree."""
        return configs.bridge(version, self.tree.ipam_dir, bridge_name=BRIDGE, **kw)

    def macvlan_conf(self, version="1.0.0", address="198.51.100.10/24", **kw):
        """macvlan on this test's macvlan master with a static address."""
        return configs.macvlan(version, MACVLAN_MASTER, address, **kw)

    def ipvlan_conf(self, version="1.0.0", address="203.0.113.10/24", **kw):
        """ipvlan on this test's ipvlan master with a static address."""
        return configs.ipvlan(version, IPVLAN_MASTER, address, **kw)

    def tuning_list(self, version="1.0.0", address="198.51.100.20/24", **kw):
        """The macvlan + tuning conflist on this test's macvlan master."""
        return configs.macvlan_tuning_list(version, MACVLAN_MASTER, address, **kw)

    def fake_conf(self, plugin_type, version="1.0.0", **keys):
        """A fake delegate recording its calls into this test's record file."""
        keys.setdefault("recordFile", self.tree.record_file)
        return configs.fake(plugin_type, version, **keys)

    def standard_delegates(self, cluster="1.0.0", macvlan="1.0.0", tuned="1.0.0", slot=0):
        """[bridge+host-local (eth0), macvlan static (net1), macvlan+tuning conflist (net2)].

        Pods attached at the same time need different slots (0-9): macvlans on one master must
        not share an address or a MAC."""
        return [self.cluster_conf(cluster),
                self.macvlan_conf(macvlan, "198.51.100.%d/24" % (10 + slot)),
                self.tuning_list(tuned, "198.51.100.%d/24" % (20 + slot),
                                 mac=configs.TUNED_MAC[:-2] + "%02x" % (0x2a + slot))]

    def manifold_conf(self, version, delegates, **extra):
        """The manifold config with cniDir and logFile in this test's tree."""
        return configs.manifold(version, delegates, self.tree.cni_dir, self.tree.log_file, **extra)

    def write_manifold(self, version, delegates, **extra):
        """Writes the manifold config as the only file in NETCONFPATH and returns it."""
        conf = self.manifold_conf(version, delegates, **extra)
        self.tree.write_conf(conf)
        return conf

    def run_manifold(self, command, stdin, env=None, drop=(), timeout=60):
        """Runs the manifold binary directly (no runtime), e.g. for VERSION or env errors."""
        full = {"CNI_CONTAINERID": "direct-run", "CNI_NETNS": self.pod.path, "CNI_IFNAME": "eth0",
                "CNI_PATH": self.tree.cni_path()}
        full.update(env or {})
        return run_plugin(self.manifold_bin, self.node, command, stdin, full, drop, timeout)

    # ---- assertions -----------------------------------------------------------------------------

    def _explain(self, run, msg=None):
        parts = [msg] if msg else []
        parts.append(run.describe())
        parts.append("manifold log (tail):\n" + self.tree.log_tail())
        return "\n".join(parts)

    def assertOk(self, run, msg=None):
        """The run exited 0."""
        if run.rc != 0:
            self.fail(self._explain(run, msg or "expected success"))

    def assertCniError(self, run, code, msg=None):
        """The run failed with exactly this CNI error code."""
        if run.rc == 0 or run.code != code:
            self.fail(self._explain(run, msg or "expected CNI error code %s, got %s" % (code, run.code)))

    def assertPodEmpty(self, ns=None):
        """Only the loopback link is left in the namespace."""
        ns = ns or self.pod
        self.assertEqual(ns.link_names(), ["lo"], "links left in %s" % ns.name)

    def stray_node_links(self):
        """Links in the node namespace that neither setup nor the cluster bridge explain."""
        return sorted(set(self.node.link_names()) - self.node_baseline - {BRIDGE})

    def require_link_kind(self, kind):
        """Skips (or, under CI=true, fails: harness/ci.py) unless the kernel can create `kind` links."""
        if not kernel_supports(kind):
            ci.skip_or_fail(self, "this kernel has no %s driver" % kind, feature=kind)

    def assertNothingLeft(self, *pods):
        """No link (but lo) in the pods, no host-local reservation, no cache file, no stray veth."""
        for ns in pods or (self.pod,):
            if ns.exists():
                self.assertPodEmpty(ns)
        self.assertEqual(self.tree.reservations(), [], "host-local reservations left")
        self.assertEqual(self.tree.cache_files(), [], "manifold cache files left in cniDir")
        self.assertEqual(self.tree.libcni_cache_files(), [], "libcni cache entries left")
        self.assertEqual(self.stray_node_links(), [], "links left in the node namespace")


# ---- result helpers (any result version 0.3.0 and later) -----------------------------------------

def find_interface(result, name, sandbox=None):
    """(index, interface) of the interface called name (and in sandbox if given); (None, None)."""
    for i, iface in enumerate(result.get("interfaces") or []):
        if iface.get("name") == name and (sandbox is None or iface.get("sandbox") == sandbox):
            return i, iface
    return None, None


def ips_on(result, name):
    """The addresses of result["ips"] whose interface index points at an interface called name."""
    interfaces = result.get("interfaces") or []
    out = []
    for ip in result.get("ips") or []:
        idx = ip.get("interface")
        if idx is not None and 0 <= idx < len(interfaces) and interfaces[idx].get("name") == name:
            out.append(ip["address"])
    return out


def route_dsts(result):
    """The destinations of the result's routes."""
    return sorted(r["dst"] for r in result.get("routes") or [])


def main():
    """Entry point of every test file: skip unless root (ci.py: a failure under CI=true), check the
    binaries, run unittest; exits 0, 1, or ci.SKIP_EXIT when a test was skipped."""
    if os.geteuid() != 0:
        ci.cannot_run("the integration tests need root (network namespaces)")
    missing = [v for v in ("MANIFOLD_BIN", "CNI_DRIVER") if not os.environ.get(v)]
    if missing:
        print("error: %s not set (run through ctest, which sets them)" % ", ".join(missing))
        sys.exit(2)
    for var in ("MANIFOLD_BIN", "CNI_DRIVER"):
        if not os.access(os.environ[var], os.X_OK):
            print("error: %s=%s is not an executable" % (var, os.environ[var]))
            sys.exit(2)
    remove_stale_namespaces()
    ci.run_unittest()
