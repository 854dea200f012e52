"""The node agent under a burst of pod starts: `burst` scenario of bench.py.

N pods of the agent's node (default 100) are created in the API server double at once, each selecting
one macvlan NAD, and N manifold ADDs (each into a namespace of its own, the cluster network a bridge)
start together through the agent's relay, as a kubelet starting N pods would. Measured: the agent's
peak RSS during the burst (VmHWM, reset just before through /proc/<pid>/clear_refs; and the highest
VmRSS a sampler saw every 10 ms), and every request that reached the API server from the moment the
pods were created until the last ADD ended, by kind: the CNI calls' reads (pod and NAD GETs: 0 when
every lookup was answered from memory), the agent's NAD LISTs, the status PUTs and events. The
figures and the lookup metrics' forwards by reason are returned for the report; the budgets
(peak agent RSS <= 30 MB, 0 reads) are printed by bench.py.
"""
import concurrent.futures
import json
import os
import subprocess
import threading
import time

from harness.netns import Netns


def _status_kb(pid, key):
    with open("/proc/%d/status" % pid, encoding="utf-8") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


class _RssSampler(threading.Thread):
    """The highest VmRSS of a process, sampled every 10 ms until stop()."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_kb = 0
        self._done = threading.Event()

    def run(self):
        while not self._done.is_set():
            self.peak_kb = max(self.peak_kb, _status_kb(self.pid, "VmRSS"))
            self._done.wait(0.01)

    def stop(self):
        self._done.set()
        self.join()


def classify(entries):
    """Requests of the burst by kind."""
    out = {"cni_reads": 0, "nad_lists": 0, "status_puts": 0, "events": 0, "watches": 0, "other": 0}
    for e in entries:
        path, method = e["path"], e["method"]
        if e.get("verb") == "watch":
            out["watches"] += 1
        elif path.endswith("/events"):
            out["events"] += 1
        elif method == "PUT" and path.endswith("/status"):
            out["status_puts"] += 1
        elif method == "GET" and path.endswith("/network-attachment-definitions"):
            out["nad_lists"] += 1
        elif method == "GET" and ("/pods/" in path or "/network-attachment-definitions/" in path):
            out["cni_reads"] += 1
        else:
            out["other"] += 1
    out["total"] = len(entries)
    return out


def run_burst(world, kube, agent, cni_env, pods, node, nad, pod_ns, networks_annotation):
    """The burst of `pods` ADDs through `agent` (then DELs, not measured); returns its figures."""
    cni_dir = world.mkdir("cache-burst")
    conf = world.manifold_conf(cni_dir, [world.bridge_conf(name="burst-cluster")], kubeconfig=kube.kubeconfig,
                               agentSocket=agent.relay_socket, logLevel="error")
    names = ["burst-%03d" % i for i in range(pods)]
    spaces = [Netns() for _ in names]
    try:
        for ns in spaces:
            ns.__enter__()
        before = agent.metrics()
        with open("/proc/%d/clear_refs" % agent.proc.pid, "w", encoding="utf-8") as f:
            f.write("5")  # resets VmHWM to the current RSS
        sampler = _RssSampler(agent.proc.pid)
        sampler.start()
        kube.api.clear_requests()
        started = time.monotonic()
        for name in names:
            kube.api.add_pod(pod_ns, name, uid="uid-" + name, annotations={networks_annotation: nad}, node_name=node)

        def add(i):
            args = ("IgnoreUnknown=1;K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s;K8S_POD_INFRA_CONTAINER_ID=%s;"
                    "K8S_POD_UID=uid-%s" % (pod_ns, names[i], names[i], names[i]))
            t = time.monotonic()
            proc = subprocess.run([world.manifold], input=json.dumps(conf), capture_output=True, text=True,
                                  env=cni_env("ADD", spaces[i].path, args=args, container=names[i]), timeout=300)
            return proc.returncode, (time.monotonic() - t) * 1000.0, proc.stdout[-500:]

        with concurrent.futures.ThreadPoolExecutor(max_workers=pods) as pool:
            results = list(pool.map(add, range(pods)))
        elapsed = time.monotonic() - started
        sampler.stop()
        entries = kube.api.requests()
        after = agent.metrics()
        failed = [out for rc, _, out in results if rc != 0]
        figures = {"pods": pods, "failed": len(failed), "first_failure": failed[0] if failed else "",
                   "elapsed_s": elapsed, "add_ms": sorted(ms for _, ms, _ in results),
                   "agent_peak_rss_bytes": max(_status_kb(agent.proc.pid, "VmHWM"), sampler.peak_kb) * 1024,
                   "requests": classify(entries),
                   "lookups": {k: after[k] - before.get(k, 0) for k in after
                               if k.startswith("manifold_agent_lookups_total") and after[k] != before.get(k, 0)},
                   "relay_refused": after.get('manifold_agent_relay_exchanges_total{result="refused"}', 0) -
                   before.get('manifold_agent_relay_exchanges_total{result="refused"}', 0)}

        def delete(i):
            args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s" % (pod_ns, names[i])
            subprocess.run([world.manifold], input=json.dumps(conf), capture_output=True, text=True,
                           env=cni_env("DEL", spaces[i].path, args=args, container=names[i]), timeout=300)

        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(delete, range(pods)))
        for name in names:
            kube.api.delete_pod(pod_ns, name)
        return figures
    finally:
        for ns in spaces:
            ns.delete()
        if os.path.isdir(cni_dir):
            left = [d for d in os.listdir(cni_dir) if not d.startswith(".")]
            if left:
                print("burst: %d cache entries left in %s" % (len(left), cni_dir))
