#!/usr/bin/env python3
"""Hot-plug on the real node, as a user does it: `kubectl annotate --overwrite` of a running pod's
networks annotation attaches a NAD (network-status, the address inside the pod, an
AddedInterface Event) and removing it detaches it (the link gone, a RemovedInterface Event); and
with the DaemonSet's agent pod deleted while the annotation changes, the agent the DaemonSet starts
again converges the pod to it. The pod's deletion leaves nothing on the node.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from node import layout  # noqa: E402
from scenario.kube import NETWORKS  # noqa: E402
from scenario.case import ClusterTestCase, main  # noqa: E402


class HotPlug(ClusterTestCase):
    """Networks of a running pod changed with kubectl."""

    def annotate(self, pod, networks):
        value = NETWORKS + "=" + networks if networks is not None else NETWORKS + "-"
        self.cluster.kubectl("annotate", "pod", pod, "-n", self.namespace, "--overwrite", value)

    def interfaces(self, pod):
        status = self.cluster.network_status(self.namespace, pod) or []
        return [(s["name"], s["interface"]) for s in status]

    def wait_interfaces(self, pod, expected, what):
        self.cluster.wait(what, lambda: self.interfaces(pod) == expected, timeout=180)
        self.cluster.wait(what + " (links in the pod)",
                          lambda: self.cluster.pod_links(self.namespace, pod) ==
                          sorted(["lo"] + [ifname for _, ifname in expected]), timeout=60)

    def reasons(self, pod):
        return [(e["reason"], e["message"]) for e in self.cluster.events(self.namespace, pod)]

    def test_annotate_attaches_and_detaches_and_an_agent_restart_converges(self):
        master = self.host_veth()
        self.nad("blue", {"cniVersion": "1.0.0", "name": "hp-" + self.namespace, "type": "macvlan",
                          "master": master, "mode": "bridge",
                          "ipam": {"type": "host-local", "ranges": [[{
                              "subnet": "192.0.2.0/24", "rangeStart": "192.0.2.60",
                              "rangeEnd": "192.0.2.69"}]]}})
        cluster_only = [(layout.CLUSTER_NETWORK, "eth0")]
        with_blue = cluster_only + [(self.namespace + "/blue", "net1")]
        pod = self.create_pod("hotplug")
        self.assertEqual(self.interfaces(pod), cluster_only)

        self.annotate(pod, "blue")
        self.wait_interfaces(pod, with_blue, "net1 hot-plugged")
        address = self.cluster.network_status(self.namespace, pod)[1]["ips"][0]
        self.assertTrue(address.startswith("192.0.2.6"), address)
        self.assertEqual(self.cluster.pod_addresses(self.namespace, pod, "net1"), [address + "/24"])
        self.cluster.wait("the AddedInterface event of net1",
                          lambda: any(r == "AddedInterface" and "net1" in m for r, m in self.reasons(pod)))

        self.annotate(pod, None)
        self.wait_interfaces(pod, cluster_only, "net1 unplugged")
        self.cluster.wait("the RemovedInterface event of net1",
                          lambda: any(r == "RemovedInterface" and "net1" in m for r, m in self.reasons(pod)))

        # The agent's pod deleted, and the annotation changed before its successor runs: the new
        # agent lists the node's pods and applies the change it never saw as an event.
        self.cluster.kubectl("-n", "kube-system", "delete", "pod", "-l", "app=manifold", "--wait=false")
        self.annotate(pod, "blue")
        self.cluster.kubectl("-n", "kube-system", "rollout", "status", "daemonset/manifold",
                             "--timeout=180s", timeout=200)
        self.wait_interfaces(pod, with_blue, "net1 hot-plugged by the restarted agent")

        self.delete_pod(pod)
        self.assertNodeSettles(what="after the pod's deletion, the node")


if __name__ == "__main__":
    main()
