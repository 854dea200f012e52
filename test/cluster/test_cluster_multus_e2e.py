#!/usr/bin/env python3
"""Multus's own e2e scenarios, replayed on the real node with manifold in Multus's place: static
addresses through the `ips` capability on a macvlan + tuning chain in two pods that then reach
each other over net1, a kubelet static pod whose networks annotation shows on its mirror pod,
`default-route` moving one pod's default gateway while another pod keeps the cluster's, and a
6-replica Deployment whose pods all start with their secondary network. Every test ends with the
harness's leak check (nothing of its pods left on the node).
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from node import layout  # noqa: E402
from scenario.case import SLEEPER, ClusterTestCase, main  # noqa: E402
from scenario.kube import NETWORKS  # noqa: E402


def default_routes(cluster, namespace, pod):
    """(gateway, device) of each IPv4 default route inside the pod."""
    out = cluster.exec(namespace, pod, "ip", "-4", "route", "show", "default").stdout
    return re.findall(r"^default via (\S+) dev (\S+)", out, re.M)


class StaticAddressesWithTuning(ClusterTestCase):
    """macvlan with static IPAM and the `ips` capability, chained with tuning (MTU), two pods."""

    def test_requested_addresses_tuned_and_reachable(self):
        master = self.host_veth()
        self.nad("macvlan-tuned", {"cniVersion": "1.0.0", "name": "macvlan-tuned", "plugins": [
            {"type": "macvlan", "master": master, "mode": "bridge",
             "capabilities": {"ips": True}, "ipam": {"type": "static"}},
            {"type": "tuning", "mtu": 1400}]})
        pods = {"left": "192.0.2.21/24", "right": "192.0.2.22/24"}
        for name, address in pods.items():
            self.create_pod(name, networks=[{"name": "macvlan-tuned", "ips": [address]}],
                            wait=False)
        for name, address in pods.items():
            self.cluster.wait_for("pod/" + name, "condition=Ready", self.namespace)
            self.assertEqual(self.cluster.pod_addresses(self.namespace, name, "net1"), [address])
            link = self.cluster.exec(self.namespace, name, "ip", "link", "show", "net1").stdout
            self.assertIn("mtu 1400", link)
            status = self.cluster.network_status(self.namespace, name)
            self.assertEqual(status[1]["ips"], [address.split("/")[0]])
        self.cluster.wait("left to reach right over net1", lambda: self.cluster.exec(
            self.namespace, "left", "ping", "-c", "1", "-W", "2", "192.0.2.22",
            check=False).returncode == 0, timeout=60)


class StaticPodWithAnnotation(ClusterTestCase):
    """A kubelet static pod (a manifest in the node's staticPodPath) with a networks annotation:
    its network-status shows on the mirror pod."""

    def test_mirror_pod_shows_the_secondary(self):
        master = self.host_veth()
        self.nad("macvlan", {"cniVersion": "1.0.0", "type": "macvlan", "master": master,
                             "mode": "bridge", "ipam": {"type": "static", "addresses": [
                                 {"address": "192.0.2.31/24"}]}})
        name = self.unique("static")
        manifest = self.pod_manifest(name, {NETWORKS: "macvlan"})
        path = os.path.join(self.cluster.node.layout.static_pods, name + ".json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(manifest, f)
        self.addCleanup(self._remove_static, path, name)
        mirror = "%s-%s" % (name, layout.NODE_NAME)
        self.cluster.wait("the mirror pod " + mirror, lambda: self.cluster.get(
            "pod", mirror, self.namespace, check=False), timeout=120)
        self.cluster.wait_for("pod/" + mirror, "condition=Ready", self.namespace)
        status = self.cluster.wait("network-status on the mirror pod", lambda: self.cluster.
                                   network_status(self.namespace, mirror), timeout=60)
        self.assertEqual([s["interface"] for s in status], ["eth0", "net1"], status)
        self.assertEqual(status[1]["ips"], ["192.0.2.31"])
        self.assertEqual(self.cluster.pod_addresses(self.namespace, mirror, "net1"),
                         ["192.0.2.31/24"])

    def _remove_static(self, path, name):
        """The manifest's removal stops the static pod (the kubelet DELs its sandbox)."""
        if os.path.exists(path):
            os.unlink(path)
        mirror = "%s-%s" % (name, layout.NODE_NAME)
        self.cluster.wait("the mirror pod to go", lambda: self.cluster.get(
            "pod", mirror, self.namespace, check=False) is None, timeout=120)


class DefaultRoute(ClusterTestCase):
    """default-route moves one pod's default gateway to net1; another pod keeps the cluster's."""

    def test_one_pod_moves_its_default_route(self):
        master = self.host_veth()
        self.nad("macvlan-gw", {"cniVersion": "1.0.0", "type": "macvlan", "master": master,
                                "mode": "bridge", "ipam": {"type": "host-local", "ranges": [[{
                                    "subnet": "192.0.2.0/24", "gateway": "192.0.2.1",
                                    "rangeStart": "192.0.2.40", "rangeEnd": "192.0.2.49"}]]}})
        self.create_pod("moved", networks=[{"name": "macvlan-gw", "default-route": ["192.0.2.1"]}])
        self.create_pod("kept", networks=[{"name": "macvlan-gw"}])
        self.assertEqual(default_routes(self.cluster, self.namespace, "moved"),
                         [("192.0.2.1", "net1")])
        self.assertEqual(default_routes(self.cluster, self.namespace, "kept"),
                         [(layout.POD_GATEWAY, "eth0")])


class Deployment(ClusterTestCase):
    """A 6-replica Deployment with a secondary network: every pod starts with both networks."""

    REPLICAS = 6

    def test_every_replica_has_its_networks(self):
        master = self.host_veth()
        network = "dep-" + self.namespace
        self.nad("macvlan", {"cniVersion": "1.0.0", "name": network, "type": "macvlan",
                             "master": master, "mode": "bridge", "ipam": {
                                 "type": "host-local", "ranges": [[{
                                     "subnet": "192.0.2.0/24", "rangeStart": "192.0.2.50",
                                     "rangeEnd": "192.0.2.69"}]]}})
        pod = self.pod_manifest("replica", {NETWORKS: "macvlan"})
        self.cluster.apply(json.dumps({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "replicas", "namespace": self.namespace},
            "spec": {"replicas": self.REPLICAS, "selector": {"matchLabels": {"app": "replicas"}},
                     "template": {"metadata": {"labels": {"app": "replicas"},
                                               "annotations": pod["metadata"]["annotations"]},
                                  "spec": dict(pod["spec"], containers=[dict(
                                      pod["spec"]["containers"][0], command=SLEEPER)])}}}))
        self.cluster.kubectl("rollout", "status", "deployment/replicas", "-n", self.namespace,
                             "--timeout=300s", timeout=330)
        pods = self.cluster.get("pods", namespace=self.namespace)["items"]
        self.assertEqual(len(pods), self.REPLICAS)
        addresses = set()
        for item in pods:
            status = self.cluster.network_status(self.namespace, item["metadata"]["name"])
            self.assertEqual([s["interface"] for s in status], ["eth0", "net1"], status)
            addresses.add(status[1]["ips"][0])
        self.assertEqual(len(addresses), self.REPLICAS, addresses)
        reserved = [f for f in self.view.cni_state() if f.startswith("networks/%s/" % network)]
        self.assertEqual(len(reserved), self.REPLICAS, reserved)


if __name__ == "__main__":
    main()
