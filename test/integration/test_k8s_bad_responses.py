#!/usr/bin/env python3
"""Hostile or broken API answers, end to end: a truncated JSON body, wrongly typed fields, a 2 MiB
annotation, a NAD whose spec.config is not JSON, garbage instead of JSON, dropped connections and a
slow server. Each gives a clear CNI error (never a crash or a hang) and leaves nothing behind.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import main  # noqa: E402
from k8s_case import NETWORKS, K8sTestCase  # noqa: E402

POD_GET = r"^/api/v1/namespaces/default/pods/[^/]+$"
NAD_GET = r"/network-attachment-definitions/"
SMALL_TIMEOUTS = {"request": 1000, "call": 2500, "total": 6000, "attempts": 3}


class K8sBadResponsesTest(K8sTestCase):
    """Every broken answer is a clear CNI error, and the ADD leaves nothing behind."""

    def setUp(self):
        super().setUp()
        self.api.add_nad("default", "pool", self.hostlocal_nad_conf())
        self.api.add_nad("default", "mac-a", self.macvlan_nad_conf())

    def add_fails_cleanly(self, code, *words):
        """ADD fails with `code`, mentioning words, leaving nothing; manifold did not crash."""
        add = self.add()
        self.assertCniError(add, code)
        self.assertErrorMentions(add, *words)
        self.assertNotIn("Sanitizer", add.stderr)
        self.assertNothingLeft()
        return add

    def test_truncated_pod(self):
        self.add_pod({NETWORKS: "pool"})
        self.write_k8s()
        self.api.add_fault(path=POD_GET, method="GET", action="truncate")
        self.add_fails_cleanly(6, "not valid JSON", self.pod_name)

    def test_truncated_nad(self):
        self.add_pod({NETWORKS: "mac-a, pool"})
        self.write_k8s()
        self.api.add_fault(path=NAD_GET + "pool$", method="GET", action="truncate")
        self.add_fails_cleanly(6, "not valid JSON", "pool")

    def test_annotations_as_a_list(self):
        self.add_pod({NETWORKS: "pool"})
        self.write_k8s()
        self.api.add_fault(path=POD_GET, method="GET", action="wrong_type")
        self.add_fails_cleanly(6, "annotations", self.pod_name)
        self.assertEqual(self.requests(method="PUT"), [], "a broken pod must not be written back")

    def test_networks_annotation_of_the_wrong_type(self):
        self.add_pod({NETWORKS: "pool"})
        self.write_k8s()
        self.api.add_fault(path=POD_GET, method="GET", action="wrong_type",
                           set={"metadata.annotations": {NETWORKS: ["pool"]}})
        self.add_fails_cleanly(6, NETWORKS, self.pod_name)

    def test_uid_of_the_wrong_type(self):
        self.add_pod({NETWORKS: "pool"})
        self.write_k8s()
        self.api.add_fault(path=POD_GET, method="GET", action="wrong_type",
                           set={"metadata.uid": 12345})
        self.add_fails_cleanly(6, "uid", self.pod_name)

    def test_metadata_of_the_wrong_type(self):
        self.add_pod({NETWORKS: "pool"})
        self.write_k8s()
        self.api.add_fault(path=POD_GET, method="GET", action="wrong_type",
                           set={"metadata": "not an object"})
        self.add_fails_cleanly(6, "metadata", self.pod_name)

    def test_nad_spec_of_the_wrong_type(self):
        self.add_pod({NETWORKS: "mac-a, pool"})
        self.write_k8s()
        self.api.add_fault(path=NAD_GET + "pool$", method="GET", action="wrong_type",
                           set={"spec": ["config"]})
        self.add_fails_cleanly(7, "default/pool")

    def test_nad_config_of_the_wrong_type(self):
        self.api.add_nad("default", "numeric", None, raw_spec={"config": 42})
        self.add_pod({NETWORKS: "numeric"})
        self.write_k8s()
        self.add_fails_cleanly(7, "default/numeric")

    def test_two_mib_annotation(self):
        huge = ",".join(["pool"] * (2 * 1024 * 1024 // 5))
        self.assertGreater(len(huge), 2 * 1024 * 1024 - 10)
        self.add_pod({NETWORKS: huge})
        self.write_k8s()
        self.add_fails_cleanly(7, NETWORKS, "bytes")
        self.assertEqual(len(self.requests()), 1, "nothing fetched after the pod")

    def test_two_mib_answer_of_garbage(self):
        self.add_pod({NETWORKS: "pool"})
        self.write_k8s()
        self.api.add_fault(path=POD_GET, method="GET", action="raw", status=200,
                           body="{" + " " * (2 * 1024 * 1024))
        self.add_fails_cleanly(6, "not valid JSON")

    def test_nad_config_that_is_not_json(self):
        self.api.add_nad("default", "broken", '{"cniVersion": "1.0.0", "type": "macvlan",')
        self.add_pod({NETWORKS: "pool, broken"})
        self.write_k8s()
        self.add_fails_cleanly(7, "default/broken", "JSON")

    def test_html_instead_of_json(self):
        self.add_pod({NETWORKS: "pool"})
        self.write_k8s()
        self.api.add_fault(path=POD_GET, method="GET", action="raw", status=200,
                           content_type="text/html", body="<html><body>proxy login</body></html>")
        self.add_fails_cleanly(6, "not valid JSON")

    def test_a_status_object_of_another_kind(self):
        self.add_pod({NETWORKS: "pool"})
        self.write_k8s()
        self.api.add_fault(path=NAD_GET, method="GET", action="raw", status=200,
                           body=json.dumps({"kind": "Pod", "apiVersion": "v1"}))
        self.add_fails_cleanly(6, "kind")

    def test_dropped_connections_end_in_a_bounded_error(self):
        self.add_pod({NETWORKS: "pool"})
        self.write_k8s(apiTimeouts=SMALL_TIMEOUTS)
        self.api.add_fault(path=POD_GET, action="drop", count=None)
        self.add_fails_cleanly(103, "unreachable", self.pod_name)
        self.assertEqual(len(self.requests()), SMALL_TIMEOUTS["attempts"])

    def test_a_server_that_never_answers_ends_in_a_bounded_error(self):
        self.add_pod({NETWORKS: "pool"})
        self.write_k8s(apiTimeouts=SMALL_TIMEOUTS)
        self.api.add_fault(path=POD_GET, action="delay", delay_ms=20000, count=None)
        add = self.add_fails_cleanly(103, self.pod_name)
        self.assertLess(add.elapsed, 20, "a request outlived its bound")

    def test_a_reset_in_the_middle_of_the_status_put_answer_rolls_back(self):
        self.add_pod({NETWORKS: "pool"})
        self.write_k8s(apiTimeouts=SMALL_TIMEOUTS)
        self.api.add_fault(path=r"/status$", method="PUT", action="reset", count=None)
        self.add_fails_cleanly(103, "network status")

    def test_forbidden_nad_is_a_clear_rbac_error(self):
        self.add_pod({NETWORKS: "mac-a, pool"})
        self.write_k8s()
        self.api.deny(verb="get", resource="network-attachment-definitions", name="pool")
        self.add_fails_cleanly(103, "403", "RBAC")


if __name__ == "__main__":
    main()
