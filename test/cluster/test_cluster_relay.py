#!/usr/bin/env python3
"""The agent relay on the real node: with the DaemonSet's agent up, the CNI calls' API requests go
through it (its metrics count the exchanges it answered, none refused: the pods are this node's);
with the agent gone (the DaemonSet's nodeSelector matching no node), its socket is removed, a new
pod still gets all its networks (the calls go to the API server directly) and a pod added through
the relay is deleted cleanly. The DaemonSet is restored, whatever happens, and the new agent relays
the next pod's ADD.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from scenario.case import ClusterTestCase, main  # noqa: E402

METRICS = "http://127.0.0.1:9155/metrics"  # the agent's --metrics-address (hostNetwork)
ANSWERED = 'manifold_agent_relay_exchanges_total{result="answered"}'
REFUSED = 'manifold_agent_relay_exchanges_total{result="refused"}'
ABSENT = {"spec": {"template": {"spec": {"nodeSelector": {"manifold.test/no-such-node": "true"}}}}}
PRESENT = {"spec": {"template": {"spec": {"nodeSelector": {"manifold.test/no-such-node": None}}}}}


class Relay(ClusterTestCase):
    """CNI calls through the agent, and without it."""

    def relay_counts(self):
        """(answered, refused) of the agent's relay, from its /metrics inside the node."""
        out = self.cluster.node.run(["busybox", "wget", "-q", "-O", "-", METRICS], mount=False).stdout
        values = dict(re.findall(r"^(\S+) (\S+)$", out, re.M))
        return int(float(values[ANSWERED])), int(float(values[REFUSED]))

    def socket(self):
        return self.cluster.node.layout.inside("/run/manifold/agent.sock")

    def set_agent(self, present):
        self.cluster.kubectl("-n", "kube-system", "patch", "daemonset", "manifold", "--type=merge",
                             "-p", json.dumps(PRESENT if present else ABSENT))
        self.cluster.kubectl("-n", "kube-system", "rollout", "status", "daemonset/manifold",
                             "--timeout=180s", timeout=200)
        self.cluster.wait("the agent's pods to be %s" % ("running" if present else "gone"),
                          lambda: self.agent_pods() == (1 if present else 0))

    def agent_pods(self):
        pods = self.cluster.get("pods", namespace="kube-system")["items"]
        return len([p for p in pods if p["metadata"].get("labels", {}).get("app") == "manifold"
                    and p.get("status", {}).get("phase") == "Running"])

    def test_through_the_agent_then_directly(self):
        master = self.host_veth()
        self.nad("macvlan", {"cniVersion": "1.0.0", "name": "relay-" + self.namespace, "type": "macvlan",
                             "master": master, "mode": "bridge",
                             "ipam": {"type": "host-local", "ranges": [[{
                                 "subnet": "192.0.2.0/24", "rangeStart": "192.0.2.50",
                                 "rangeEnd": "192.0.2.59"}]]}})
        answered, refused = self.relay_counts()
        self.create_pod("relayed", networks="macvlan")
        # The ADD's pod GET, NAD GET and status PUT with its events: three exchanges at least.
        self.cluster.wait("the relay to count the ADD's exchanges",
                          lambda: self.relay_counts()[0] >= answered + 3)
        self.assertEqual(self.relay_counts()[1], refused)

        self.addCleanup(self.set_agent, True)
        self.set_agent(False)
        self.cluster.wait("the stopped agent to remove its socket", lambda: not os.path.exists(self.socket()))
        self.create_pod("direct", networks="macvlan")
        status = self.cluster.network_status(self.namespace, "direct")
        self.assertEqual([s["interface"] for s in status], ["eth0", "net1"])
        self.delete_pod("relayed")  # its DEL with no agent on the node

        self.set_agent(True)
        self.cluster.wait("the new agent's socket", lambda: os.path.exists(self.socket()))
        answered, _ = self.relay_counts()
        self.create_pod("again", networks="macvlan")
        self.cluster.wait("the new agent to relay the ADD", lambda: self.relay_counts()[0] >= answered + 3)
        for pod in ("direct", "again"):
            self.delete_pod(pod)
        self.assertNodeSettles(what="after the pods' deletion, the node")


if __name__ == "__main__":
    main()
