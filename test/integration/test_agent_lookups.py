#!/usr/bin/env python3
"""The node agent's lookups from memory, end to end: `manifold agent` keeps its node's pods (from
its watch) and the NADs of their namespaces (LISTed when a pod shows up on the node), and its relay
answers a CNI call's pod GET and NAD GETs from them. Proven from the API server double's request
log: an ADD through the agent makes no GET upstream, only the status PUT and the events. And each
freshness rule that must send a lookup upstream does: a call for a pod UID the agent does not have
(a stale ADD of a pod recreated under its name) is fetched, a NAD changed just before a pod starts
is the one the pod gets, a pod whose NADs were already served once (a repeated ADD) reads them
upstream, a status write that conflicts re-reads the newer pod (not the copy the refused write was
built from), and with the pod watch down every lookup goes upstream. The counts are on /metrics.
"""
import ipaddress
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from agent_case import AgentTestCase  # noqa: E402
from harness import main  # noqa: E402

LOOKUPS = 'manifold_agent_lookups_total{object="%s",reason="%s",result="%s"}'
NAD_LISTS = 'manifold_agent_nad_lists_total{result="ok"}'
TRACKED = "manifold_agent_pods_tracked"
OLD_SUBNET = "198.51.100.0/24"
NEW_SUBNET = "203.0.113.0/24"


class LookupsTest(AgentTestCase):
    """ADDs whose pod and NADs the agent answers from memory, or, when it may not, fetches."""

    def setUp(self):
        super().setUp()
        self.set_blue(OLD_SUBNET)
        self.cert_kubeconfig = self.api.write_kubeconfig(self.tree.path("agent.kubeconfig"), auth="cert")
        self.write_k8s(agentSocket=self.relay_socket)

    def set_blue(self, subnet):
        start = str(ipaddress.ip_network(subnet)[100])
        self.api.add_nad("default", "blue", self.hostlocal_nad_conf(subnet=subnet, start=start))

    def cni_gets(self):
        """The GETs of the test pod's CNI calls that reached the API server."""
        return [e["path"] for e in self.requests(method="GET")
                if e["path"].startswith("/api/v1/namespaces/default/pods/")
                or "network-attachment-definitions/" in e["path"]]

    def lookups(self, obj, reason, result="forwarded"):
        return self.metrics().get(LOOKUPS % (obj, reason, result), 0)

    def add_node_pod(self, networks=None, **kw):
        # The double serves the whole class: each test's pods go with it, so the agent sees only its own.
        self.addCleanup(self.api.delete_pod, "default", self.pod_name)
        return super().add_node_pod(networks, **kw)

    def start_watching(self, pods=1):
        self.start_agent(kubeconfig=self.cert_kubeconfig)
        self.wait_for(lambda: self.metrics().get(TRACKED) == pods, "the agent's pod watch to show the pod")

    def net1_address(self):
        status = [e for e in self.status() if e.get("interface") == "net1"]
        self.assertEqual(len(status), 1, self.status())
        return ipaddress.ip_address(status[0]["ips"][0])

    def test_an_add_through_the_agent_reads_nothing_upstream(self):
        self.add_node_pod("blue")
        self.start_watching()
        self.api.clear_requests()
        self.assertOk(self.add())
        self.assertEqual(self.status_interfaces(), {"eth0": "cluster", "net1": "default/blue"})
        self.assertEqual(self.cni_gets(), [], "the ADD read from the API server")
        writes = [(e["method"], e["auth"]) for e in self.requests() if e["method"] in ("PUT", "POST")]
        self.assertIn(("PUT", "cert"), writes)  # the status PUT still goes up, through the agent
        self.assertEqual(self.lookups("pod", "cached", "hit") + self.lookups("pod", "waited", "hit"), 1)
        self.assertEqual(self.lookups("nad", "cached", "hit") + self.lookups("nad", "waited", "hit"), 1)
        self.assertGreaterEqual(self.metrics()[NAD_LISTS], 1)
        # A repeated ADD of the pod (its sandbox recreated) reads its NADs upstream: a copy is
        # served once per pod, so no answer outlives the LIST made for it.
        self.assertOk(self.delete())
        self.api.clear_requests()
        self.assertOk(self.add())
        self.assertEqual(len([p for p in self.cni_gets() if p.endswith("/blue")]), 1)
        self.assertEqual(self.lookups("nad", "served-before"), 1)
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_a_nad_changed_just_before_a_recreated_pod_starts_is_seen(self):
        self.add_node_pod("blue")
        self.start_watching()
        self.assertOk(self.add())
        self.assertIn(self.net1_address(), ipaddress.ip_network(OLD_SUBNET))
        self.assertOk(self.delete())
        # The pod is deleted and created again under its name; its NAD changed just before.
        self.api.delete_pod("default", self.pod_name)
        self.set_blue(NEW_SUBNET)
        self.pod_uid = self.pod_uid + "-again"
        self.add_node_pod("blue")
        self.api.clear_requests()
        self.assertOk(self.add())
        self.assertIn(self.net1_address(), ipaddress.ip_network(NEW_SUBNET))
        self.assertEqual(self.cni_gets(), [], "the recreated pod's ADD read from the API server")
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_a_status_write_that_conflicts_rereads_the_newer_pod_from_memory(self):
        self.add_node_pod("blue")
        self.start_watching()
        self.api.conflict_next()  # a concurrent writer changes the pod just before the status PUT
        self.api.clear_requests()
        self.assertOk(self.add())
        self.assertEqual(self.status_interfaces(), {"eth0": "cluster", "net1": "default/blue"})
        puts = [e for e in self.requests(method="PUT") if e["path"].endswith("/status")]
        self.assertGreaterEqual(len(puts), 2, "no conflict happened")
        # The re-read after the 409 is not the copy the refused PUT was built from: the agent waits
        # for its watch to deliver the newer pod.
        self.assertEqual(self.cni_gets(), [])
        hits = self.lookups("pod", "cached", "hit") + self.lookups("pod", "waited", "hit")
        self.assertEqual(hits, 2)
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_a_call_for_a_uid_the_agent_does_not_have_is_fetched(self):
        self.add_node_pod("blue")
        self.start_watching()
        self.api.clear_requests()
        # A stale ADD: the kubelet's call for a pod that the API server now has under another UID.
        run = self.add(uid="uid-of-a-deleted-pod")
        self.assertNotEqual(run.rc, 0)
        self.assertIn("expected pod UID", run.stdout + run.stderr)
        gets = self.requests(method="GET", path="/api/v1/namespaces/default/pods/")
        self.assertEqual([e["auth"] for e in gets], ["cert"])  # fetched, through the agent
        self.assertEqual(self.lookups("pod", "uid-mismatch"), 1)

    def test_with_the_pod_watch_down_every_lookup_goes_upstream(self):
        self.add_node_pod("blue")
        self.start_watching()
        self.api.add_fault(path="^/api/v1/pods$", action="status", status=500, watch=True)
        self.api.add_fault(path="^/api/v1/pods$", action="watch_error", status=500)
        self.wait_for(lambda: self.metrics().get('manifold_agent_watch_restarts_total{reason="error"}', 0) >= 1,
                      "the agent to see its watch fail")
        self.api.clear_requests()
        self.assertOk(self.add())
        self.assertEqual(len(self.cni_gets()), 2, self.cni_gets())  # the pod and blue
        self.assertEqual(self.lookups("pod", "watch-down"), 1)
        self.api.clear_faults()
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)


if __name__ == "__main__":
    main()
