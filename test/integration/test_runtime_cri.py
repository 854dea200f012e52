#!/usr/bin/env python3
"""manifold on the kubelet's path: a CRI client (runtimes/cri.py, the calls a kubelet makes)
drives containerd 1.6's CRI plugin, which runs manifold with the pod's CNI_ARGS; manifold reads the
pod from the Kubernetes API server double (k8s_case.py). RunPodSandbox for a pod whose
k8s.v1.cni.cncf.io/networks annotation names a NAD gives the sandbox eth0 and net1, the sandbox
(which serves a page) is reachable through the hostPort the kubelet asked for, and the pod gets its
network-status annotation; StopPodSandbox releases everything and RemovePodSandbox removes the
sandbox. With max_conf_num 2 the plugin attaches two manifold networks to one sandbox (as eth0 and
eth1, concurrently). A manifold killed in the middle of RunPodSandbox's ADD is torn down by the CRI
plugin's own DEL, leaving nothing. Each test has its own containerd, started once the test's CNI configs are in
place, and ends with the runtime leak check of runtimes/case.py.
"""
import json
import os
import sys
import time

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import add_veth, configs  # noqa: E402
from harness.tree import FAKE_PLUGIN_DIR  # noqa: E402
from k8s_case import NETWORKS, K8sTestCase  # noqa: E402
from runtimes import cri  # noqa: E402
from runtimes.case import (MANIFOLD_CAPABILITIES, OTHER_BRIDGE, OTHER_GATEWAY,  # noqa: E402
                           OTHER_SUBNET, RuntimeTestCase, SandboxNet, main)
from runtimes.containerd import Containerd  # noqa: E402
from runtimes.rootfs import oci_archive  # noqa: E402

HOST_PORT = 8080
SANDBOX_ENTRYPOINT = ["/bin/httpd", "-f", "-p", "80", "-h", "/www"]
# The CRI plugin learns of an imported image through containerd's events, asynchronously.
IMAGE_TIMEOUT = 30


class CriTest(RuntimeTestCase, K8sTestCase):
    """A CRI client against the test's own containerd, manifold reading the API server double."""

    def start_cri(self, max_conf_num=1):
        """Starts containerd with the CRI plugin on the test's CNI configs, imports the sandbox
        image and returns once the plugin knows it; cleanup removes every sandbox through CRI."""
        self.containerd = self._stack.enter_context(Containerd(
            self.tree.path("containerd"), self.mounts, self.node.path,
            extra_config=cri.plugin_config(self.cni_conf_dir, self.cni_bin_dir, max_conf_num),
            namespaces=(cri.CRI_NAMESPACE,)))
        archive = oci_archive(self.rootfs, self.tree.path("sandbox-image.tar"), cri.SANDBOX_IMAGE,
                              SANDBOX_ENTRYPOINT)
        self.containerd.ctr("images", "import", "--snapshotter", "native", archive,
                            namespace=cri.CRI_NAMESPACE)
        self.cri = cri.CriClient(self.containerd.address, cri.compile_proto(self.tree.root))
        self._stack.callback(self.cri.close)
        self._stack.callback(self.remove_sandboxes)
        self.wait_for_sandbox_image()

    def wait_for_sandbox_image(self):
        image = self.cri.message("ImageSpec", image=cri.SANDBOX_IMAGE)
        deadline = time.monotonic() + IMAGE_TIMEOUT
        while not self.cri.call("ImageStatus", image=image).image.id:
            self.assertLess(time.monotonic(), deadline, "the CRI plugin never saw the image")
            time.sleep(0.05)

    def remove_sandboxes(self):
        """What a kubelet does for every pod it forgets: StopPodSandbox, RemovePodSandbox."""
        for sandbox in self.cri.call("ListPodSandbox").items:
            self.cri.call("StopPodSandbox", pod_sandbox_id=sandbox.id)
            self.cri.call("RemovePodSandbox", pod_sandbox_id=sandbox.id)

    def write_cni_config(self, filename, conf):
        """A network config in the plugin's conf_dir."""
        with open(os.path.join(self.cni_conf_dir, filename), "w", encoding="utf-8") as f:
            json.dump(conf, f, indent=2)

    def run_sandbox(self, port_mappings=()):
        """RunPodSandbox for the test's pod; returns (sandbox id, PodSandboxStatus, its netns)."""
        config = cri.sandbox_config(self.cri, self.pod_name, "default", self.pod_uid,
                                    "/" + self.cgroup_parent, self.tree.path("pod-logs"),
                                    configs.CLUSTER_GATEWAY)
        for container_port, host_port in port_mappings:
            config.port_mappings.append(self.cri.message(
                "PortMapping", container_port=container_port, host_port=host_port))
        sandbox_id = self.cri.call("RunPodSandbox", config=config).pod_sandbox_id
        status = self.cri.call("PodSandboxStatus", pod_sandbox_id=sandbox_id, verbose=True)
        return sandbox_id, status.status, SandboxNet(json.loads(status.info["info"])["pid"])

    def stop_and_remove(self, sandbox_id):
        """StopPodSandbox (CNI DEL) leaves nothing; RemovePodSandbox leaves no sandbox."""
        self.cri.call("StopPodSandbox", pod_sandbox_id=sandbox_id)
        self.assertRuntimeClean()
        self.cri.call("RemovePodSandbox", pod_sandbox_id=sandbox_id)
        self.assertEqual(list(self.cri.call("ListPodSandbox").items), [])
        self.assertRuntimeClean()

    def assertNetworkStatus(self, sandbox):
        """The pod's network-status lists the cluster network (eth0, default) and the NAD (net1)
        with the addresses and MACs the sandbox really has."""
        status = json.loads(self.status_annotation())
        self.assertEqual([(e["name"], e.get("interface"), e.get("default", False)) for e in status],
                         [("cluster", "eth0", True), ("default/macnad", "net1", False)])
        for entry in status:
            ifname = entry["interface"]
            self.assertEqual(entry["ips"], [a.split("/")[0] for a in sandbox.addresses(ifname)])
            self.assertEqual(entry["mac"], sandbox.mac(ifname))

    def test_pod_gets_its_nad_status_and_host_port(self):
        self.api.add_nad("default", "macnad", self.macvlan_nad_conf())
        self.add_pod(annotations={NETWORKS: "macnad"})
        self.write_cni_config("00-manifold.conf", self.k8s_conf(
            [self.cluster_list()], capabilities=MANIFOLD_CAPABILITIES))
        self.start_cri()
        sandbox_id, status, sandbox = self.run_sandbox(port_mappings=[(80, HOST_PORT)])
        self.assertEqual(sandbox.link_names(), ["eth0", "lo", "net1"], self.tree.log_tail())
        self.assertEqual(sandbox.addresses("net1"), ["198.51.100.10/24"])
        self.assertEqual([status.network.ip + "/24"], sandbox.addresses("eth0"))
        self.assertNetworkStatus(sandbox)
        self.assertServedOnHostPort(HOST_PORT)
        self.stop_and_remove(sandbox_id)

    def test_two_manifold_networks_in_one_sandbox(self):
        self.write_cni_config("10-mfa.conflist", self.manifold_list(
            "mfa", [self.cluster_list()] + self.secondaries()))
        other = self.cluster_list(bridge_name=OTHER_BRIDGE, subnet=OTHER_SUBNET,
                                  gateway=OTHER_GATEWAY, default_route=False, name="cluster-b")
        self.write_cni_config("20-mfb.conflist",
                              self.manifold_list("mfb", [other] + self.secondaries(slot=1)))
        self.start_cri(max_conf_num=2)
        sandbox_id, _, sandbox = self.run_sandbox()
        self.assertEqual(sandbox.link_names(),
                         ["eth0", "eth1", "eth1-1", "eth1-2", "lo", "net1", "net2"],
                         self.tree.log_tail())
        self.assertEqual(sandbox.addresses("net1"), ["198.51.100.10/24"])
        self.assertEqual(sandbox.addresses("eth1-2"), ["198.51.100.21/24"])
        self.stop_and_remove(sandbox_id)

    def test_manifold_killed_mid_add_is_torn_down_by_the_runtime(self):
        # manifold is SIGKILLed (by its net1 delegate, standing in for any killer) while attaching
        # [cluster, net1, host-device net2] with retryDeleteOnError. RunPodSandbox fails and the
        # CRI plugin tears the sandbox's network down (CNI DEL) before it gives up: that DEL must
        # release the cluster network's IP and net1, and skip net2, whose delegate never ran —
        # Debian's host-device fails the DEL of an interface it never moved, which would keep
        # the entry (and the pod's DEL) failing. The host device stays on the node.
        device = "mfhd%d" % (os.getpid() % 100000)
        add_veth(self.node, device, device + "p")
        self.node_baseline |= {device, device + "p"}
        os.symlink(os.path.join(FAKE_PLUGIN_DIR, "fake-record"), os.path.join(self.cni_bin_dir, "fake-record"))
        killer = self.fake_conf("fake-record", name="killer", crash="caller")
        host_device = {"cniVersion": "1.0.0", "name": "hostdev", "type": "host-device", "device": device}
        self.write_cni_config("10-mfk.conflist", self.manifold_list(
            "mfk", [self.cluster_list(), killer, host_device], retryDeleteOnError=True))
        self.start_cri()
        with self.assertRaises(grpc.RpcError) as failed:
            self.run_sandbox()
        self.assertIn("signal: killed", failed.exception.details())
        calls = [(r["command"], r["ifname"]) for r in self.tree.records()]
        self.assertEqual(calls, [("ADD", "net1"), ("DEL", "net1")], self.tree.log_tail())
        self.assertIn(device, self.node.link_names())
        self.assertEqual(list(self.cri.call("ListPodSandbox").items), [])
        self.assertRuntimeClean()


if __name__ == "__main__":
    main()
