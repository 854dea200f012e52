#!/usr/bin/env python3
"""manifold under podman 4.3 with its CNI backend: a container's whole network lifecycle (run,
stop, start, restart, rm) with three delegates and a port mapping at config version 1.0.0, and
run/rm at 0.4.0 (podman parses either result); two manifold networks in one container (podman
calls manifold once per network with the same container ID and CNI_IFNAME eth0, eth1) and
disconnecting one of them; `podman network reload` (a DEL, then an ADD with the old address and
MAC as IP= and MAC=); `--ip` and `--mac-address` (podman 4.3 passes them as IP= and MAC= in
CNI_ARGS, and port mappings as runtimeConfig) reaching the cluster network only, also across a
reload; `podman network connect`/`disconnect` on a running container. Every test ends with the
runtime leak check of runtimes/case.py; podman runs entirely inside the test's tree and
namespaces (runtimes/podman.py).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import TUNED_MAC  # noqa: E402
from runtimes.case import (OTHER_BRIDGE, OTHER_GATEWAY, OTHER_SUBNET, RuntimeTestCase,  # noqa: E402
                           SandboxNet, main)
from runtimes.podman import Podman  # noqa: E402

HOST_PORT = 8080
STATIC_IP = "192.0.2.77"
STATIC_MAC = "02:00:5e:10:00:77"


class PodmanTest(RuntimeTestCase):
    """Each test has its own podman (storage, config, networks) in its tree."""

    def setUp(self):
        super().setUp()
        self.podman = Podman(self.tree.path("podman"), self.mounts, self.node.path,
                             self.tree.path("podman-networks"), [self.cni_bin_dir],
                             self.cgroup_parent)
        self._stack.callback(self.podman.remove_all)

    # ---- networks ------------------------------------------------------------------------------

    def network_a(self, version="1.0.0"):
        """mfa: the cluster network (default route) plus the two macvlan secondaries."""
        net = self.manifold_list("mfa", [self.cluster_list(version)] + self.secondaries(version),
                                 version)
        self.podman.write_network(net)
        return "mfa"

    def network_b(self):
        """mfb: another bridge and subnet without a default route, and its own secondaries."""
        cluster = self.cluster_list(bridge_name=OTHER_BRIDGE, subnet=OTHER_SUBNET,
                                    gateway=OTHER_GATEWAY, default_route=False, name="cluster-b")
        self.podman.write_network(self.manifold_list("mfb", [cluster] + self.secondaries(slot=1)))
        return "mfb"

    # ---- views and assertions ------------------------------------------------------------------

    def sandbox(self, name):
        """The running container's network namespace."""
        pid = self.podman.pid(name)
        self.assertGreater(pid, 0, "container %s is not running" % name)
        return SandboxNet(pid)

    def cluster_address(self, sandbox, ifname, subnet_prefix):
        """The one address of ifname, which must start with subnet_prefix."""
        addresses = sandbox.addresses(ifname)
        self.assertEqual(len(addresses), 1, addresses)
        self.assertTrue(addresses[0].startswith(subnet_prefix), addresses)
        return addresses[0]

    def assertAttachedToA(self, name, ifnames=("eth0", "net1", "net2")):
        """name has mfa's cluster interface and two secondaries under ifnames (plus whatever
        else); returns (its namespace, the address of the cluster interface)."""
        sandbox = self.sandbox(name)
        cluster, net1, net2 = ifnames
        address = self.cluster_address(sandbox, cluster, "192.0.2.")
        self.assertEqual(sandbox.addresses(net1), ["198.51.100.10/24"])
        self.assertEqual(sandbox.addresses(net2), ["198.51.100.20/24"])
        self.assertEqual(sandbox.mac(net2), TUNED_MAC)
        return sandbox, address

    def assertPodmanSees(self, name, network, sandbox):
        """podman parsed manifold's result: it reports eth0's IP and MAC."""
        settings = self.podman.inspect(name)["NetworkSettings"]["Networks"][network]
        address = "%s/%s" % (settings["IPAddress"], settings["IPPrefixLen"])
        self.assertEqual(sandbox.addresses("eth0"), [address])
        self.assertEqual(settings["MacAddress"].lower(), sandbox.mac("eth0"))

    def assertPodmanClean(self):
        """Leak check, and podman knows no container."""
        self.assertRuntimeClean()
        self.assertEqual(self.podman.container_ids(), [])

    # ---- tests ---------------------------------------------------------------------------------

    def run_web(self, version):
        """A container on mfa at version with a port mapping: attached, its result parsed by
        podman, its httpd served through the host port."""
        net = self.network_a(version)
        self.podman.run("web", self.rootfs, [net], "-p", "%d:80" % HOST_PORT)
        sandbox, _ = self.assertAttachedToA("web")
        self.assertPodmanSees("web", net, sandbox)
        self.assertServedOnHostPort(HOST_PORT)
        return net

    def test_lifecycle_at_1_0_0(self):
        net = self.run_web("1.0.0")
        self.podman("stop", "--time", "0", "web")
        self.assertRuntimeClean()
        self.podman("start", "web")
        self.assertAttachedToA("web")
        self.assertServedOnHostPort(HOST_PORT)
        self.podman("restart", "--time", "0", "web")
        sandbox, _ = self.assertAttachedToA("web")
        self.assertPodmanSees("web", net, sandbox)
        self.assertServedOnHostPort(HOST_PORT)
        self.podman("rm", "--force", "--time", "0", "web")
        self.assertPodmanClean()

    def test_run_and_rm_at_0_4_0(self):
        self.run_web("0.4.0")
        self.podman("rm", "--force", "--time", "0", "web")
        self.assertPodmanClean()

    def test_two_manifold_networks_in_one_container(self):
        a, b = self.network_a(), self.network_b()
        self.podman.run("two", self.rootfs, [a, b])
        # podman chooses which network becomes eth0 (its order is not the command line's); the
        # other is attached as eth1, and manifold names that one's secondaries eth1-1 and eth1-2.
        first, second = ("eth0", "net1", "net2"), ("eth1", "eth1-1", "eth1-2")
        a_first = any(addr.startswith("192.0.2.") for addr in self.sandbox("two").addresses("eth0"))
        a_names, b_names = (first, second) if a_first else (second, first)
        sandbox, _ = self.assertAttachedToA("two", a_names)
        self.cluster_address(sandbox, b_names[0], "203.0.113.")
        self.assertEqual(sandbox.addresses(b_names[1]), ["198.51.100.11/24"])
        self.assertEqual(sandbox.addresses(b_names[2]), ["198.51.100.21/24"])
        self.assertEqual(sandbox.link_names(),
                         ["eth0", "eth1", "eth1-1", "eth1-2", "lo", "net1", "net2"])
        self.podman("network", "disconnect", a, "two")
        self.assertEqual(sandbox.link_names(), sorted(list(b_names) + ["lo"]))
        self.assertEqual([r.split("/")[0] for r in self.tree.reservations()], ["cluster-b"])
        self.podman("rm", "--force", "--time", "0", "two")
        self.assertPodmanClean()

    def test_static_ip_and_mac_reach_the_cluster_network_only(self):
        net = self.network_a()
        self.podman.run("fixed", self.rootfs, [net], "--ip", STATIC_IP, "--mac-address", STATIC_MAC)
        self.assertStatic("fixed")
        self.podman("network", "reload", "fixed")
        self.assertStatic("fixed")
        self.podman("rm", "--force", "--time", "0", "fixed")
        self.assertPodmanClean()

    def test_network_reload_keeps_every_interface(self):
        net = self.network_a()
        self.podman.run("reloaded", self.rootfs, [net])
        _, address = self.assertAttachedToA("reloaded")
        self.podman("network", "reload", "reloaded")
        sandbox, reloaded_address = self.assertAttachedToA("reloaded")
        self.assertEqual(sandbox.link_names(), ["eth0", "lo", "net1", "net2"])
        self.assertEqual(reloaded_address, address)
        self.podman("rm", "--force", "--time", "0", "reloaded")
        self.assertPodmanClean()

    def assertStatic(self, name):
        """eth0 has the requested address and MAC; the secondaries keep their own."""
        sandbox, address = self.assertAttachedToA(name)
        self.assertEqual(sandbox.link_names(), ["eth0", "lo", "net1", "net2"])
        self.assertEqual(address, STATIC_IP + "/24")
        self.assertEqual(sandbox.mac("eth0"), STATIC_MAC)
        self.assertNotEqual(sandbox.mac("net1"), STATIC_MAC)

    def test_connect_and_disconnect_a_running_container(self):
        a, b = self.network_a(), self.network_b()
        self.podman.run("hot", self.rootfs, [a])
        sandbox, _ = self.assertAttachedToA("hot")
        self.podman("network", "connect", b, "hot")
        self.cluster_address(sandbox, "eth1", "203.0.113.")
        self.assertEqual(sandbox.link_names(),
                         ["eth0", "eth1", "eth1-1", "eth1-2", "lo", "net1", "net2"])
        self.podman("network", "disconnect", b, "hot")
        self.assertEqual(sandbox.link_names(), ["eth0", "lo", "net1", "net2"])
        self.assertEqual([r.split("/")[0] for r in self.tree.reservations()], ["cluster"])
        self.podman("rm", "--force", "--time", "0", "hot")
        self.assertPodmanClean()


if __name__ == "__main__":
    main()
