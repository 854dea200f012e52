"""The unittest base class of the runtime tests (test_runtime_*.py).

A RuntimeTestCase is a ManifoldTestCase (node and pod namespaces, TempTree) plus what a real
runtime needs: a private mount namespace binding the tree's directories over the runtime's fixed
paths (mountns.py), a cgroup parent of the test's own, a busybox rootfs, builders for the manifold
networks the runtimes load, a view of a container's network namespace through its pid, and the
leak check every test ends with: no host-local reservation, manifold cache entry, libcni cache
entry, netns file, tuning state, portmap chain, link on the node side or cgroup of the test left.
"""
import json
import os
import time

from harness import BRIDGE, ManifoldTestCase, Netns, configs
from harness import main as harness_main
from harness.netns import run
from harness.tree import SYSTEM_PLUGIN_DIR, cache_files

from . import cgroups
from .mountns import PrivateMounts, runtime_binds
from .rootfs import INDEX_TEXT, busybox_rootfs

# The second cluster network's bridge and subnet (a network attached besides the first).
OTHER_BRIDGE = "mfbr1"
OTHER_SUBNET = "203.0.113.0/24"
OTHER_GATEWAY = "203.0.113.1"
# What manifold declares so runtimes pass runtimeConfig (podman 4.3 and the CRI plugin pass
# portMappings; --ip/--mac-address reach it as IP=/MAC= in CNI_ARGS).
MANIFOLD_CAPABILITIES = {"ips": True, "mac": True, "portMappings": True}
# Bound of each delegate call under a runtime: generous, because the runtime tests share the
# machine with the rest of the suite (delegate timeouts are tested in test_faults_delegates.py).
RUNTIME_DELEGATE_TIMEOUT = 60


class SandboxNet(Netns):
    """A container's network namespace seen through /proc/<pid>/ns/net, for Netns's queries
    (links, addresses, MACs). The runtime owns it: it is never entered as a context here."""

    def __init__(self, pid):
        super().__init__(name="pid-%d" % pid)
        self.path = "/proc/%d/ns/net" % pid

    def ip(self, *args):
        return run(["nsenter", "--net=" + self.path, "ip", *args]).stdout

    def ip_json(self, *args):
        out = run(["nsenter", "--net=" + self.path, "ip", "-j", *args]).stdout.strip()
        return json.loads(out) if out else []


def http_get(netns, address, port, timeout=30):
    """The raw HTTP/1.0 response to `GET /` from address:port, fetched inside netns (a Netns) with
    busybox nc. A server the runtime just started binds its socket asynchronously, so connection
    failures are retried until the bound; the last attempt's output is returned either way."""
    deadline = time.monotonic() + timeout
    while True:
        got = run(["ip", "netns", "exec", netns.name, "busybox", "nc", "-w", "5", address,
                   str(port)], check=False, input_bytes=b"GET / HTTP/1.0\r\n\r\n")
        if got.returncode == 0 or time.monotonic() > deadline:
            return got.stdout + got.stderr
        time.sleep(0.1)


class RuntimeTestCase(ManifoldTestCase):
    """ManifoldTestCase plus a private mount namespace, a cgroup parent and a rootfs."""

    def setUp(self):
        super().setUp()
        # Cleanups run in reverse: the runtime (entered by subclasses) stops first, then the mount
        # namespace's holder, then the cgroup parent goes once the last monitor process is gone.
        self.cgroup_parent = self.node.name
        self._stack.callback(cgroups.remove, self.cgroup_parent)
        self.cni_conf_dir = self.tree.path("cni-net.d")
        self.cni_bin_dir = self.tree.path("cni-bin")
        os.makedirs(self.cni_conf_dir)
        self._link_plugins(self.cni_bin_dir)
        binds, self.run_dir = runtime_binds(self.tree.path("machine"), self.cni_conf_dir,
                                            self.cni_bin_dir, self.tree.libcni_cache)
        self.mounts = self._stack.enter_context(PrivateMounts(binds))
        self.rootfs = busybox_rootfs(self.tree.path("rootfs"))
        self.bridges = {BRIDGE}

    def _link_plugins(self, directory):
        """Creates directory with manifold and every system plugin, as a node's /opt/cni/bin."""
        os.makedirs(directory)
        os.symlink(self.tree.manifold_bin, os.path.join(directory, "manifold"))
        for name in os.listdir(SYSTEM_PLUGIN_DIR):
            os.symlink(os.path.join(SYSTEM_PLUGIN_DIR, name), os.path.join(directory, name))

    # ---- configs -------------------------------------------------------------------------------

    def cluster_list(self, version="1.0.0", bridge_name=BRIDGE, subnet=configs.CLUSTER_SUBNET,
                     gateway=configs.CLUSTER_GATEWAY, default_route=True, name="cluster"):
        """The cluster network as a conflist: bridge + host-local accepting the runtime's ips and
        mac, then portmap."""
        bridge = configs.bridge(version, self.tree.ipam_dir, name=name, bridge_name=bridge_name,
                                subnet=subnet, gateway=gateway)
        if not default_route:
            bridge["ipam"]["routes"] = []
        bridge["capabilities"] = {"ips": True, "mac": True}
        for key in ("cniVersion", "name"):
            del bridge[key]
        self.bridges.add(bridge_name)
        return {"cniVersion": version, "name": name,
                "plugins": [bridge, {"type": "portmap", "capabilities": {"portMappings": True}}]}

    def secondaries(self, version="1.0.0", slot=0):
        """[macvlan static (net1), macvlan + tuning conflist (net2)]; see standard_delegates."""
        return self.standard_delegates(version, version, version, slot)[1:]

    def manifold_network(self, name, delegates, version="1.0.0", **extra):
        """A manifold network config (a conf) declaring the ips, mac and portMappings
        capabilities, with cniDir and logFile in the test's tree."""
        extra.setdefault("delegate_timeout", RUNTIME_DELEGATE_TIMEOUT)
        return self.manifold_conf(version, delegates, name=name,
                                  capabilities=MANIFOLD_CAPABILITIES, **extra)

    def manifold_list(self, name, delegates, version="1.0.0", **extra):
        """The manifold network as a conflist of one plugin."""
        plugin = self.manifold_network(name, delegates, version, **extra)
        for key in ("cniVersion", "name"):
            del plugin[key]
        return {"cniVersion": version, "name": name, "plugins": [plugin]}

    # ---- leak checks ---------------------------------------------------------------------------

    def stray_node_links(self):
        return sorted(set(self.node.link_names()) - self.node_baseline - self.bridges)

    def portmap_chains(self):
        """Per-container chains of portmap (CNI-DN-*) in the node's nat table."""
        out = self.node.exec("iptables-save", "-t", "nat").stdout
        return sorted(line.split()[0][1:] for line in out.splitlines()
                      if line.startswith(":CNI-DN-"))

    def run_dir_entries(self, *parts):
        """Files the runtime left under <its /run>/parts (netns bind mount files, tuning state)."""
        return cache_files(os.path.join(self.run_dir, *parts))

    def assertRuntimeClean(self, tuning_state=()):
        """Nothing of any container is left on the node, in the tree or in the cgroup parent;
        tuning_state lists the tuning plugin's backup files expected to stay (see the containerd
        test: the plugin keeps them when DEL comes without a namespace)."""
        self.assertNothingLeft()
        self.assertEqual(self.portmap_chains(), [], "portmap chains left in the node's nat table")
        self.assertEqual(self.run_dir_entries("netns"), [], "network namespaces left")
        self.assertEqual(self.run_dir_entries("cni"), sorted(tuning_state),
                         "tuning plugin state left")
        # podman keeps one `conmon` cgroup per parent for all its monitors; it is not a container's.
        leftover = [c for c in cgroups.children(self.cgroup_parent) if c != "conmon"]
        self.assertEqual(leftover, [], "container cgroups left")

    def assertServedOnHostPort(self, port):
        """The container's httpd answers on the node's host port (portmap's DNAT)."""
        response = http_get(self.node, configs.CLUSTER_GATEWAY, port)
        self.assertTrue(response.endswith(INDEX_TEXT), response)


def main():
    """Entry point of every runtime test file: sweeps cgroup parents of killed runs, then runs
    the harness's main (root check, binaries, stale namespaces, unittest)."""
    cgroups.remove_stale()
    harness_main()

