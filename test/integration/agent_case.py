"""Shared base of the node agent's end-to-end tests (test_agent_*.py): `manifold agent` running in
the test's node namespace against the API server double (through the NetnsForwarder of
k8s_case.py), watching the pods of node NODE, and an operator who changes a pod's networks
annotation with Debian's kubectl (`kubectl annotate --overwrite`, the PATCH the double serves).

A test ADDs its pod through the libcni driver as the runtime would, starts the agent, annotates,
and then waits — with a generous bound that only guards against a hang, never decides a verdict —
until the double shows the network-status the change must produce. It then checks the pod's
namespace, the host-local reservations, manifold's cache entry and the events.
"""
import json
import os
import signal
import socket
import subprocess
import threading
import time

from harness.runner import base_env
from k8s_case import NETWORKS, NETWORK_STATUS, K8sTestCase, _setns

NODE = "node-a"
METRICS_PORT = 9155
WAIT_SECONDS = 60


def parse_metrics(text):
    """Prometheus text exposition as {sample name with its labels: value}."""
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def http_get_in_netns(netns_path, port, path):
    """(status, body) of GET http://127.0.0.1:<port><path> made from inside the namespace."""
    out = {}

    def run():
        with open("/proc/thread-self/ns/net", "rb") as own, open(netns_path, "rb") as target:
            _setns(target.fileno())
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            finally:
                _setns(own.fileno())
        with sock:
            sock.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" % path).encode())
            data = b""
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        out["status"] = int(head.split(b" ")[1])
        out["body"] = body.decode()

    t = threading.Thread(target=run)
    t.start()
    t.join(30)
    return out.get("status"), out.get("body")


class AgentTestCase(K8sTestCase):
    """K8sTestCase plus a node agent and an operator's kubectl."""

    def setUp(self):
        super().setUp()
        self.kube_cache = self.tree.path("kube-cache")
        self.agent_log = self.tree.path("agent.log")
        self.relay_socket = self.tree.path("run/agent.sock")
        self.agents = []

    # ---- the agent -------------------------------------------------------------------------------

    def add_blue_and_green(self):
        """The two host-local NADs most agent tests hot-plug: default/blue and default/green."""
        self.api.add_nad("default", "blue", self.hostlocal_nad_conf(subnet="198.51.100.0/24",
                                                                     start="198.51.100.100"))
        self.api.add_nad("default", "green", self.hostlocal_nad_conf(subnet="203.0.113.0/24",
                                                                      start="203.0.113.100"))

    def start_agent(self, *extra, wait_watch=True, wrapper=(), kubeconfig=None):
        """Starts `manifold agent` in the node namespace; waits until its pod watch is open.
        `wrapper` (e.g. an strace command line ending in "--") is put in front of manifold. Its API
        relay listens on self.relay_socket (in the test's tree, never the node's /run/manifold)
        unless `extra` names another."""
        before = {w["id"] for w in self.api.watches()}
        relay = [] if "--relay-socket" in extra else ["--relay-socket", self.relay_socket]
        # The namespace policy of hot-plugs comes from the test's config, never the host's.
        relay += [] if "--conf-dir" in extra else ["--conf-dir", self.tree.conf_dir]
        argv = ["ip", "netns", "exec", self.node.name, *wrapper, self.manifold_bin, "agent", "--no-install",
                "--node-name", NODE, "--kubeconfig", kubeconfig or self.kubeconfig, "--cni-dir", self.tree.cni_dir,
                "--metrics-address", "127.0.0.1:%d" % METRICS_PORT, "--max-backoff", "1000",
                "--log-level", "debug", *relay, *extra]
        with open(self.agent_log, "ab") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=log, env=base_env())
        self.agents.append(proc)
        self.addCleanup(self._reap, proc)
        if wait_watch:  # a watch of an agent killed earlier may still count as open: look for a new one
            self.wait_for(lambda: any(w["id"] not in before and w["path"] == "/api/v1/pods"
                                      for w in self.api.watches()), "the agent's pod watch")
        return proc

    def _reap(self, proc):
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)

    def stop_agent(self, proc, sig=signal.SIGTERM):
        """Stops the agent with `sig`; returns its exit status."""
        proc.send_signal(sig)
        return proc.wait(30)

    def agent_output(self):
        with open(self.agent_log, encoding="utf-8", errors="replace") as f:
            return f.read()

    def metrics(self):
        """The agent's /metrics as {sample name with labels: value}."""
        status, body = http_get_in_netns(self.node.path, METRICS_PORT, "/metrics")
        self.assertEqual(status, 200, body)
        return parse_metrics(body)

    # ---- the operator ----------------------------------------------------------------------------

    def kubectl(self, *args):
        """Runs kubectl as the cluster admin against the double; returns its stdout."""
        argv = ["kubectl", "--kubeconfig", self.api.admin_kubeconfig, "--cache-dir", self.kube_cache, *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, "kubectl %s failed: %s" % (" ".join(args), done.stderr))
        return done.stdout

    def annotate(self, value, name=None):
        """`kubectl annotate --overwrite` of the pod's networks annotation."""
        self.kubectl("annotate", "pod", name or self.pod_name, "-n", "default", "--overwrite",
                     "%s=%s" % (NETWORKS, value))

    # ---- the pod ---------------------------------------------------------------------------------

    def add_node_pod(self, networks=None, **kw):
        """The test's pod on NODE, with `networks` as its annotation when given."""
        annotations = {NETWORKS: networks} if networks is not None else None
        return self.add_pod(annotations, node_name=NODE, **kw)

    def status(self):
        """The pod's network-status as a list ([] when absent)."""
        text = self.status_annotation()
        return json.loads(text) if text else []

    def status_interfaces(self):
        """{interface: network name} of the pod's network-status."""
        return {e.get("interface"): e["name"] for e in self.status()}

    def wait_for(self, predicate, what):
        """Waits until predicate() is true; fails after WAIT_SECONDS (a hang guard)."""
        deadline = time.monotonic() + WAIT_SECONDS
        while not predicate():
            if time.monotonic() > deadline:
                self.fail("timed out waiting for %s\nagent log:\n%s\nmanifold log:\n%s" % (
                    what, self.agent_output()[-6000:], self.tree.log_tail()))
            time.sleep(0.05)

    def wait_status(self, interfaces):
        """Waits until the network-status lists exactly `interfaces` ({ifname: network})."""
        self.wait_for(lambda: self.status_interfaces() == interfaces, "network-status %s" % interfaces)

    def entry(self):
        """manifold's cache entry of the test's container (parsed), or None."""
        path = self.tree.cache_entry_path(self.container_id)
        if not os.path.exists(path):
            return None
        with open(path, encoding="utf-8") as f:
            return json.load(f)

    def entry_ifnames(self):
        entry = self.entry()
        return [a["ifname"] for a in entry["attachments"]] if entry else []

    def events(self, reason):
        """The messages of the double's events with `reason` about the test's pod."""
        return [e.get("message", "") for e in self.api.events()
                if e.get("reason") == reason and e.get("involvedObject", {}).get("name") == self.pod_name]
