#!/usr/bin/env python3
"""The node agent when things go wrong, end to end: the agent killed by SIGKILL in the middle of
an attach and started again (the interrupted attach is undone and done again, nothing leaks); a
CNI DEL racing a hot-plug (it waits for the container's lock, and nothing is left behind); the API
server unreachable for a while, answering 500 and 429, sending garbage, oversized events or
dropping the stream mid-event, ending every watch at once (a backoff, not a
reconnect loop), and expiring the agent's resourceVersion (410: relist) — the agent
keeps running, reports, and applies the change once it can.
"""
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from agent_case import NODE, AgentTestCase  # noqa: E402
from harness import main  # noqa: E402
from harness.netns import process_gone  # noqa: E402
from k8s_case import NetnsForwarder  # noqa: E402


class AgentFaultTest(AgentTestCase):
    """Crashes, races and a misbehaving API server."""

    def setUp(self):
        super().setUp()
        self.api.add_nad("default", "blue", self.hostlocal_nad_conf(subnet="198.51.100.0/24",
                                                                     start="198.51.100.100"))
        self.pid_file = self.tree.path("hang.pid")
        self.api.add_nad("default", "slow", self.fake_conf("fake-hang", pidFile=self.pid_file))
        self.write_k8s()
        self.add_node_pod()
        self.assertOk(self.add())

    def hanging_pid(self):
        """The pid of the fake-hang delegate once it is hanging in its ADD."""
        self.wait_for(lambda: os.path.exists(self.pid_file) and os.path.getsize(self.pid_file) > 0,
                      "the delegate to start")
        with open(self.pid_file, encoding="utf-8") as f:
            pid = int(f.read().strip())
        self.addCleanup(self._kill_quietly, pid)
        return pid

    def _kill_quietly(self, pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def test_agent_killed_in_the_middle_of_an_attach_then_restarted(self):
        agent = self.start_agent()
        self.annotate("slow")
        pid = self.hanging_pid()
        # The attachment is recorded before its delegate runs: the cache now names it, without a result.
        self.assertEqual(self.entry_ifnames(), ["eth0", "net1"])
        self.stop_agent(agent, signal.SIGKILL)
        os.kill(pid, signal.SIGKILL)
        self.wait_for(lambda: process_gone(pid), "the delegate to die")
        # The NAD now points at a working network; the restarted agent undoes the interrupted
        # attach (DEL of what was recorded) and attaches again.
        self.api.add_nad("default", "slow", self.hostlocal_nad_conf(subnet="192.0.2.0/24", start="192.0.2.100"))
        self.start_agent()
        self.wait_status({"eth0": "cluster", "net1": "default/slow"})
        dels = [r for r in self.tree.records() if r["plugin"] == "fake-hang" and r["command"] == "DEL"]
        self.assertEqual(len(dels), 1, "the interrupted attach was not undone")
        self.assertEqual(self.pod.addresses("net1"), ["192.0.2.100/24"])
        self.assertEqual(self.entry_ifnames(), ["eth0", "net1"])
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_a_cni_del_racing_a_hot_plug_leaves_nothing_behind(self):
        self.start_agent()
        self.annotate("slow")
        pid = self.hanging_pid()
        # The runtime DELs the sandbox while the agent holds its lock: the DEL waits for it.
        result = {}
        deleting = threading.Thread(target=lambda: result.setdefault("run", self.delete()))
        deleting.start()
        os.kill(pid, signal.SIGKILL)  # the hot-plug's delegate fails: the agent rolls it back
        deleting.join(120)
        self.assertOk(result["run"])
        self.assertNothingLeft(self.pod)
        self.wait_for(lambda: self.events("NetworkChangeFailed"), "the failure to be reported")

    def test_a_nad_that_does_not_exist_yet_is_reported_and_retried(self):
        self.start_agent()
        self.annotate("late")
        self.wait_for(lambda: any("late" in m for m in self.events("NetworkChangeFailed")),
                      "a NetworkChangeFailed event naming the NAD")
        self.assertEqual(self.entry_ifnames(), ["eth0"])
        self.assertEqual(sorted(self.pod.link_names()), ["eth0", "lo"])
        self.api.add_nad("default", "late", self.hostlocal_nad_conf(subnet="192.0.2.0/24", start="192.0.2.100"))
        self.wait_status({"eth0": "cluster", "net1": "default/late"})
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_the_api_server_unreachable_for_a_while(self):
        self.start_agent()
        self.forwarder.stop()  # the agent's stream drops; reconnecting fails for now
        self.annotate("blue")
        self.assertEqual(self.entry_ifnames(), ["eth0"])
        self.forwarder = NetnsForwarder(self.node.path, self.api.port)
        self.addCleanup(self.forwarder.stop)
        self.wait_status({"eth0": "cluster", "net1": "default/blue"})
        self.assertGreaterEqual(self.metrics()['manifold_agent_watch_restarts_total{reason="error"}'], 1)
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_garbage_a_cut_stream_and_an_oversized_event_only_cost_a_reconnect(self):
        self.start_agent()
        node = "spec.nodeName=" + NODE
        changes = [("watch_garbage", {"body": "this is not a watch event", "close": False}, "blue",
                    {"net1": "default/blue"}),
                   ("watch_cut", {}, "", {}),
                   ("watch_oversized", {"size": 8 << 20}, "blue@data0", {"data0": "default/blue"})]
        for n, (action, options, networks, expected) in enumerate(changes, start=1):
            self.api.add_fault(action=action, query=node, count=1, **options)
            self.annotate(networks)
            expected = dict(expected, eth0="cluster")
            self.wait_status(expected)
            self.wait_for(lambda n=n: self.metrics()['manifold_agent_watch_restarts_total{reason="error"}'] >= n,
                          "the reconnect after %s" % action)
        self.assertEqual(self.entry_ifnames(), ["eth0", "data0"])
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_an_expired_resource_version_relists(self):
        self.start_agent()
        node = "spec.nodeName=" + NODE
        lists = len(self.requests(method="GET", path=r"^/api/v1/pods$"))
        # 410 as an ERROR event in the stream (the real server's answer to a watch from a version
        # etcd compacted away) ...
        self.api.add_fault(action="watch_error", status=410, query=node, count=1)
        self.wait_for(lambda: self.metrics()['manifold_agent_watch_restarts_total{reason="expired"}'] >= 1,
                      "the first relist")
        # ... and as the answer to the WATCH request itself.
        self.api.add_fault(path=r"^/api/v1/pods$", watch=True, status=410, count=1)
        self.api.add_fault(action="watch_end", query=node, count=1)
        self.wait_for(lambda: self.metrics()['manifold_agent_watch_restarts_total{reason="expired"}'] >= 2,
                      "the second relist")
        self.assertGreaterEqual(len(self.requests(method="GET", path=r"^/api/v1/pods$")), lists + 2)
        self.annotate("blue")
        self.wait_status({"eth0": "cluster", "net1": "default/blue"})
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_an_api_server_answering_500_and_429_for_a_while(self):
        self.start_agent()
        self.api.add_fault(path=r"^/api/v1/pods$", watch=True, status=500, count=3)
        self.api.add_fault(path=r"^/api/v1/pods$", watch=True, status=429, retry_after=1, count=2)
        self.api.add_fault(action="watch_end", query="spec.nodeName=" + NODE, count=1)
        self.annotate("blue")
        self.wait_status({"eth0": "cluster", "net1": "default/blue"})
        self.assertGreaterEqual(self.metrics()['manifold_agent_watch_restarts_total{reason="error"}'], 5)
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_watches_ended_at_once_are_reopened_after_a_backoff_not_in_a_loop(self):
        # A proxy (or an overloaded server) that answers every watch with 200 and an empty body: the
        # agent once reopened it thousands of times a second. Now each reopen waits a growing backoff
        # (capped by --max-backoff 1000 here: at least 500 ms once it is reached).
        watches = lambda: [r for r in self.requests(path=r"^/api/v1/pods$") if r.get("verb") == "watch"]
        self.api.add_fault(path=r"^/api/v1/pods$", watch=True, action="raw", status=200,
                           content_type="application/json", body="", count=None)
        self.start_agent(wait_watch=False)
        self.wait_for(watches, "the agent's first watch")  # /metrics is served before the loop starts
        self.wait_for(lambda: self.metrics()['manifold_agent_watch_restarts_total{reason="empty"}'] >= 3,
                      "three watches ended at once")
        before, start = len(watches()), time.monotonic()
        time.sleep(3)
        reopened, seconds = len(watches()) - before, time.monotonic() - start
        # An upper bound only (a slower machine reopens less): one reopen per 500 ms at most, plus one.
        self.assertLessEqual(reopened, seconds / 0.5 + 1, "%d watches in %.1f s" % (reopened, seconds))
        self.api.clear_faults()
        self.annotate("blue")
        self.wait_status({"eth0": "cluster", "net1": "default/blue"})
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_the_request_ceiling_is_the_operators(self):
        # --api-qps 1 --api-burst 1: the LIST takes the only token, the WATCH after it waits a second.
        self.start_agent("--api-qps", "1", "--api-burst", "1")
        self.wait_for(lambda: self.metrics()["manifold_agent_api_throttled_total"] >= 1,
                      "a request held back by the ceiling")
        for flags in (("--api-qps", "0"), ("--api-qps", "nan"), ("--api-burst", "0")):
            r = subprocess.run([self.manifold_bin, "agent", "--no-install", "--node-name", NODE, *flags],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 2, (flags, r.stdout, r.stderr))
            self.assertTrue(r.stderr.strip(), flags)


if __name__ == "__main__":
    main()
