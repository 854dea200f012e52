#!/usr/bin/env python3
"""The node restarted without a reboot (the kubelet and containerd stopped and started again, the
node's /run, /var/lib and pinned network namespaces kept), with a pod holding a macvlan NAD:

- its services alone restarted (the pods' processes and containerd's shims live on): the pod keeps
  its sandbox, nothing of it is added or deleted (the node's links, files under /var/lib/cni, pod
  namespaces and rules unchanged);
- its services and every pod's process stopped, as a shutdown of the node's services does: the
  kubelet recreates the sandbox with all its networks (network-status, net1's address in the pod),
  the dead sandbox's CNI DEL releases everything it held (its manifold cache entry, host-local
  reservations, links and pinned namespace), so the node holds exactly one sandbox's worth again;
and the pod's deletion leaves nothing on the node.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from node import layout  # noqa: E402
from scenario.case import ClusterTestCase, main  # noqa: E402


def sandboxes(view):
    """The container IDs manifold's cache holds entries for (one per live pod sandbox): its
    directories manifold/<id>/ (beside them, manifold/<id>.lock)."""
    return sorted({parts[1] for parts in (path.split("/") for path in view.cni_state())
                   if parts[0] == "manifold" and len(parts) > 2})


def shape(state):
    """How many of each thing the node holds (names change with a new sandbox, counts must not)."""
    return {key: len(value) for key, value in state.items()}


class NodeRestart(ClusterTestCase):
    """kubelet and containerd restarted under a running pod."""

    def interfaces(self, pod):
        return [(s["name"], s["interface"], s["ips"])
                for s in self.cluster.network_status(self.namespace, pod) or []]

    def restarts(self, pod):
        statuses = self.cluster.get("pod", pod, self.namespace)["status"].get("containerStatuses", [])
        return statuses[0].get("restartCount", 0) if statuses else 0

    def replaced(self, old):
        """True once manifold's cache holds one sandbox, another than old."""
        now = sandboxes(self.view)
        return len(now) == 1 and now != old

    def wait_kubelet_serves(self, pod):
        """Until kubectl exec reaches the pod again (the kubelet's server and containerd are up)."""
        self.cluster.wait("the restarted kubelet to serve exec", lambda: self.cluster.exec(
            self.namespace, pod, "true", check=False).returncode == 0, timeout=120, interval=1)

    def test_services_restart_keeps_the_sandbox_and_a_stop_recreates_it(self):
        master = self.host_veth()
        self.nad("macvlan", {"cniVersion": "1.0.0", "name": "rs-" + self.namespace, "type": "macvlan",
                             "master": master, "mode": "bridge",
                             "ipam": {"type": "host-local", "ranges": [[{
                                 "subnet": "192.0.2.0/24", "rangeStart": "192.0.2.80",
                                 "rangeEnd": "192.0.2.89"}]]}})
        pod = self.create_pod("restarted", networks="macvlan")
        running = self.view.state()
        first = sandboxes(self.view)
        self.assertEqual(len(first), 1, first)
        attached = self.interfaces(pod)
        self.assertEqual([(n, i) for n, i, _ in attached],
                         [(layout.CLUSTER_NETWORK, "eth0"), (self.namespace + "/macvlan", "net1")])

        # The services alone: the sandbox lives on and no CNI call changes anything.
        self.cluster.node.restart_runtime(stop_pods=False)
        self.wait_kubelet_serves(pod)
        self.assertEqual(self.view.state(), running)
        self.assertEqual(self.restarts(pod), 0)
        self.assertEqual(self.interfaces(pod), attached)

        # The services and the pods' processes: a new sandbox, with every network.
        self.cluster.node.restart_runtime(stop_pods=True)
        self.cluster.wait("a new sandbox, the old one's cache entries gone",
                          lambda: self.replaced(first), timeout=120, interval=1)
        recreated = sandboxes(self.view)
        self.cluster.wait_for("pod/" + pod, "condition=Ready", self.namespace, timeout=120)
        self.assertGreaterEqual(self.restarts(pod), 1)
        status = self.cluster.network_status(self.namespace, pod)
        self.assertEqual([(s["name"], s["interface"]) for s in status],
                         [(n, i) for n, i, _ in attached])
        self.assertEqual(self.cluster.pod_links(self.namespace, pod), ["eth0", "lo", "net1"])
        self.assertEqual(self.cluster.pod_addresses(self.namespace, pod, "net1"),
                         [status[1]["ips"][0] + "/24"])
        self.assertNotIn(first[0], " ".join(self.view.cni_state()))
        # One sandbox's worth of links, reservations, cache entries, namespaces and rules.
        self.cluster.wait("the node to hold one sandbox's worth again",
                          lambda: shape(self.view.state()) == shape(running), timeout=60)
        self.assertEqual(sandboxes(self.view), recreated)

        self.cluster.kubectl("-n", "kube-system", "rollout", "status", "daemonset/manifold",
                             "--timeout=120s", timeout=150)
        self.delete_pod(pod)
        self.assertNodeSettles(what="after the pod's deletion, the node")


if __name__ == "__main__":
    main()
