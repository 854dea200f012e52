#!/usr/bin/env python3
"""The Kubernetes API failing during an ADD, for a pod on the cluster network plus a host-local
NAD with source routing (so a late failure has links, a reservation and an ip rule of ours to roll
back): the API refusing connections; resetting in the middle of an answer (once: retried and
absorbed; always: a clear error); answering slower than the request timeout (once on the status
PUT: retried, the ADD succeeds; always: rolled back); 500 and 429 bursts that the retries absorb,
and a 500 storm on the status PUT that is rolled back. Each failure is a clear 103 that leaves
nothing behind. (A dropped or never-answered pod GET, a reset or 429 storm on the status PUT and a
429 burst on the pod GET are covered by test_k8s_bad_responses.py and test_k8s_api.py.)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from faults_case import ERR_KUBERNETES, PRIORITY  # noqa: E402
from harness import main  # noqa: E402
from k8s_case import NETWORKS, STATUS_PUT, K8sTestCase  # noqa: E402

NAD_GET = r"/network-attachment-definitions/pool$"
# Small bounds; enough attempts that two failed ones leave room for a third.
TIMEOUTS = {"request": 1000, "call": 4000, "total": 8000, "attempts": 3}


class FaultsK8sTest(K8sTestCase):
    """Faults of the API server double around one ADD."""

    def setUp(self):
        super().setUp()
        pool = self.hostlocal_nad_conf()
        pool["sourceRouting"] = {"enabled": True}
        self.api.add_nad("default", "pool", pool)
        self.add_pod({NETWORKS: "pool"})
        self.write_k8s(apiTimeouts=TIMEOUTS)

    def our_rules(self):
        rules = self.pod.ip_json("rule", "show")
        return [r for r in rules if r.get("priority") == PRIORITY]

    def assertAllReleased(self):
        self.assertEqual(self.our_rules(), [], "ip rules of manifold left in the pod")
        self.assertNothingLeft()

    def add_fails_cleanly(self, *words):
        add = self.add()
        self.assertCniError(add, ERR_KUBERNETES)
        self.assertErrorMentions(add, *words)
        self.assertAllReleased()
        return add

    def add_succeeds(self):
        add = self.add()
        self.assertOk(add)
        self.assertNotEqual(self.our_rules(), [])
        self.assertIsNotNone(self.status_annotation(), "network-status was not written")
        self.assertOk(self.delete())
        self.assertAllReleased()

    def statuses(self, method=None, path=None):
        return [e["status"] for e in self.requests(method=method, path=path)]

    def test_api_refusing_connections(self):
        self.forwarder.stop()
        self.add_fails_cleanly(self.pod_name)
        self.assertEqual(self.requests(), [])

    def test_one_reset_in_the_middle_of_a_nad_answer_is_retried(self):
        self.api.add_fault(path=NAD_GET, method="GET", action="reset", count=1)
        self.add_succeeds()
        self.assertEqual(self.statuses("GET", NAD_GET), [200, 200])

    def test_resets_in_the_middle_of_every_nad_answer(self):
        self.api.add_fault(path=NAD_GET, method="GET", action="reset", count=None)
        self.add_fails_cleanly('"pool"', "middle of the answer")
        self.assertEqual(len(self.requests(method="GET", path=NAD_GET)), TIMEOUTS["attempts"])

    def test_one_status_put_slower_than_the_timeout_is_retried(self):
        self.api.add_fault(path=STATUS_PUT, method="PUT", action="delay", delay_ms=2500, count=1)
        self.add_succeeds()
        # The slow PUT shows up in the double's log only once its delay is over; manifold's own
        # log says that the first attempt timed out and was retried.
        log = self.tree.log_tail(1 << 30)
        self.assertIn("attempt 1 failed", log)
        self.assertIn("did not answer within %d ms" % TIMEOUTS["request"], log)

    def test_status_puts_always_slower_than_the_timeout_roll_back(self):
        self.api.add_fault(path=STATUS_PUT, method="PUT", action="delay", delay_ms=3000, count=None)
        self.add_fails_cleanly("network status", self.pod_name)

    def test_500_bursts_on_the_nad_and_the_status_put_are_absorbed(self):
        self.api.add_fault(path=NAD_GET, method="GET", action="status", status=500, count=2)
        self.api.add_fault(path=STATUS_PUT, method="PUT", action="status", status=500, count=2)
        self.add_succeeds()
        self.assertEqual(self.statuses("GET", NAD_GET), [500, 500, 200])
        self.assertEqual(self.statuses("PUT", STATUS_PUT), [500, 500, 200])

    def test_a_429_burst_with_retry_after_on_the_status_put_is_absorbed(self):
        self.api.add_fault(path=STATUS_PUT, method="PUT", action="status", status=429, retry_after=1, count=1)
        self.add_succeeds()
        self.assertEqual(self.statuses("PUT", STATUS_PUT), [429, 200])

    def test_a_500_storm_on_the_status_put_rolls_back(self):
        self.api.add_fault(path=STATUS_PUT, method="PUT", action="status", status=500, count=None)
        self.add_fails_cleanly("500", "network status")
        self.assertEqual(len(self.requests(method="PUT")), TIMEOUTS["attempts"])


if __name__ == "__main__":
    main()
