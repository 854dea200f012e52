#!/usr/bin/env python3
"""The node agent's API relay under a hostile root peer: a real `manifold agent` against the API
server double, spoken to directly on its Unix socket with hand-made frames (relay_frames.py).

Memory: the agent's peak RSS (VmHWM) stays within a bound of what it was before each attack —
  * 32 connections that each send only a frame length (the largest allowed) and nothing more;
  * one frame, just under the size limit, made of tiny headers (a huge JSON document);
  * one small frame asking for 64 GETs of a 512 KiB NetworkAttachmentDefinition (an answer far
    past the client's frame limit), and 16 connections asking it at once; and the issue's 256
    GETs, refused outright —
and it answers a legitimate exchange after each.
Scope: the relay acts only for pods of its node: a GET of a pod of another node, a status PUT or an
Event for it, and a NAD GET in a namespace with no pod on this node are refused (counted as
refused in the metrics, nothing sent upstream for the PUT and the Event), while the same calls for
the node's own pod are answered.
Trust: a CNI call never talks to a socket that is not root's — one bound by `nobody`, or root's
but writable by others: the fake listener on it receives nothing, and the ADD succeeds directly.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from agent_case import NODE, AgentTestCase  # noqa: E402
from harness import main  # noqa: E402
from k8s_case import nad_path, pod_path  # noqa: E402
from relay_frames import EXCHANGE_SECONDS, FAKE_LISTENER, exchange, peak_rss_mb, request_frame, wait_closed  # noqa: E402

REFUSED = 'manifold_agent_relay_exchanges_total{result="refused"}'
ANSWERED = 'manifold_agent_relay_exchanges_total{result="answered"}'
# Growth of the agent's peak RSS one attack may cause. Measured with the bounds: +2 to +12 MB (release
# build), +5 to +20 MB (ASan build); without them: +60 to +135 MB.
BOUND_MB = 32
# Growth 16 attacking exchanges at once may cause over the same exchanges with small answers: the
# relay's 16 MiB budget for frames, and 16 answers of 512 KiB in flight, each in the transport's
# buffer, its body and its encoded piece (24 MiB). Measured: +22 MB (release), +23 to +33 MB (ASan).
AT_ONCE_BOUND_MB = 48
BIG_NAD_BYTES = 512 << 10
# The largest request frame the relay reads (relay/relay_protocol.h kMaxRequestFrame).
MAX_REQUEST_FRAME = 2 << 20


def brief(answer):
    """An answer as text short enough for a failure message."""
    text = json.dumps(answer)
    return text if len(text) < 600 else text[:600] + "..."


class HostileRelayTest(AgentTestCase):
    """A root peer that abuses the relay: bounded memory, only this node's pods."""

    def setUp(self):
        super().setUp()
        self.cert_kubeconfig = self.api.write_kubeconfig(self.tree.path("agent.kubeconfig"), auth="cert")
        self.add_node_pod()
        # A sanitizer build keeps freed memory in a quarantine (256 MB by default), which would count
        # every byte ever allocated: a small one keeps the peak close to what is really held.
        asan = os.environ.get("ASAN_OPTIONS")
        os.environ["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "quarantine_size_mb=4"
        try:
            self.agent = self.start_agent(kubeconfig=self.cert_kubeconfig)
        finally:
            if asan is None:
                del os.environ["ASAN_OPTIONS"]
            else:
                os.environ["ASAN_OPTIONS"] = asan
        self.wait_for(lambda: os.path.exists(self.relay_socket), "the relay socket")

    def frame(self, requests):
        return request_frame(self.api.url, requests)

    def own_pod_get(self):
        return {"method": "GET", "target": pod_path("default", self.pod_name),
                "headers": [["Accept", "application/json"]], "body": ""}

    def assertStillAnswers(self):
        answer = exchange(self.relay_socket, self.frame([self.own_pod_get()]))
        self.assertNotIn("refused", answer, brief(answer))
        self.assertEqual(answer["outcomes"][0].get("status"), 200, brief(answer))

    def assertRefused(self, answer, *words):
        self.assertIn("refused", answer, brief(answer))
        for word in words:
            self.assertIn(word, answer["refused"])

    def assertPeakWithin(self, before, what, bound=BOUND_MB):
        peak = peak_rss_mb(self.agent.pid)
        print("%s: agent peak RSS %.1f MB (%.1f MB before)" % (what, peak, before), file=sys.stderr)
        self.assertLessEqual(peak, before + bound, "%s: the agent's peak RSS grew from %.1f to %.1f MB" % (
            what, before, peak))

    # ---- memory ----------------------------------------------------------------------------------

    def test_lengths_alone_cost_nothing(self):
        self.assertStillAnswers()
        before = peak_rss_mb(self.agent.pid)
        conns = []
        for _ in range(32):
            s = socket.socket(socket.AF_UNIX)
            s.connect(self.relay_socket)
            s.sendall(MAX_REQUEST_FRAME.to_bytes(4, "big"))
            conns.append(s)
        for s in conns:  # the agent gives up on each (its read deadline): it has read the length
            wait_closed(s)
            s.close()
        self.assertPeakWithin(before, "32 frame lengths")
        self.assertStillAnswers()

    def test_a_frame_of_tiny_headers(self):
        self.assertStillAnswers()
        before = peak_rss_mb(self.agent.pid)
        one = ["a", "b"]
        request = self.own_pod_get()
        overhead = len(self.frame([request]))
        request["headers"] = [one] * ((MAX_REQUEST_FRAME - overhead - 64) // 10)
        frame = self.frame([request])
        self.assertLess(len(frame), MAX_REQUEST_FRAME)
        answer = exchange(self.relay_socket, frame)
        self.assertPeakWithin(before, "a frame of tiny headers")
        self.assertRefused(answer, "values")
        self.assertStillAnswers()

    def test_many_gets_of_a_big_object(self):
        self.api.add_nad("default", "big", {"cniVersion": "1.0.0", "type": "bridge", "pad": "x" * BIG_NAD_BYTES})
        big = {"method": "GET", "target": nad_path("default", "big"), "headers": [], "body": ""}
        self.assertStillAnswers()
        before = peak_rss_mb(self.agent.pid)
        self.api.clear_requests()
        answer = exchange(self.relay_socket, self.frame([big] * 64))
        self.assertPeakWithin(before, "64 GETs of a 512 KiB NAD")
        self.assertRefused(answer, "answer frame")
        sent = [e for e in self.requests() if e["path"].endswith("/big")]
        self.assertLess(len(sent), 64, "the agent kept asking after its answer was full")
        self.assertRefused(exchange(self.relay_socket, self.frame([big] * 256)), "more than 64")
        self.assertStillAnswers()

    def at_once(self, frame, connections):
        """The answers of `connections` exchanges of `frame` made at the same time."""
        answers = [None] * connections

        def ask(i):
            answers[i] = exchange(self.relay_socket, frame)

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(connections)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(EXCHANGE_SECONDS)
        return answers

    def test_many_connections_asking_big_objects_at_once(self):
        # The same 16 exchanges at once with small answers first: what the connections, threads and
        # upstream transports cost is then in the baseline, and only the answers' size is measured.
        self.api.add_nad("default", "small", {"cniVersion": "1.0.0", "type": "bridge"})
        self.api.add_nad("default", "big", {"cniVersion": "1.0.0", "type": "bridge", "pad": "x" * BIG_NAD_BYTES})
        small = {"method": "GET", "target": nad_path("default", "small"), "headers": [], "body": ""}
        big = {"method": "GET", "target": nad_path("default", "big"), "headers": [], "body": ""}
        self.assertStillAnswers()
        for answer in self.at_once(self.frame([small] * 64), 16):  # answered, or refused when busy
            self.assertTrue("outcomes" in answer or "refused" in answer, brief(answer))
        before = peak_rss_mb(self.agent.pid)
        answers = self.at_once(self.frame([big] * 64), 16)
        self.assertPeakWithin(before, "16 connections of 64 GETs of a 512 KiB NAD at once", AT_ONCE_BOUND_MB)
        for answer in answers:
            self.assertRefused(answer)
        self.assertStillAnswers()

    # ---- scope -----------------------------------------------------------------------------------

    def test_only_pods_of_this_node(self):
        self.api.add_pod("default", "elsewhere", uid="uid-elsewhere", node_name="node-b")
        self.api.add_pod("far", "remote", uid="uid-remote", node_name="node-b")
        self.api.add_nad("far", "net", self.hostlocal_nad_conf())
        self.api.add_nad("default", "net", self.hostlocal_nad_conf())
        refused = self.metrics().get(REFUSED, 0)
        other = pod_path("default", "elsewhere")
        event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1", "namespace": "default"},
                 "involvedObject": {"kind": "Pod", "namespace": "default", "name": "elsewhere"},
                 "reason": "Hostile", "message": "m", "type": "Normal"}
        hostile = [
            [{"method": "GET", "target": other, "headers": [], "body": ""}],
            [{"method": "PUT", "target": other + "/status", "headers": [], "body": '{"kind":"Pod"}'}],
            [{"method": "POST", "target": "/api/v1/namespaces/default/events", "headers": [],
              "body": json.dumps(event)}],
            [{"method": "GET", "target": nad_path("far", "net"), "headers": [], "body": ""}],
        ]
        self.api.clear_requests()
        for requests in hostile:
            answer = exchange(self.relay_socket, self.frame(requests))
            self.assertRefused(answer, "pods of its node")
        self.assertEqual([e for e in self.requests() if e["method"] != "GET"], [], "a write reached the server")
        self.assertEqual(self.metrics()[REFUSED], refused + len(hostile))
        # The node's own pod, and a NAD of its namespace, are served.
        answered = self.metrics().get(ANSWERED, 0)
        self.assertStillAnswers()
        nad = exchange(self.relay_socket, self.frame([{"method": "GET", "target": nad_path("default", "net"),
                                                       "headers": [], "body": ""}]))
        self.assertEqual(nad["outcomes"][0]["status"], 200, brief(nad))
        self.assertEqual(self.metrics()[ANSWERED], answered + 2)
        self.assertEqual(NODE, self.stored_pod()["spec"]["nodeName"])


class UntrustedSocketTest(AgentTestCase):
    """A listener on agentSocket that is not the root agent gets nothing; the call goes direct."""

    NOBODY = 65534

    def setUp(self):
        super().setUp()
        self.api.add_nad("default", "blue", self.hostlocal_nad_conf(subnet="198.51.100.0/24",
                                                                     start="198.51.100.100"))
        self.dir = tempfile.mkdtemp(prefix="manifold-untrusted-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        os.chmod(self.dir, 0o755)
        os.chown(self.dir, self.NOBODY, self.NOBODY)
        self.socket = os.path.join(self.dir, "agent.sock")
        self.record = os.path.join(self.dir, "record")
        self.write_k8s(agentSocket=self.socket)

    def listen(self, mode, user=None):
        kw = {"user": user, "group": user} if user is not None else {}
        proc = subprocess.Popen([sys.executable, "-c", FAKE_LISTENER, self.socket, self.record, mode], **kw)
        self.addCleanup(proc.wait, 30)
        self.addCleanup(proc.kill)
        self.wait_for(lambda: os.path.exists(self.record), "the fake listener")

    def assertAddGoesDirect(self):
        self.add_node_pod("blue")
        self.assertOk(self.add())
        with open(self.record, encoding="utf-8") as f:
            self.assertEqual(f.read(), "", "the CNI call talked to an untrusted socket")
        entries = [e for e in self.requests() if e["path"].startswith("/api/v1/namespaces/default/")]
        self.assertTrue(entries)
        for e in entries:
            self.assertEqual(e["auth"], "token", "%s %s did not go direct" % (e["method"], e["path"]))
        self.assertIn("not trusted", self.tree.log_tail(1 << 20))
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_a_socket_of_nobody(self):
        self.listen("600", user=self.NOBODY)
        self.assertEqual(os.stat(self.socket).st_uid, self.NOBODY)
        self.assertAddGoesDirect()
        self.assertIn("owned by uid %d" % self.NOBODY, self.tree.log_tail(1 << 20))

    def test_a_socket_others_may_write(self):
        self.listen("666")
        self.assertAddGoesDirect()
        self.assertIn("writable by its group or others", self.tree.log_tail(1 << 20))


if __name__ == "__main__":
    main()
