#!/usr/bin/env python3
"""The node agent's API relay, end to end: `manifold agent` listens on a Unix socket and CNI
invocations on the node hand it their Kubernetes API requests, which it sends on its own kept-alive
HTTPS connection with its own credentials. Proven against the API server double's request log: the
agent authenticates with a client certificate and manifold's kubeconfig with a bearer token, so
each request shows which path it took, and the double's connection log shows whether the CNI call
opened a TLS connection of its own. Covered: an ADD's pod GET, NAD GETs, status PUT and events all
go through the agent (no bearer token crosses the socket, no TLS connection or session of the CNI
call's own), CHECK and DEL; the relay's metrics; no agent, an agent stopped (its socket removed) or
killed (a stale socket left, then replaced by the next agent), an agent for another API server
(refused, so the call goes direct) and `agentSocket: ""` all reach the API server directly and
work; a process that is not root cannot even connect.
"""
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from agent_case import AgentTestCase  # noqa: E402
from harness import main  # noqa: E402
from k8s_case import pod_path  # noqa: E402

RELAYED = 'manifold_agent_relay_exchanges_total{result="answered"}'
REFUSED = 'manifold_agent_relay_exchanges_total{result="refused"}'


class RelayTest(AgentTestCase):
    """CNI calls whose API requests go through the agent, or directly when they cannot."""

    def setUp(self):
        super().setUp()
        self.api.add_nad("default", "blue", self.hostlocal_nad_conf(subnet="198.51.100.0/24",
                                                                     start="198.51.100.100"))
        self.cert_kubeconfig = self.api.write_kubeconfig(self.tree.path("agent.kubeconfig"), auth="cert")
        self.write_k8s(agentSocket=self.relay_socket)

    def cni_requests(self):
        """The double's log entries of the test pod's CNI calls (the agent's watch and its NAD LISTs
        excluded)."""
        return [e for e in self.requests() if e["path"].startswith("/api/v1/namespaces/default/")
                or "network-attachment-definitions/" in e["path"]]

    def assertRelayed(self, entries):
        """Every entry came through the agent: its certificate, no bearer token, one connection of
        the agent's."""
        self.assertTrue(entries, "no API request")
        for e in entries:
            self.assertEqual(e["auth"], "cert", "%s %s did not come through the agent" % (e["method"], e["path"]))
            self.assertNotIn("authorization", e["headers"], "a bearer token crossed the relay")

    def assertDirect(self, entries):
        self.assertTrue(entries, "no API request")
        for e in entries:
            self.assertEqual(e["auth"], "token", "%s %s went through an agent" % (e["method"], e["path"]))

    def add_blue(self):
        self.add_node_pod("blue")
        run = self.add()
        self.assertOk(run)
        self.assertEqual(self.status_interfaces(), {"eth0": "cluster", "net1": "default/blue"})
        return run

    def test_add_check_and_del_go_through_the_agent(self):
        # Without its caches, so that the lookups travel the relay too (test_agent_lookups.py: with).
        self.start_agent("--no-lookups", kubeconfig=self.cert_kubeconfig)
        self.api.clear_requests()
        connections_before = len(self.api.connections())
        self.add_blue()
        entries = self.cni_requests()
        self.assertRelayed(entries)
        self.assertEqual([(e["method"], e["path"].rsplit("/", 1)[-1]) for e in entries if e["method"] != "POST"],
                         [("GET", self.pod_name), ("GET", "blue"), ("PUT", "status")])
        self.wait_for(lambda: self.events("AddedInterface"), "the AddedInterface event")
        self.assertRelayed(self.cni_requests())
        # The agent opened one upstream connection for it; the CNI call opened none.
        self.assertLessEqual(len(self.api.connections()), connections_before + 1)
        self.assertEqual(len({e["conn"] for e in entries}), 1)
        self.assertGreaterEqual(self.metrics()[RELAYED], 2)  # the lookups and the status PUT
        log = self.tree.log_tail(1 << 20)
        self.assertIn("Kubernetes API requests go through the node agent at", log)
        self.assertNotIn("not used", log)
        # CHECK reuses the agent's connection.
        conns = len(self.api.connections())
        self.api.clear_requests()
        self.assertOk(self.check())
        self.assertEqual(len(self.api.connections()), conns)
        self.assertOk(self.delete())
        self.assertEqual([e for e in self.cni_requests() if e["method"] != "GET"], [], "DEL made a request")
        self.assertNothingLeft(self.pod)

    def test_without_an_agent_the_call_goes_direct(self):
        self.add_blue()
        self.assertDirect(self.cni_requests())
        self.assertIn("not used", self.tree.log_tail(1 << 20))
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_agent_socket_empty_never_asks_the_agent(self):
        self.write_k8s(agentSocket="")
        self.start_agent(kubeconfig=self.cert_kubeconfig)
        self.add_blue()
        self.assertDirect(self.cni_requests())
        self.assertEqual(self.metrics().get(RELAYED, 0), 0)
        self.assertEqual(self.metrics().get(REFUSED, 0), 0)
        self.assertOk(self.delete())

    def test_stopped_or_killed_agent_and_its_successor(self):
        agent = self.start_agent(kubeconfig=self.cert_kubeconfig)
        self.assertEqual(self.stop_agent(agent), 0)
        self.assertFalse(os.path.exists(self.relay_socket), "a stopped agent left its socket")
        self.add_blue()
        self.assertDirect(self.cni_requests())
        self.assertOk(self.delete())
        # A killed agent leaves its socket file; connecting is refused and the call goes direct.
        agent = self.start_agent(kubeconfig=self.cert_kubeconfig)
        self.stop_agent(agent, signal.SIGKILL)
        self.assertTrue(os.path.exists(self.relay_socket))
        self.api.clear_requests()
        self.add_blue()
        self.assertDirect(self.cni_requests())
        self.assertOk(self.delete())
        # The next agent replaces the stale socket and relays again.
        self.start_agent(kubeconfig=self.cert_kubeconfig)
        self.api.clear_requests()
        self.add_blue()
        self.assertRelayed(self.cni_requests())
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_an_agent_for_another_api_server_refuses(self):
        other = self.api.write_kubeconfig(self.tree.path("other.kubeconfig"), auth="cert",
                                          server=self.api.url.replace("127.0.0.1", "localhost"))
        self.start_agent(kubeconfig=other, wait_watch=False)
        self.wait_for(lambda: os.path.exists(self.relay_socket), "the relay socket")
        self.add_blue()
        self.assertDirect(self.cni_requests())
        self.assertGreaterEqual(self.metrics()[REFUSED], 1)
        self.assertIn("refused", self.tree.log_tail(1 << 20))
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_the_socket_is_root_only(self):
        self.start_agent(kubeconfig=self.cert_kubeconfig)
        self.assertEqual(os.stat(self.relay_socket).st_mode & 0o777, 0o600)
        probe = ("import socket,sys\ns=socket.socket(socket.AF_UNIX)\n"
                 "try:\n s.connect(sys.argv[1])\nexcept PermissionError:\n sys.exit(3)\n")
        done = subprocess.run([sys.executable, "-c", probe, self.relay_socket], user=65534, group=65534,
                              capture_output=True, timeout=60)
        self.assertEqual(done.returncode, 3, "a non-root process reached the relay: %r" % done.stderr)
        self.assertEqual(self.requests(path=pod_path("default", self.pod_name)), [])


if __name__ == "__main__":
    main()
