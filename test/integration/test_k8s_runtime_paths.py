#!/usr/bin/env python3
"""Kubernetes paths no earlier test walked: events for pods of systemNamespaces (AddedInterface,
no status), the NoNetworkFound warning event for a missing NAD, `"default-route": []` leaving the
pod without a default route (namespace, result and network-status agree), the static-pod exemption
only for a source other than "api", and GC and STATUS with a cluster network given as a NAD name
(resolved through the API; an unreachable API alone does not make STATUS fail).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import main  # noqa: E402
from k8s_case import NETWORKS, K8sTestCase  # noqa: E402


class K8sRuntimePathsTest(K8sTestCase):
    """Events, default-route [], static pods, GC/STATUS with a NAD-named cluster network."""

    def test_pods_of_system_namespaces_get_events_but_no_status(self):
        self.api.add_nad("infra", "pool", self.hostlocal_nad_conf())
        self.add_pod({NETWORKS: "pool"}, ns="infra")
        self.write_k8s(systemNamespaces=["infra"])
        self.assertOk(self.add(ns="infra"))
        self.assertIsNone(self.status_annotation(ns="infra"))
        self.assertEqual([(m, p.rsplit("/", 1)[-1]) for m, p in
                          [(e["method"], e["path"]) for e in self.requests()] if m != "GET"],
                         [("POST", "events"), ("POST", "events")])
        reasons = sorted((ev["reason"], ev["type"], ev["message"].split(" [")[0]) for ev in self.api.events())
        self.assertEqual(reasons, [("AddedInterface", "Normal", "Add eth0"), ("AddedInterface", "Normal", "Add net1")])
        self.assertOk(self.delete(ns="infra"))
        self.assertNothingLeft()

    def test_a_missing_nad_is_told_to_the_pod_as_a_warning_event(self):
        self.add_pod({NETWORKS: "nowhere"})
        self.write_k8s()
        add = self.add()
        self.assertCniError(add, 104)
        events = self.api.events()
        self.assertEqual([(ev["reason"], ev["type"]) for ev in events], [("NoNetworkFound", "Warning")])
        self.assertIn("cannot find a network-attachment-definition (nowhere) in namespace (default)",
                      events[0]["message"])
        self.assertEqual(events[0]["involvedObject"]["name"], self.pod_name)
        self.assertNothingLeft()

    def test_an_empty_default_route_leaves_the_pod_without_one(self):
        self.api.add_nad("default", "pool", self.hostlocal_nad_conf())
        self.add_pod({NETWORKS: json.dumps([{"name": "pool", "default-route": []}])})
        self.write_k8s()
        add = self.add()
        self.assertOk(add)
        self.assertEqual(self.pod.default_routes(4), [])
        self.assertEqual(self.pod.default_routes(6), [])
        self.assertEqual([r for r in add.result.get("routes", []) if r["dst"] in ("0.0.0.0/0", "::/0")], [])
        status = json.loads(self.status_annotation())
        self.assertEqual([e.get("gateway") for e in status], [None, None])
        self.assertOk(self.check())
        # A default route that comes back is a difference CHECK reports.
        self.pod.ip("route", "add", "default", "via", "192.0.2.1", "dev", "eth0")
        self.assertCniError(self.check(), 107)
        self.assertOk(self.delete())
        self.assertNothingLeft()

    def test_only_sources_other_than_api_are_static_pods(self):
        self.api.add_nad("default", "pool", self.hostlocal_nad_conf())
        self.add_pod({NETWORKS: "pool", "kubernetes.io/config.source": "api"}, uid="uid-of-another-pod")
        self.write_k8s()
        add = self.add()
        self.assertCniError(add, 103)
        self.assertErrorMentions(add, "uid-of-another-pod")
        self.assertNothingLeft()

    def cluster_nad(self):
        """A 1.1.0 cluster network NAD in kube-system: a recording fake that answers STATUS and GC."""
        self.api.add_nad("kube-system", "cluster-net", self.fake_conf("fake-record", "1.1.0", name="cluster-net"))
        return self.write_k8s(version="1.1.0", clusterNetwork="cluster-net")

    def test_status_and_gc_resolve_a_nad_named_cluster_network(self):
        self.cluster_nad()
        self.assertOk(self.driver("status", ""))
        self.assertOk(self.driver("gc", "", valid_attachments=[]))
        self.assertEqual([r["command"] for r in self.tree.records()], ["STATUS", "GC"])
        self.assertEqual([(e["method"], e["path"]) for e in self.requests()],
                         [("GET", "/apis/k8s.cni.cncf.io/v1/namespaces/kube-system/network-attachment-definitions/"
                                  "cluster-net")] * 2)

    def test_status_with_an_unreachable_api_reports_ready(self):
        self.cluster_nad()
        self.forwarder.stop()
        self.assertOk(self.driver("status", ""))
        self.assertIn("reporting ready without asking its delegate", self.tree.log_tail(10**6))
        gc = self.driver("gc", "", valid_attachments=[])
        self.assertCniError(gc, 103)  # GC is retried by the runtime; its cache part needs no API
        self.assertEqual(self.tree.records(), [])


if __name__ == "__main__":
    main()
