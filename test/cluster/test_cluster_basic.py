#!/usr/bin/env python3
"""The whole loop on the real node: manifold installed by its DaemonSet wraps the node's bridge
network, a pod without annotation gets eth0 through it, and a macvlan NetworkAttachmentDefinition
selected by the networks annotation becomes net1 (network-status, the address inside the pod, the
AddedInterface Event), and the pod's deletion leaves nothing on the node.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from node import layout  # noqa: E402
from node.up import generated_config  # noqa: E402
from scenario.case import ClusterTestCase, main  # noqa: E402


class ManifoldInstalled(ClusterTestCase):
    """What the DaemonSet's agent did on the node."""

    def test_agent_wraps_the_cluster_network(self):
        path = generated_config(self.cluster.node.layout)
        self.assertIsNotNone(path, "no 00-manifold.conf(list) in the node's /etc/cni/net.d")
        with open(path, encoding="utf-8") as f:
            conf = json.load(f)
        plugin = conf["plugins"][0] if path.endswith(".conflist") else conf
        self.assertEqual(plugin["type"], "manifold")
        self.assertEqual(len(plugin["delegates"]), 1, plugin)
        delegate = plugin["delegates"][0]
        self.assertEqual(delegate["name"], layout.CLUSTER_NETWORK)
        self.assertEqual([p["type"] for p in delegate["plugins"]], ["bridge", "portmap"])
        binary = self.cluster.node.layout.inside("/opt/cni/bin/manifold")
        self.assertTrue(os.access(binary, os.X_OK), binary)
        ds = self.cluster.get("daemonset", "manifold", "kube-system")
        self.assertEqual(ds["status"]["numberReady"], 1, ds["status"])


class PodWithoutAnnotation(ClusterTestCase):
    """Multus's first e2e case: a pod with no annotation gets the cluster network only."""

    def test_eth0_from_the_bridge_and_one_default_status_entry(self):
        pod = self.create_pod("plain")
        status = self.cluster.network_status(self.namespace, pod)
        self.assertIsNotNone(status, "no network-status annotation")
        self.assertEqual(len(status), 1, status)
        entry = status[0]
        self.assertEqual(entry["name"], layout.CLUSTER_NETWORK)
        self.assertEqual(entry["interface"], "eth0")
        self.assertIs(entry["default"], True)
        self.assertEqual(entry["gateway"], [layout.POD_GATEWAY])
        pod_ip = self.cluster.get("pod", pod, self.namespace)["status"]["podIP"]
        self.assertEqual(entry["ips"], [pod_ip])
        self.assertTrue(pod_ip.startswith(layout.POD_SUBNET.rsplit(".", 1)[0] + "."), pod_ip)
        self.assertEqual(self.cluster.pod_addresses(self.namespace, pod, "eth0"),
                         [pod_ip + "/24"])
        self.assertEqual(self.cluster.pod_links(self.namespace, pod), ["eth0", "lo"])
        reasons = [e["reason"] for e in self.cluster.events(self.namespace, pod)]
        self.assertIn("AddedInterface", reasons)
        self.delete_pod(pod)
        self.assertNodeSettles(what="after the pod's deletion, the node")


class MacvlanAttachment(ClusterTestCase):
    """A macvlan NAD on a host veth, selected through the networks annotation."""

    SUBNET = "192.0.2.0/24"

    def test_net1_attached_reported_and_released(self):
        master = self.host_veth()
        network = "mv-" + self.namespace
        self.nad("macvlan", {"cniVersion": "1.0.0", "name": network, "type": "macvlan",
                             "master": master, "mode": "bridge",
                             "ipam": {"type": "host-local", "ranges": [[{
                                 "subnet": self.SUBNET, "rangeStart": "192.0.2.10",
                                 "rangeEnd": "192.0.2.19"}]]}})
        before = self.view.state()
        pod = self.create_pod("secondary", networks="macvlan")
        status = self.cluster.network_status(self.namespace, pod)
        self.assertEqual([(s["name"], s["interface"]) for s in status],
                         [(layout.CLUSTER_NETWORK, "eth0"), (self.namespace + "/macvlan", "net1")])
        self.assertNotIn("default", status[1])
        self.assertEqual(len(status[1]["ips"]), 1, status[1])
        address = status[1]["ips"][0]
        self.assertTrue(address.startswith("192.0.2.1"), address)
        self.assertEqual(self.cluster.pod_addresses(self.namespace, pod, "net1"),
                         [address + "/24"])
        self.assertEqual(self.cluster.pod_links(self.namespace, pod), ["eth0", "lo", "net1"])
        messages = [e["message"] for e in self.cluster.events(self.namespace, pod)
                    if e["reason"] == "AddedInterface"]
        self.assertIn("Add net1 [%s/24] from %s/macvlan" % (address, self.namespace), messages)
        self.assertIn("networks/%s/%s" % (network, address), self.view.cni_state())
        cache = [f for f in self.view.cni_state() if f.startswith("manifold/")]
        self.assertTrue(cache, "manifold cached nothing for the pod")
        self.delete_pod(pod)
        self.assertNodeSettles(before, "after the pod's deletion, the node")


if __name__ == "__main__":
    main()
