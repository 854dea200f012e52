#!/usr/bin/env python3
"""MultiNetworkPolicy at cluster scale: what `manifold agent` costs when every pod of a large
cluster may be a peer. Prints the agent's memory, its watch streams, and the time the rules take to
converge: at start, after a policy change and after a peer change.

    sudo python3 test/bench/policy_scale.py                      # 150,000 pods on 5,000 nodes
    sudo python3 test/bench/policy_scale.py --pods 20000 --nodes 700 --changes 3   # quicker
    sudo python3 test/bench/policy_scale.py --manifold build/rel/manifold --json out.json

Everything runs in a network namespace of ours. The Kubernetes API server double
(test/integration/apiserver) runs inside this process and is fed directly (no admin requests):
`--pods` pods spread over `--nodes` nodes and `--namespaces` namespaces, every second one with an
IP on the NAD network default/blue in its network-status (the others only on the cluster network),
labels app/role/pod-template-hash, namespaces labelled team=t0..t9 (`--all-on-network`: every pod on
blue, the worst case for the agent's peer store). One real pod of the agent's
node, default/bench-web, is ADDed by manifold (the Debian bridge plugin, host-local) with
`multiNetworkPolicy` enabled, under a policy that lets in the role=client pods of the team=t1
namespaces on TCP 8080: its peers are 1 in 100 of those namespaces' pods. The agent is then started
and the bench waits, polling iptables-save in the pod (every 50 ms, bounded by `--timeout`), until
the pod's MNP-IN-net1 allows exactly the peers the bench computed itself:

- start: from the agent's start to the rules in force (it lists policies, this node's pods, every
  pod and the namespaces, metadata only, in pages of 500);
- policy change: the policy's port flipped between 8080 and 9090 (`--changes` times), until every
  allow names the new port;
- peer change: a pod of a team=t1 namespace on blue relabelled role=client (`--changes` times),
  until its IP is allowed.
Memory is the agent's VmRSS and VmHWM (/proc) once converged and at the end; streams are the watches
the double has open for the agent's identity. Budget: VmHWM ≤ 64 MiB at 150,000 pods / 5,000 nodes
(the binary should be a release build: a sanitizer build's shadow memory is not the agent's).
Needs root.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "integration", "apiserver"))
sys.dont_write_bytecode = True

from kdouble.core import ApiServer  # noqa: E402
from kdouble.kubeconfig import render_kubeconfig  # noqa: E402
from kdouble.netpol import MULTI_NETWORK_POLICY, NAMESPACE, namespace_object, policy_object  # noqa: E402
from kdouble.objects import objects_of  # noqa: E402

NODE = "bench-node"
NETWORK = "default/blue"
STATUS = "k8s.v1.cni.cncf.io/network-status"
BUDGET_MIB = 64


def sh(*argv, check=True, **kw):
    return subprocess.run(argv, check=check, capture_output=True, text=True, **kw)


def ip_of(i, base):
    return "%d.%d.%d.%d" % (base, (i >> 16) & 255, (i >> 8) & 255, i & 255)


class Cluster:
    """The simulated cluster in the double, and what the bench expects of the rules."""

    def __init__(self, api, args):
        self.api, self.args = api, args
        self.store = api.store
        self.objects = objects_of(api.store)
        self.peers = set()  # blue IPs of the role=client pods of team=t1 namespaces
        self.candidates = []  # (ns, name, blue ip) of team=t1 pods on blue that are not clients

    def namespace(self, k):
        return "ns-%d" % k

    def team(self, k):
        return "t%d" % (k % 10)

    def feed(self):
        for k in range(self.args.namespaces):
            self.objects.put(NAMESPACE, "", self.namespace(k), namespace_object({"team": self.team(k)}))
        self.objects.put(NAMESPACE, "", "default", namespace_object({}))
        for i in range(self.args.pods):
            k = i % self.args.namespaces
            ns, name = self.namespace(k), "pod-%d" % i
            index = i // self.args.namespaces  # the pod's index in its namespace
            client = index % 100 == 0
            status = [{"name": "cluster", "interface": "eth0", "ips": [ip_of(i, 10)], "default": True}]
            on_blue = index % 2 == 0 or self.args.all_on_network
            if on_blue:
                status.append({"name": NETWORK, "interface": "net1", "ips": [ip_of(i, 11)]})
                if self.team(k) == "t1":
                    (self.peers.add(ip_of(i, 11)) if client else self.candidates.append((ns, name, ip_of(i, 11))))
            labels = {"app": "app-%d" % (i % 100), "role": "client" if client else "worker",
                      "pod-template-hash": "%08x" % random.getrandbits(32)}
            self.store.put_pod(ns, name, uid="uid-%d" % i, labels=labels, annotations={STATUS: json.dumps(status)},
                               node_name="node-%d" % (i % self.args.nodes))

    def set_policy(self, port):
        spec = {"podSelector": {"matchLabels": {"app": "web"}}, "ingress": [{
            "from": [{"namespaceSelector": {"matchLabels": {"team": "t1"}},
                      "podSelector": {"matchLabels": {"role": "client"}}}],
            "ports": [{"protocol": "TCP", "port": port}]}]}
        self.objects.put(MULTI_NETWORK_POLICY, "default", "web-clients", policy_object(spec, "blue"))

    def agent_streams(self):
        return sorted(w["path"] + (" fieldSelector=" + w["fieldSelector"] if w["fieldSelector"] else "")
                      for w in self.store.watches() if (w["user"] or "").startswith("system:serviceaccount"))


class Node:
    """The agent's node: conf, cache, the bench-web pod ADDed by manifold, the agent process."""

    def __init__(self, tmp, api, manifold, kubeconfig):
        self.tmp, self.api, self.manifold, self.kubeconfig = tmp, api, manifold, kubeconfig
        self.conf_dir, self.cni_dir = os.path.join(tmp, "conf"), os.path.join(tmp, "cni")
        self.netns = "mfps-web-%d" % os.getpid()
        self.agent = None
        os.makedirs(self.conf_dir)
        ipam = os.path.join(tmp, "ipam")
        self.conf = {"cniVersion": "1.0.0", "name": "manifold", "type": "manifold", "kubeconfig": kubeconfig,
                     "cniDir": self.cni_dir, "confDir": self.conf_dir, "logLevel": "error",
                     "multiNetworkPolicy": {"enabled": True, "iptablesMode": "nft"},
                     "delegates": [{"cniVersion": "1.0.0", "name": "cluster", "type": "bridge", "bridge": "mfpsbr0",
                                    "ipam": {"type": "host-local", "dataDir": ipam, "subnet": "10.250.0.0/24"}}]}
        with open(os.path.join(self.conf_dir, "00-manifold.conf"), "w", encoding="utf-8") as f:
            json.dump(self.conf, f)
        api.store.put_nad("default", "blue", json.dumps({
            "cniVersion": "1.0.0", "name": "blue", "type": "bridge", "bridge": "mfpsbr1",
            "ipam": {"type": "host-local", "dataDir": ipam, "subnet": "10.251.0.0/16"}}))
        api.store.put_pod("default", "bench-web", uid="uid-web", labels={"app": "web"}, node_name=NODE,
                          annotations={"k8s.v1.cni.cncf.io/networks": "blue"})

    def cni(self, command):
        env = dict(os.environ, CNI_COMMAND=command, CNI_CONTAINERID="bench-web", CNI_IFNAME="eth0",
                   CNI_NETNS="/var/run/netns/" + self.netns, CNI_PATH="/usr/lib/cni",
                   CNI_ARGS="IgnoreUnknown=true;K8S_POD_NAMESPACE=default;K8S_POD_NAME=bench-web;"
                            "K8S_POD_INFRA_CONTAINER_ID=bench-web;K8S_POD_UID=uid-web")
        return subprocess.run([self.manifold], input=json.dumps(self.conf), env=env, capture_output=True, text=True,
                              timeout=120)

    def add(self):
        sh("ip", "netns", "add", self.netns)
        done = self.cni("ADD")
        if done.returncode != 0:
            raise SystemExit("ADD of bench-web failed: %s %s" % (done.stdout, done.stderr))

    def start_agent(self, log):
        argv = [self.manifold, "agent", "--no-install", "--node-name", NODE, "--kubeconfig", self.kubeconfig,
                "--cni-dir", self.cni_dir, "--conf-dir", self.conf_dir, "--metrics-address", "127.0.0.1:9177",
                "--relay-socket", os.path.join(self.tmp, "agent.sock"), "--log-level", "verbose"]
        self.agent = subprocess.Popen(argv, stdout=log, stderr=log)

    def memory(self):
        fields = {}
        with open("/proc/%d/status" % self.agent.pid, encoding="ascii") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    fields[key] = int(value.split()[0]) / 1024.0
        return fields

    def allows(self):
        """{peer ip: port} of MNP-IN-net1's host allows (IPv4)."""
        out = sh("ip", "netns", "exec", self.netns, "iptables-nft-save", "-t", "filter", check=False).stdout
        found = {}
        for line in out.splitlines():
            words = line.split()
            if line.startswith("-A MNP-IN-net1 -s ") and words[3].endswith("/32") and "--ctorigdstport" in words:
                found[words[3][:-3]] = int(words[words.index("--ctorigdstport") + 1])
        return found

    def close(self):
        if self.agent and self.agent.poll() is None:
            self.agent.terminate()
            try:
                self.agent.wait(30)
            except subprocess.TimeoutExpired:
                self.agent.kill()
        self.cni("DEL")
        sh("ip", "netns", "del", self.netns, check=False)


def agent_log(node):
    with open(os.path.join(node.tmp, "agent.log"), encoding="utf-8", errors="replace") as f:
        return f.read()[-3000:]


def wait_until(node, predicate, timeout, what):
    """Seconds until predicate(the pod's allows) holds; fails after `timeout` (a hang guard)."""
    start = time.monotonic()
    while not predicate(node.allows()):
        if node.agent.poll() is not None:
            raise SystemExit("the agent exited (%s) while waiting for %s:\n%s" %
                             (node.agent.returncode, what, agent_log(node)))
        if time.monotonic() - start > timeout:
            raise SystemExit("timed out after %d s waiting for %s; allows %s\nagent log:\n%s" %
                             (timeout, what, sorted(node.allows().items())[:10], agent_log(node)))
        time.sleep(0.05)
    return time.monotonic() - start


def measure(args, tmp):
    api = ApiServer(os.path.join(tmp, "double"), ipv6=False).start()
    info = api.info()
    kubeconfig = os.path.join(tmp, "kubeconfig")
    with open(kubeconfig, "w", encoding="utf-8") as f:
        f.write(render_kubeconfig(info["url"], token=info["token"], ca_file=info["ca_cert"], user="manifold"))
    cluster = Cluster(api, args)
    started = time.monotonic()
    cluster.feed()
    cluster.set_policy(8080)
    fed = time.monotonic() - started
    node = Node(tmp, api, args.manifold, kubeconfig)
    result = {"pods": args.pods, "nodes": args.nodes, "namespaces": args.namespaces, "peers": len(cluster.peers),
              "feed_s": round(fed, 1)}
    try:
        node.add()
        with open(os.path.join(tmp, "agent.log"), "wb") as log:
            node.start_agent(log)
            result["converge_start_s"] = wait_until(
                node, lambda a: set(a) == cluster.peers and set(a.values()) == {8080}, args.timeout, "the peers")
            result["memory_converged_mib"] = node.memory()
            result["streams"] = cluster.agent_streams()
            policy, peer = [], []
            for n in range(args.changes):
                port = 9090 if n % 2 == 0 else 8080
                cluster.set_policy(port)
                policy.append(wait_until(node, lambda a, p=port: set(a.values()) == {p} and len(a) == len(cluster.peers),
                                         args.timeout, "port %d" % port))
                ns, name, ip = cluster.candidates[n]
                api.store.modify_pod(ns, name, labels={"role": "client"})
                cluster.peers.add(ip)
                peer.append(wait_until(node, lambda a: set(a) == cluster.peers, args.timeout, "peer %s" % ip))
            result["policy_change_s"] = {"median": statistics.median(policy), "max": max(policy)}
            result["peer_change_s"] = {"median": statistics.median(peer), "max": max(peer)}
            result["memory_end_mib"] = node.memory()
    finally:
        node.close()
        api.stop()
    return result


def report(r):
    print("MultiNetworkPolicy sync at scale: %d pods, %d nodes, %d namespaces (fed in %.1f s), %d peers"
          % (r["pods"], r["nodes"], r["namespaces"], r["feed_s"], r["peers"]))
    print("  converged after start     %8.2f s" % r["converge_start_s"])
    print("  policy change, median/max %8.3f / %.3f s" % (r["policy_change_s"]["median"], r["policy_change_s"]["max"]))
    print("  peer change, median/max   %8.3f / %.3f s" % (r["peer_change_s"]["median"], r["peer_change_s"]["max"]))
    for key in ("memory_converged_mib", "memory_end_mib"):
        print("  %-25s VmRSS %.1f MiB, VmHWM %.1f MiB" % (key, r[key]["VmRSS"], r[key]["VmHWM"]))
    print("  watch streams (%d):" % len(r["streams"]))
    for s in r["streams"]:
        print("    " + s)
    peak = max(r["memory_converged_mib"]["VmHWM"], r["memory_end_mib"]["VmHWM"])
    verdict = "within" if peak <= BUDGET_MIB else "OVER"
    print("  budget: VmHWM %.1f MiB %s %d MiB%s" % (peak, verdict, BUDGET_MIB,
                                                   "" if r["pods"] >= 150000 else " (budget set for 150,000 pods)"))
    return peak <= BUDGET_MIB or r["pods"] < 150000


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=150000)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--namespaces", type=int, default=500)
    parser.add_argument("--changes", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--manifold", default=os.environ.get("MANIFOLD_BIN", os.path.join(ROOT, "build/rel/manifold")))
    parser.add_argument("--all-on-network", action="store_true", help="every pod has an IP on default/blue")
    parser.add_argument("--json")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (network namespaces, iptables)")
    if not args.inner:  # run again inside a network namespace of ours
        ns = "mfps-node-%d" % os.getpid()
        sh("ip", "netns", "add", ns)
        try:
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            return subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-B", *sys.argv, "--inner"]).returncode
        finally:
            sh("ip", "netns", "del", ns, check=False)
    random.seed(7)
    with tempfile.TemporaryDirectory(prefix="mf-policy-scale-") as tmp:
        result = measure(args, tmp)
    ok = report(result)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
