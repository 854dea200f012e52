#!/usr/bin/env python3
"""The node agent against hostile neighbours and failures, end to end: any local user (here
`nobody`, in a forked child that drops root) holding 120 idle connections to the status server
cannot make one of 15 kubelet-style probes (1 s timeout) fail; with the API server answering 500 to
every pod LIST and WATCH, /healthz stays 200 (an API outage restarts no agent) while /readyz is 503,
and neither body shows the error; and a hot-plug refuses a sandbox whose recorded namespace path
names another namespace now — a bind mount replaced by another namespace, a /proc/<pid>/ns/net path
whose process is gone and whose PID another process's path stands for, the agent's own namespace —
with a NetworkNamespaceChanged warning and nothing created in any namespace; and namespaceIsolation
turned on in the node's config after a pod's ADD binds that pod's next hot-plug.
"""
import json
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from agent_case import METRICS_PORT, AgentTestCase, http_get_in_netns  # noqa: E402
from harness import main  # noqa: E402
from k8s_case import _setns  # noqa: E402

PROBE_TIMEOUT = 1.0  # the kubelet's default timeoutSeconds
# A Python that `nobody` can run (Debian's; one under root's home is not readable to it).
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

# Run in the node namespace by a forked child: drops to nobody, opens `count` connections to the
# status server and keeps that many open (reopening each one the server closes) until stdin closes.
IDLE_HOLDER = r"""
import os, pwd, select, socket, sys, threading
nobody = pwd.getpwnam("nobody")
os.setgroups([])
os.setgid(nobody.pw_gid)
os.setuid(nobody.pw_uid)
port, count = int(sys.argv[1]), int(sys.argv[2])
def connect():
    return socket.create_connection(("127.0.0.1", port), timeout=5)
socks = [connect() for _ in range(count)]
print(os.getuid(), len(socks), flush=True)
done = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
reopened = 0
while not done.is_set():
    readable, _, _ = select.select(socks, [], [], 0.05)
    for s in readable:
        socks.remove(s)
        s.close()
        socks.append(connect())
        reopened += 1
print(reopened, flush=True)
"""


def probe_in_netns(netns_path, port, path, timeout):
    """(status or None, seconds) of one GET made from inside the namespace, the whole exchange
    bounded by `timeout` as the kubelet's probe is."""
    out = {"status": None}
    start = time.monotonic()

    def run():
        with open("/proc/thread-self/ns/net", "rb") as own, open(netns_path, "rb") as target:
            _setns(target.fileno())
            try:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            finally:
                _setns(own.fileno())
        with sock:
            sock.settimeout(timeout)
            try:
                sock.connect(("127.0.0.1", port))
                sock.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" % path).encode())
                data = b""
                while time.monotonic() - start < timeout:
                    chunk = sock.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                if data.startswith(b"HTTP/1.1 ") and time.monotonic() - start <= timeout:
                    out["status"] = int(data.split(b" ")[1])
            except OSError:
                pass

    t = threading.Thread(target=run)
    t.start()
    t.join(30)
    return out["status"], time.monotonic() - start


class HostileAgentTest(AgentTestCase):
    """The status server under local abuse and API failure; hot-plug into a namespace it no longer
    owns."""

    def setUp(self):
        super().setUp()
        self.add_blue_and_green()
        self.write_k8s()

    # ---- the status server -----------------------------------------------------------------------

    def test_idle_connections_of_nobody_cannot_fail_a_liveness_probe(self):
        self.start_agent()
        holder = subprocess.Popen(["ip", "netns", "exec", self.node.name, PYTHON, "-c", IDLE_HOLDER,
                                   str(METRICS_PORT), "120"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        self.addCleanup(self._stop_holder, holder)
        uid, held = holder.stdout.readline().split()
        self.assertEqual((int(uid), int(held)), (65534, 120))
        results = [probe_in_netns(self.node.path, METRICS_PORT, "/healthz", PROBE_TIMEOUT) for _ in range(15)]
        holder.stdin.close()
        reopened = int(holder.stdout.readline())
        print("15 probes beside 120 idle connections of nobody (%d reopened after the server dropped them): "
              "statuses %s, slowest %.3f s" % (reopened, sorted({s for s, _ in results}, key=str),
                                               max(t for _, t in results)), file=sys.stderr)
        self.assertEqual([s for s, _ in results], [200] * 15)

    def _stop_holder(self, holder):
        if holder.poll() is None:
            holder.kill()
        holder.wait(30)
        for f in (holder.stdin, holder.stdout):
            if f:
                f.close()

    def test_an_api_outage_leaves_the_agent_alive_but_not_ready(self):
        fault = self.api.add_fault(path=r"^/api/v1/pods$", status=500, count=None)
        self.start_agent(wait_watch=False)
        self.wait_for(lambda: probe_in_netns(self.node.path, METRICS_PORT, "/readyz", 5)[0] == 503,
                      "/readyz to report the failing LIST")
        self.wait_for(lambda: "cannot list the pods" in self.agent_output(), "the LIST's failure in the log")
        self.assertEqual(http_get_in_netns(self.node.path, METRICS_PORT, "/healthz"), (200, "ok\n"))
        self.assertEqual(http_get_in_netns(self.node.path, METRICS_PORT, "/readyz"), (503, "not ready\n"))
        self.api.remove_fault(fault)
        self.wait_for(lambda: http_get_in_netns(self.node.path, METRICS_PORT, "/readyz") == (200, "ok\n"),
                      "/readyz once the API server answers")

    # ---- what a pod owner asks for ----------------------------------------------------------------

    def test_namespace_isolation_turned_on_applies_to_a_running_pods_hot_plug(self):
        self.api.add_nad("other", "blue", self.hostlocal_nad_conf(subnet="192.0.2.0/24", start="192.0.2.100"))
        self.add_node_pod()
        self.assertOk(self.add())  # added while the node's config had no isolation
        self.write_k8s(namespaceIsolation=True)  # the operator turns it on
        self.start_agent()
        self.annotate("other/blue")
        self.wait_for(lambda: self.events("InvalidNetworks"), "an InvalidNetworks event")
        self.assertIn("other", self.events("InvalidNetworks")[0])
        self.assertEqual(self.requests(path=r"/namespaces/other/"), [])  # the NAD was never read
        self.assertEqual(self.pod.link_names(), ["eth0", "lo"])
        self.assertEqual(self.entry_ifnames(), ["eth0"])
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    # ---- hot-plug into the wrong namespace -------------------------------------------------------

    def write_entry_netns(self, netns):
        """Rewrites the netns the cache entry records, in place (the file keeps its attributes)."""
        path = self.tree.cache_entry_path(self.container_id)
        with open(path, "r+", encoding="utf-8") as f:
            entry = json.load(f)
            entry["netns"] = netns
            f.seek(0)
            f.truncate()
            json.dump(entry, f)

    def hold_namespace(self, netns):
        """A process in `netns` (until the test ends); returns it."""
        proc = subprocess.Popen(["ip", "netns", "exec", netns.name, "sleep", "600"])
        self.addCleanup(self._stop_holder, proc)
        self.wait_for(lambda: os.stat("/proc/%d/ns/net" % proc.pid).st_ino == os.stat(netns.path).st_ino,
                      "the holder to enter %s" % netns.name)
        return proc

    def wait_refused(self, count, words):
        self.wait_for(lambda: len(self.events("NetworkNamespaceChanged")) >= count, "a NetworkNamespaceChanged event")
        self.assertIn(words, self.events("NetworkNamespaceChanged")[count - 1])

    def test_a_bind_mount_replaced_by_another_namespace_is_refused(self):
        self.add_node_pod()
        self.assertOk(self.add())
        st = os.stat(self.pod.path)
        self.assertEqual(self.entry()["extra"]["netnsIdentity"], {"dev": st.st_dev, "ino": st.st_ino})
        other = self.new_netns()
        subprocess.run(["mount", "--bind", other.path, self.pod.path], check=True)
        mounted = [True]

        def unmount():
            if mounted[0]:
                subprocess.run(["umount", self.pod.path], check=True)
                mounted[0] = False
        self.addCleanup(unmount)
        self.start_agent()
        self.annotate("blue")
        self.wait_refused(1, "names another network namespace")
        self.assertEqual(other.link_names(), ["lo"])  # nothing in the namespace the path names now
        unmount()
        self.assertEqual(self.pod.link_names(), ["eth0", "lo"])  # nor in the sandbox's
        self.assertEqual(self.entry_ifnames(), ["eth0"])
        self.assertEqual(self.status_interfaces(), {"eth0": "cluster"})
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)

    def test_a_proc_path_naming_another_process_or_the_agent_is_refused(self):
        self.add_node_pod()
        sandbox = self.hold_namespace(self.pod)
        proc_path = "/proc/%d/ns/net" % sandbox.pid
        self.assertOk(self.driver("add", proc_path, container_id=self.container_id, cni_args=self.cni_args()))
        self.assertEqual(self.entry()["extra"]["netnsIdentity"]["ino"], os.stat(self.pod.path).st_ino)
        # The sandbox's process is gone and its PID now names another process, in another namespace.
        self._stop_holder(sandbox)
        other = self.new_netns()
        stranger = self.hold_namespace(other)
        self.write_entry_netns("/proc/%d/ns/net" % stranger.pid)
        node_links = set(self.node.link_names())
        agent = self.start_agent()
        self.annotate("blue")
        self.wait_refused(1, "names another network namespace")
        self.assertEqual(other.link_names(), ["lo"])
        # The same with the agent's own namespace (the node's, here).
        self.write_entry_netns("/proc/%d/ns/net" % agent.pid)
        self.annotate("green")
        self.wait_refused(2, "the agent's own network namespace")
        self.assertEqual(set(self.node.link_names()), node_links)
        self.assertEqual(self.pod.link_names(), ["eth0", "lo"])
        self.assertEqual(self.entry_ifnames(), ["eth0"])
        self.assertIn("no network change in sandbox", self.agent_output())
        self.write_entry_netns(self.pod.path)  # the runtime's DEL of the sandbox, as it really is
        self.assertOk(self.delete())
        self.assertNothingLeft(self.pod)


if __name__ == "__main__":
    main()
