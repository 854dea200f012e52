#!/usr/bin/env python3
"""The agent's DaemonSet rolled out under pod churn, with a macvlan NAD:

- `kubectl rollout restart daemonset/manifold`, and pods created one after another while it rolls
  out (the old agent stopping, none running, the new one starting): every one starts with all its
  networks (network-status and net1 in the pod), never the cluster network alone;
- a rollout that stalls (an image the node cannot pull: the old agent is gone, the new one never
  runs), so the agent is down for sure: the pods created during the rollout are deleted (their CNI
  DEL, with no agent on the node, lets the kubelet finish); a new pod's ADD is refused (the token
  the agent installed was bound to its deleted pod: the API server rejects it), so the kubelet
  retries its sandbox and it never runs with the cluster network alone;
- the image set back, the new agent installs its token and the waiting pod starts with all its
  networks;
and nothing is left on the node once the pods are gone.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from node import layout  # noqa: E402
from scenario.case import ClusterTestCase, main  # noqa: E402

DAEMONSET = "daemonset/manifold"
MISSING_IMAGE = "localhost/manifold:no-such-tag"  # never imported: the node cannot pull it
MIN_PODS, MAX_PODS = 3, 8
CNI_KUBECONFIG = "/etc/cni/net.d/manifold.d/manifold.kubeconfig"  # written by the agent


class AgentRollout(ClusterTestCase):
    """Pods started and deleted while the agent rolls out."""

    def ds(self, *args, timeout=60):
        return self.cluster.kubectl("-n", "kube-system", *args, timeout=timeout)

    def rolled_out(self):
        proc = self.cluster.kubectl("-n", "kube-system", "rollout", "status", DAEMONSET,
                                    "--watch=false", check=False)
        return proc.returncode == 0 and "successfully rolled out" in proc.stdout

    def running_agents(self):
        pods = self.cluster.get("pods", namespace="kube-system")["items"]
        return [p["metadata"]["name"] for p in pods
                if p["metadata"].get("labels", {}).get("app") == "manifold"
                and p.get("status", {}).get("phase") == "Running"
                and not p["metadata"].get("deletionTimestamp")]

    def installed_token_refused(self):
        """Whether the API server answers 401 to the credentials the CNI binary uses (the
        kubeconfig and token the agent installed), asked with kubectl inside the node."""
        proc = self.cluster.node.run([os.path.join(self.cluster.node.bins, "kubectl"),
                                      "--kubeconfig", CNI_KUBECONFIG, "auth", "whoami"],
                                     check=False)
        return proc.returncode != 0 and "Unauthorized" in proc.stderr

    def failed_sandboxes(self, pod):
        """The kubelet's FailedCreatePodSandBox events of the pod."""
        return [e for e in self.cluster.events(self.namespace, pod)
                if e["reason"] == "FailedCreatePodSandBox"]

    def assert_all_networks(self, pod):
        status = self.cluster.network_status(self.namespace, pod) or []
        self.assertEqual([(s["name"], s["interface"]) for s in status],
                         [(layout.CLUSTER_NETWORK, "eth0"), (self.namespace + "/macvlan", "net1")],
                         "pod %s" % pod)
        self.assertEqual(self.cluster.pod_links(self.namespace, pod), ["eth0", "lo", "net1"])

    def test_pods_during_a_rollout_get_every_network_and_del_works_without_the_agent(self):
        master = self.host_veth()
        self.nad("macvlan", {"cniVersion": "1.0.0", "name": "ro-" + self.namespace, "type": "macvlan",
                             "master": master, "mode": "bridge",
                             "ipam": {"type": "host-local", "ranges": [[{
                                 "subnet": "192.0.2.0/24", "rangeStart": "192.0.2.100",
                                 "rangeEnd": "192.0.2.119"}]]}})
        old_agents = self.running_agents()
        self.assertEqual(len(old_agents), 1, old_agents)

        self.ds("rollout", "restart", DAEMONSET)
        churn = []
        while len(churn) < MAX_PODS and (len(churn) < MIN_PODS or not self.rolled_out()):
            churn.append(self.create_pod("churn%d" % len(churn), networks="macvlan", wait=False))
        self.ds("rollout", "status", DAEMONSET, "--timeout=120s", timeout=150)
        new_agents = self.running_agents()
        self.assertEqual(len(new_agents), 1, new_agents)
        self.assertNotEqual(new_agents, old_agents)
        for pod in churn:
            self.cluster.wait_for("pod/" + pod, "condition=Ready", self.namespace, timeout=120)
            self.assert_all_networks(pod)

        # A stalled rollout: the old agent stopped, the new one cannot start.
        image = self.cluster.get("daemonset", "manifold", "kube-system")[
            "spec"]["template"]["spec"]["containers"][0]["image"]
        self.addCleanup(self.ds, "rollout", "status", DAEMONSET, "--timeout=120s", timeout=150)
        self.addCleanup(self.ds, "set", "image", DAEMONSET, "agent=" + image)
        self.ds("set", "image", DAEMONSET, "agent=" + MISSING_IMAGE)
        # The token the old agent installed is accepted until the API server has removed its pod
        # object (and its cache of recent authentications has expired): wait until it is refused.
        self.cluster.wait("the old agent's pod to be gone", lambda: all(
            self.cluster.get("pod", name, "kube-system", check=False) is None
            for name in new_agents), timeout=90)
        self.cluster.wait("the API server to refuse the token the old agent installed",
                          self.installed_token_refused, timeout=60, interval=1)
        socket = self.cluster.node.layout.inside("/run/manifold/agent.sock")
        self.cluster.wait("the agent's socket to go", lambda: not os.path.exists(socket))
        self.cluster.kubectl("delete", "pod", *churn, "-n", self.namespace, "--wait=true",
                             "--timeout=120s", timeout=150)
        # The token the agent installed for the CNI binary was bound to its pod, which is gone:
        # the API server refuses it, so the ADD fails and the kubelet retries the sandbox. The pod
        # never runs with the cluster network alone.
        direct = self.create_pod("direct", networks="macvlan", wait=False)
        self.cluster.wait("the sandbox of %s to fail while the agent is gone" % direct,
                          lambda: self.failed_sandboxes(direct), timeout=90)
        self.assertIsNone(self.cluster.network_status(self.namespace, direct))
        self.assertEqual(self.running_agents(), [], "the agent must still be down")

        self.ds("set", "image", DAEMONSET, "agent=" + image)
        self.ds("rollout", "status", DAEMONSET, "--timeout=120s", timeout=150)
        self.cluster.wait("the new agent's socket", lambda: os.path.exists(socket))
        self.cluster.wait_for("pod/" + direct, "condition=Ready", self.namespace, timeout=120)
        self.assert_all_networks(direct)
        self.delete_pod(direct)
        self.assertNodeSettles(what="after the pods' deletion, the node")


if __name__ == "__main__":
    main()
