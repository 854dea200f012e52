#!/usr/bin/env python3
"""manifold's benchmark: what manifold costs on top of the delegates it runs.

    sudo python3 test/bench/bench.py [--quick] [--runs N] [--warmup N] [--json FILE]
                                     [--manifold BIN] [--driver BIN] [--only NAME,...]

Every scenario runs in a node network namespace of ours (the bench process itself enters it, so
the bridge, the macvlan master and the Kubernetes API server double all live there) against a pod
namespace of ours, and compares manifold with its floor measured in the same run, iteration by
iteration (the two alternate, so load changes on a shared machine hit both alike):

  version    VERSION (manifold; bridge's VERSION and a static C plugin's as reference exec costs)
  bridge     ADD, CHECK, DEL with 1 bridge delegate, no Kubernetes: through the libcni driver
             (driver -> manifold -> bridge vs driver -> bridge) and by direct exec
  k8s-1/4/16 ADD, CHECK, DEL with Kubernetes lookups (GET pod, GET NADs, PUT status, events), called
             directly (k8s-N) and through the node agent's API relay (k8s-agent-N, `manifold agent` running)
             against the API server double for 1, 4 and 16 additional macvlan networks, vs the
             sum of the delegates executed directly; the API floor is apireplay (apireplay.c,
             static like the release binary) sending manifold's exact requests from a fresh
             process over one TLS connection, timed like manifold (own = overhead - that floor);
             the same requests replayed by this warm Python process are reported beside it
  scoped     1 bridge network with "sourceRouting" and "mesh" enabled vs the same without
  cache      1 bridge network with 0 vs 200 other containers cached in cniDir
  error      an ADD failing on a missing delegate: the error path and its first C++ exception
  logrotate  an ADD whose log crosses logOptions.maxSize (1 MiB to rotate and gzip) vs one that
             does not: the compression must not lengthen the call
  hotplug    manifold agent (--no-install, node node-a) with 100 pods of its node in cniDir (10 in
             quick mode), each ADDed through the libcni driver with the cluster network, plus one
             test pod: start-up sync (exec -> LIST -> watch open), RSS and CPU over an idle window,
             then hot-plug latency of the test pod's networks annotation alternating "" <-> a
             macvlan NAD (attach and detach apart): from just before the admin call that commits
             the change in the double to the double's answer to the agent's status PUT (request
             log timestamps, so polling does not bias it)
  soak       (long mode only, not in the default set: --only soak) thousands of ADD/DEL cycles
             with manifold killed at random steps or failing random calls under strace, bounded
             by --soak-cycles and --soak-seconds; nothing may be left behind (crash/soak.py)

Each command runs under benchexec (benchexec.c, built on the fly unless BENCHEXEC is set), which
reports its wall time and, in separate traced runs, the peak RSS (VmHWM) and on-CPU time of
manifold alone — never of the delegates it starts. Floors exec the delegates with the exact config bytes manifold
cached. Prints a table and the budgets with PASS/FAIL (timing never makes the exit status
non-zero; a command that fails does), and writes everything to JSON (default bench-results.json).
Needs root.
"""
import argparse
import concurrent.futures
import contextlib
import ctypes
import ctypes.util
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "test", "integration"))
sys.path.insert(0, os.path.join(REPO, "test", "integration", "apiserver"))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

from agent_case import parse_metrics  # noqa: E402
from burst import run_burst  # noqa: E402
from crash.soak import run_soak  # noqa: E402
from harness import ci  # noqa: E402
from harness.netns import Netns, add_veth, remove_stale_namespaces, run  # noqa: E402

PLUGIN_DIR = "/usr/lib/cni"
BRIDGE = "mfbench0"
MASTER = "mfbm0"
CONTAINER = "bench-ctr"
POD_NS, POD_NAME, POD_UID = "default", "bench-pod", "uid-bench-pod"
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
NETWORK_STATUS_ANNOTATION = "k8s.v1.cni.cncf.io/network-status"
MB = 1000 * 1000

# The project's performance budgets (the README's performance summary lists them). They are
# targets: a FAIL printed here is where the work stands, never a failed run.
BUDGET_OWN_ADD_MS = 1.0  # also the no-Kubernetes DEL's
BUDGET_VERSION_MS = 2.0
BUDGET_RSS_BYTES = 5 * MB
BUDGET_BINARY_BYTES = 5 * MB
BUDGET_PER_ATTACHMENT_MS = 0.2
# Sequential API round trips on an ADD's critical path: the pod, every NAD at once, the status.
BUDGET_ROUND_TRIPS = 3
# A rotating call may cost the rename and a fork more than a normal one, not the gzip of the log.
BUDGET_ROTATION_MS = 1.0
K8S_SIZES = (1, 4, 16)
FLOOR_NOTE = "static C plugin (reference)"  # static_floor.c: the machine's exec floor
# The bridge scenario's two ways of calling manifold (its rows' notes).
BRIDGE_VARIANTS = ("libcni driver", "direct exec")
# The two ways a CNI call reaches the API server: its own TLS connection, or the node agent's relay.
K8S_PATHS = (("k8s-%d", "direct"), ("k8s-agent-%d", "through the node agent"))
# TLS set-up CPU per Kubernetes call.
BUDGET_TLS_MS = 1.5
RELAY_ANSWERED = 'manifold_agent_relay_exchanges_total{result="answered"}'
RELAY_REFUSED = 'manifold_agent_relay_exchanges_total{result="refused"}'
NAD_LISTS_OK = 'manifold_agent_nad_lists_total{result="ok"}'
# Through the node agent: the CNI call's reads answered from memory, and the agent's memory and the
# API requests of a burst of pod starts on its node.
BUDGET_AGENT_READS = 0
BUDGET_BURST_RSS_BYTES = 30 * MB
BURST_PODS = 100
CACHED_CONTAINERS = 200
BENCH_NET = "manifold-bench"


class BenchError(RuntimeError):
    """A measured command failed or left something behind: the numbers would be meaningless."""


# ---- statistics ------------------------------------------------------------------------------------

def percentile(values, q):
    """The q-th percentile (0-100) by linear interpolation; None for no values."""
    if not values:
        return None
    v = sorted(values)
    pos = (len(v) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def summary(values):
    """median, p90, min, max and n of a list of milliseconds."""
    if not values:
        return None
    return {"median": statistics.median(values), "p90": percentile(values, 90),
            "min": min(values), "max": max(values), "n": len(values)}


def fit_line(xs, ys):
    """Least-squares slope and intercept of ys over xs."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return slope, my - slope * mx


# ---- running commands ------------------------------------------------------------------------------

def build_c_tool(work, name, env_var=None, flags=(), libs=()):
    """A bench tool written in C: $env_var when it names an executable (CMake's build), else
    test/bench/<name>.c compiled with `cc -O2 -Wall` and `flags`, linked with `libs`, into work."""
    path = os.environ.get(env_var) if env_var else None
    if path and os.access(path, os.X_OK):
        return path
    out = os.path.join(work, name)
    run(["cc", "-O2", "-Wall"] + list(flags) + ["-o", out, os.path.join(HERE, name + ".c")] + list(libs))
    return out


def build_benchexec(work):
    """The benchexec binary: $BENCHEXEC, else compiled from benchexec.c into work."""
    return build_c_tool(work, "benchexec", "BENCHEXEC")


def build_apireplay(work):
    """The apireplay binary: $APIREPLAY, else compiled from apireplay.c into work, linked statically
    from OpenSSL's archives like the static release manifold (the CMake target does the same)."""
    return build_c_tool(work, "apireplay", "APIREPLAY",
                        flags=("-ffunction-sections", "-fdata-sections", "-static", "-Wl,--gc-sections"),
                        libs=("-l:libssl.a", "-l:libcrypto.a", "-pthread"))


def build_static_floor(work):
    """static_floor (the smallest static plugin: answers VERSION), compiled from static_floor.c."""
    return build_c_tool(work, "static_floor", flags=("-static",))


class Executor:
    """Runs one command under benchexec and returns its measurement."""

    def __init__(self, benchexec, work):
        self.benchexec = benchexec
        self.stdin_path = os.path.join(work, "stdin")
        self.stdout_path = os.path.join(work, "stdout")
        self.stderr_path = os.path.join(work, "stderr")

    def __call__(self, argv, env, stdin=b"", traced=False, check=True, what=None):
        with open(self.stdin_path, "wb") as f:
            f.write(stdin if isinstance(stdin, bytes) else stdin.encode())
        cmd = [self.benchexec] + (["--self"] if traced else []) + [
            "--stdin", self.stdin_path, "--stdout", self.stdout_path, "--stderr", self.stderr_path,
            "--"] + argv
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise BenchError("benchexec failed: %s" % proc.stderr)
        m = json.loads(proc.stdout.strip().splitlines()[-1])
        with open(self.stdout_path, encoding="utf-8", errors="replace") as f:
            m["stdout"] = f.read()
        with open(self.stderr_path, encoding="utf-8", errors="replace") as f:
            m["stderr"] = f.read()
        m["ms"] = m["wall_us"] / 1000.0
        if check and (m["exit"] != 0 or m["signal"] != 0):
            raise BenchError("%s failed (exit %s, signal %s)\nstdout: %s\nstderr: %s" % (
                what or " ".join(argv), m["exit"], m["signal"], m["stdout"][-3000:], m["stderr"][-3000:]))
        return m


def base_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("CNI_")}
    env.pop("NETCONFPATH", None)
    env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    return env


def cni_env(command, netns, ifname="eth0", args=None, container=CONTAINER):
    env = base_env()
    env.update({"CNI_COMMAND": command, "CNI_CONTAINERID": container, "CNI_NETNS": netns,
                "CNI_IFNAME": ifname, "CNI_PATH": PLUGIN_DIR})
    if args:
        env["CNI_ARGS"] = args
    return env


def enter_netns(path):
    """Moves this (single-threaded) process into the network namespace at path for good."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    with open(path, "rb") as f:
        if libc.setns(f.fileno(), 0x40000000) != 0:
            err = ctypes.get_errno()
            raise OSError(err, "setns(%s): %s" % (path, os.strerror(err)))


# ---- the world -------------------------------------------------------------------------------------

class World:
    """Node and pod namespaces, temp directories and helpers shared by every scenario."""

    def __init__(self, stack, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="mf-bench-")
        stack.callback(shutil.rmtree, self.work, True)
        self.node = stack.enter_context(Netns())
        self.pod = stack.enter_context(Netns())
        add_veth(self.node, MASTER, MASTER + "p")
        enter_netns(self.node.path)
        self.exec = Executor(build_benchexec(self.work), self.work)
        self.apireplay = build_apireplay(self.work)
        self.manifold = args.manifold
        self.driver = args.driver
        self.conf_dir = self.mkdir("netconf")
        self.libcni_cache = self.mkdir("libcni-cache")
        self.ipam_dir = self.mkdir("ipam")
        self.log_dir = self.mkdir("log")
        self.bin_dir = self.mkdir("bin")
        os.symlink(self.manifold, os.path.join(self.bin_dir, "manifold"))

    def mkdir(self, name):
        path = os.path.join(self.work, name)
        os.makedirs(path, exist_ok=True)
        return path

    # configs

    def bridge_conf(self, name="cluster", **extra):
        conf = {"cniVersion": "1.0.0", "name": name, "type": "bridge", "bridge": BRIDGE,
                "isGateway": True, "ipMasq": False, "hairpinMode": False,
                "ipam": {"type": "host-local", "subnet": "192.0.2.0/24", "gateway": "192.0.2.1",
                         "dataDir": self.ipam_dir, "routes": [{"dst": "0.0.0.0/0"}]}}
        conf.update(extra)
        return conf

    def macvlan_conf(self, i):
        return {"cniVersion": "1.0.0", "name": "bench-net-%d" % i, "type": "macvlan",
                "master": MASTER, "mode": "bridge",
                "ipam": {"type": "static", "addresses": [{"address": "198.51.100.%d/24" % (10 + i)}]}}

    def manifold_conf(self, cni_dir, delegates, **extra):
        conf = {"cniVersion": "1.0.0", "name": BENCH_NET, "type": "manifold",
                "cniDir": cni_dir, "binDir": PLUGIN_DIR, "logFile": os.path.join(self.log_dir, "manifold.log"),
                "logLevel": "verbose", "logToStderr": False, "delegates": delegates}
        conf.update(extra)
        return conf

    # runs

    def run_manifold(self, command, conf, args=None, traced=False):
        return self.exec([self.manifold], cni_env(command, self.pod.path, args=args),
                         json.dumps(conf), traced=traced, what="manifold " + command)

    def run_driver(self, verb, netname):
        env = base_env()
        env.update({"NETCONFPATH": self.conf_dir, "CNI_PATH": ":".join([self.bin_dir, PLUGIN_DIR]),
                    "CNI_CACHE_DIR": self.libcni_cache, "CNI_CONTAINERID": CONTAINER,
                    "CNI_IFNAME": "eth0", "DRIVER_TIMEOUT": "60"})
        return self.exec([self.driver, verb, netname, self.pod.path], env, what="driver %s %s" % (verb, netname))

    def write_netconf(self, conf, filename):
        with open(os.path.join(self.conf_dir, filename), "w", encoding="utf-8") as f:
            json.dump(conf, f)

    def assert_pod_clean(self, what):
        names = self.pod.link_names()
        if names != ["lo"]:
            raise BenchError("%s left links in the pod namespace: %s" % (what, names))

    @staticmethod
    def entry_path(cni_dir, container=CONTAINER, network=BENCH_NET, ifname="eth0"):
        """manifold's cache entry of (container, network, CNI_IFNAME)."""
        return os.path.join(cni_dir, container, "%s@%s.json" % (network, ifname))

    @staticmethod
    def cached_record(cni_dir, container=CONTAINER):
        with open(World.entry_path(cni_dir, container), encoding="utf-8") as f:
            return json.load(f)


class FloorPlan:
    """The delegates of one manifold ADD, replayed directly with the exact bytes manifold cached."""

    def __init__(self, world, record):
        self.world = world
        self.attachments = [{"config": a["config"], "result": a["result"], "ifname": a["ifname"],
                             "args": a.get("extra", {}).get("cniArgs", ""), "name": a["name"]}
                            for a in record["attachments"]]

    def _env(self, command, a):
        return cni_env(command, self.world.pod.path, ifname=a["ifname"], args=a["args"] or None)

    @staticmethod
    def _type(a):
        return json.loads(a["config"])["type"]

    @staticmethod
    def _with_prev(a, result_text):
        conf = json.loads(a["config"])
        conf["prevResult"] = json.loads(result_text)
        return json.dumps(conf)

    def add(self):
        total, results = 0.0, []
        for a in self.attachments:
            m = self.world.exec([os.path.join(PLUGIN_DIR, self._type(a))], self._env("ADD", a),
                                a["config"], what="%s ADD (floor)" % a["name"])
            total += m["ms"]
            results.append(m["stdout"])
        self.results = results
        return total

    def check(self):
        total = 0.0
        for a, res in zip(self.attachments, self.results):
            total += self.world.exec([os.path.join(PLUGIN_DIR, self._type(a))], self._env("CHECK", a),
                                     self._with_prev(a, res), what="%s CHECK (floor)" % a["name"])["ms"]
        return total

    def delete(self):
        total = 0.0
        for a, res in reversed(list(zip(self.attachments, self.results))):
            total += self.world.exec([os.path.join(PLUGIN_DIR, self._type(a))], self._env("DEL", a),
                                     self._with_prev(a, res), what="%s DEL (floor)" % a["name"])["ms"]
        return total


# ---- scenarios -------------------------------------------------------------------------------------

VERBS = ("ADD", "CHECK", "DEL")


def new_row(scenario, verb, note=""):
    return {"scenario": scenario, "verb": verb, "note": note, "total": [], "floor": [], "api": [],
            "api_fresh": [], "api_fresh_cpu": [], "rss_kb": [], "anon_kb": [], "cpu": [], "minflt": [], "requests": []}


def record_traced(row, m):
    """Keeps what a traced (--self) run measured: manifold's peak RSS and its own CPU time."""
    row["rss_kb"].append(m["vmhwm_kb"])
    if m["rss_anon_kb"] >= 0:
        row["anon_kb"].append(m["rss_anon_kb"])
    if m["cpu_us"] >= 0:
        row["cpu"].append(m["cpu_us"] / 1000.0)
    if m["minflt"] >= 0:
        row["minflt"].append(m["minflt"])


def manifold_cycle(world, conf, rows, args=None, traced=False):
    """ADD, CHECK, DEL of manifold; appends the wall times (traced: RSS and CPU) to rows[verb]."""
    for verb in VERBS:
        m = world.run_manifold(verb, conf, args=args, traced=traced)
        if traced:
            record_traced(rows[verb], m)
        else:
            rows[verb]["total"].append(m["ms"])
    world.assert_pod_clean("manifold DEL")


def floor_cycle(plan, rows):
    rows["ADD"]["floor"].append(plan.add())
    rows["CHECK"]["floor"].append(plan.check())
    rows["DEL"]["floor"].append(plan.delete())
    plan.world.assert_pod_clean("the delegates' DEL")


def capture_plan(world, conf, cni_dir, args=None):
    """One unmeasured manifold ADD whose cache record becomes the floor plan, then DEL."""
    world.run_manifold("ADD", conf, args=args)
    plan = FloorPlan(world, World.cached_record(cni_dir))
    world.run_manifold("DEL", conf, args=args)
    world.assert_pod_clean("manifold DEL")
    return plan


def paired_iterations(args, measure_a, measure_b):
    """Warm-up, then runs iterations alternating which side goes first."""
    for _ in range(args.warmup):
        measure_a(False)
        measure_b(False)
    for i in range(args.runs):
        if i % 2 == 0:
            measure_a(True)
            measure_b(True)
        else:
            measure_b(True)
            measure_a(True)


def scenario_version(world, args):
    """VERSION of manifold, of bridge (a Go plugin) and of static_floor (this machine's exec floor)."""
    row_m, row_b = new_row("version", "VERSION"), new_row("version", "VERSION", "bridge (reference)")
    row_s = new_row("version", "VERSION", FLOOR_NOTE)
    floor = build_static_floor(world.work)
    stdin = '{"cniVersion":"1.0.0"}'
    env = base_env()
    env["CNI_COMMAND"] = "VERSION"

    def m(keep):
        r = world.exec([world.manifold], env, stdin, what="manifold VERSION")
        if keep:
            row_m["total"].append(r["ms"])

    def b(keep):
        for row, path, what in ((row_b, os.path.join(PLUGIN_DIR, "bridge"), "bridge VERSION"),
                                (row_s, floor, "static_floor VERSION")):
            r = world.exec([path], env, stdin, what=what)
            if keep:
                row["total"].append(r["ms"])

    paired_iterations(args, m, b)
    for _ in range(args.traced_runs):
        record_traced(row_m, world.exec([world.manifold], env, stdin, traced=True))
        record_traced(row_s, world.exec([floor], env, stdin, traced=True))
    return [row_m, row_b, row_s]


def machine_floor(rows):
    """What a static plugin costs on this machine before it does anything, and the no-Kubernetes
    overheads beyond one such exec (manifold's own work, the part a faster exec would not remove)."""
    r = find_row(rows, "version", "VERSION", FLOOR_NOTE)
    if r is None:
        return None
    out = {"exec_ms": r["total_ms"]["median"], "cpu_ms": r.get("cpu_ms") and r["cpu_ms"]["median"],
           "minor_faults": r.get("minor_faults"), "beyond_exec_ms": {}}
    for verb in ("ADD", "DEL"):
        for variant in BRIDGE_VARIANTS:
            b = find_row(rows, "bridge", verb, variant)
            if b and b.get("overhead_ms"):
                out["beyond_exec_ms"]["%s (%s)" % (verb, variant)] = b["overhead_ms"]["median"] - out["exec_ms"]
    return out


def print_machine_floor(floor):
    """Prints machine_floor()'s figures after the budgets (nothing when VERSION was not measured)."""
    if floor is None:
        return
    cpu = "" if floor["cpu_ms"] is None else ", %.2f ms of CPU" % floor["cpu_ms"]
    faults = "" if floor["minor_faults"] is None else ", %d page faults" % floor["minor_faults"]
    print("\nmachine floor: a static C plugin's VERSION (static_floor.c) takes %.2f ms%s%s" % (
        floor["exec_ms"], cpu, faults))
    for what, value in floor["beyond_exec_ms"].items():
        print("  no-Kubernetes %s overhead beyond that exec: %.2f ms" % (what, value))


def scenario_bridge(world, args):
    """1 bridge delegate, no Kubernetes: libcni driver and direct exec."""
    cni_dir = world.mkdir("cache-bridge")
    conf = world.manifold_conf(cni_dir, [world.bridge_conf()])
    world.write_netconf(conf, "10-manifold.conf")
    world.write_netconf(world.bridge_conf(), "20-cluster.conf")
    drv, direct = ({v: new_row("bridge", v, variant) for v in VERBS} for variant in BRIDGE_VARIANTS)

    def via_driver(net, key):
        def go(keep):
            for verb in VERBS:
                ms = world.run_driver(verb.lower(), net)["ms"]
                if keep:
                    drv[verb][key].append(ms)
            world.assert_pod_clean("driver DEL of " + net)
        return go

    paired_iterations(args, via_driver(BENCH_NET, "total"), via_driver("cluster", "floor"))
    plan = capture_plan(world, conf, cni_dir)

    def m(keep):
        manifold_cycle(world, conf, direct if keep else {v: new_row("", v) for v in VERBS})

    def f(keep):
        floor_cycle(plan, direct if keep else {v: new_row("", v) for v in VERBS})

    paired_iterations(args, m, f)
    for _ in range(args.traced_runs):
        manifold_cycle(world, conf, direct, traced=True)
    return list(drv.values()) + list(direct.values())


class Kube:
    """The API server double in the node namespace, with the pod and NADs of the k8s scenarios."""

    def __init__(self, stack, world):
        from apiserver_double import ApiServerDouble
        self.api = stack.enter_context(ApiServerDouble(ipv6=False))
        self.api.set_options(strict_resource_version=False)
        self.kubeconfig = os.path.join(world.work, "kubeconfig")
        # As `manifold install` (the DaemonSet) writes it: a token file, in JSON.
        self.api.write_kubeconfig(self.kubeconfig, auth="tokenFile", fmt="json")
        self.token_file = self.kubeconfig + ".token"  # write_kubeconfig's default for tokenFile
        self.nads = 0
        self.replays = 0
        self.starts = 0

    def set_networks(self, world, k):
        while self.nads < k:
            self.nads += 1
            self.api.add_nad(POD_NS, "bench-net-%d" % self.nads, world.macvlan_conf(self.nads))
        names = ",".join("bench-net-%d" % i for i in range(1, k + 1))
        # On the agent's node: its relay serves only pods of its own node.
        self.api.add_pod(POD_NS, POD_NAME, uid=POD_UID, annotations={NETWORKS_ANNOTATION: names},
                         node_name=HOTPLUG_NODE)

    @staticmethod
    def cni_args(uid=POD_UID):
        return ("IgnoreUnknown=1;K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s;K8S_POD_INFRA_CONTAINER_ID=%s;"
                "K8S_POD_UID=%s" % (POD_NS, POD_NAME, CONTAINER, uid))

    def start_pod(self, agent):
        """The bench pod created again under a new UID (a new pod start); returns its CNI_ARGS once
        the agent has LISTed the NADs for it (a hang guard bounds the wait, never a verdict)."""
        pod = self.api.get_pod(POD_NS, POD_NAME)
        self.starts += 1
        uid = "%s-%d" % (POD_UID, self.starts)
        lists = agent.metrics().get(NAD_LISTS_OK, 0)
        self.api.delete_pod(POD_NS, POD_NAME)
        self.api.add_pod(POD_NS, POD_NAME, uid=uid, annotations=pod["metadata"].get("annotations"),
                         node_name=HOTPLUG_NODE)
        deadline = time.monotonic() + 30
        while agent.metrics().get(NAD_LISTS_OK, 0) <= lists:
            agent.check_alive()
            if time.monotonic() > deadline:
                raise BenchError("the agent did not LIST the NADs of a new pod\n" + agent.log_tail())
            time.sleep(0.002)
        self.take_requests()
        return self.cni_args(uid)

    def take_requests(self):
        entries = self.api.requests()
        self.api.clear_requests()
        return entries

    @staticmethod
    def classify(entries):
        """Counts of pod GETs, NAD GETs/LISTs, status PUTs, events and others."""
        out = {"pod": 0, "nad": 0, "status": 0, "events": 0, "other": 0}
        for e in entries:
            path = e["path"]
            if path.endswith("/events"):
                out["events"] += 1
            elif "network-attachment-definitions" in path:
                out["nad"] += 1
            elif e["method"] == "PUT" and path.endswith("/status"):
                out["status"] += 1
            elif e["method"] == "GET" and "/pods/" in path:
                out["pod"] += 1
            else:
                out["other"] += 1
        out["total"] = len(entries)
        out["lookups_and_status"] = out["pod"] + out["nad"] + out["status"]
        # A request the double had received before it answered the one before it on the connection
        # was pipelined: it cost no round trip of its own.
        out["round_trips"] = sum(1 for e in entries if not e.get("pipelined", False))
        # Every request went over a TLS session resumed from an earlier invocation.
        out["tls_resumed"] = bool(entries) and all(e.get("tls_resumed", False) for e in entries)
        return out

    def prepare(self, entries):
        """manifold's requests, ready to be sent again: (method, target, body, headers). Status PUTs
        drop their resourceVersion (accepted: strict mode is off) and events get a new name, so
        every replayed request is served like the original instead of conflicting."""
        self.replays += 1
        prepared = []
        for e in entries:
            body = e["body"] or None
            if body and e["method"] in ("PUT", "POST"):
                obj = json.loads(body)
                meta = obj.get("metadata", {})
                if e["method"] == "PUT":
                    meta.pop("resourceVersion", None)
                elif e["path"].endswith("/events"):
                    meta["name"] = "%s-replay%d" % (meta.get("name", "event"), self.replays)
                body = json.dumps(obj, separators=(",", ":"))
            headers = {k: v for k, v in e["headers"].items()
                       if k in ("authorization", "accept", "content-type", "user-agent")}
            target = e["path"] + ("?" + e["query"] if e["query"] else "")
            prepared.append((e["method"], target, body, headers))
        return prepared

    def replay(self, entries):
        """The warm in-process API time: manifold's requests replayed by this Python process over
        one fresh TLS connection, its SSL context made outside the timed region and its OpenSSL
        already initialised; returns the wall time in ms."""
        prepared = self.prepare(entries)
        ctx = self.api.ssl_context()
        start = time.perf_counter()
        conn = http.client.HTTPSConnection("127.0.0.1", self.api.port, context=ctx, timeout=30)
        try:
            conn.connect()
            for method, target, body, headers in prepared:
                conn.request(method, target, body=body, headers=headers)
                resp = conn.getresponse()
                resp.read()
                if resp.status >= 400:
                    raise BenchError("replayed %s %s got %d" % (method, target, resp.status))
        finally:
            conn.close()
        return (time.perf_counter() - start) * 1000.0

    def fresh_replay(self, world, entries, traced=False):
        """The fresh-process API floor: apireplay (apireplay.c, static like the release manifold)
        sends manifold's requests over one TLS connection it sets up from scratch — OpenSSL
        initialisation, SSL_CTX, the CA file, the token file, handshake with verification —
        timed by benchexec from fork to reaping like manifold; returns the wall time in ms. The pod
        is put back as it was before, so manifold's next ADD finds the same pod as without it.
        traced: returns benchexec's measurement (with apireplay's on-CPU time) instead."""
        pod = self.api.get_pod(POD_NS, POD_NAME)
        m = world.exec(self.apireplay_argv(world, entries), base_env(), traced=traced, what="apireplay (API floor)")
        self.api.add_pod(POD_NS, POD_NAME, raw=pod)
        return m if traced else m["ms"]

    def apireplay_argv(self, world, entries):
        """Writes apireplay's request file for entries; returns its command line (the kubeconfig's
        server, CA file and token file: what manifold used)."""
        path = os.path.join(world.work, "api-requests")
        with open(path, "wb") as f:
            for (method, target, body, headers), pipelined in zip(self.prepare(entries),
                                                                  [e.get("pipelined", False) for e in entries]):
                data = (body or "").encode()
                f.write(("%s %s %d%s\n" % (method, target, len(data), " pipelined" if pipelined else "")).encode())
                for k, v in headers.items():
                    if k != "authorization":  # apireplay sends the token of the token file
                        f.write(("%s: %s\n" % (k, v)).encode())
                f.write(b"\n" + data)
        return [world.apireplay, "--server", self.api.url, "--ca", self.api.ca_file,
                "--token-file", self.token_file, "--session", os.path.join(world.work, "apireplay.session"), path]


def scenario_k8s(world, args, kube, k, agent=None):
    """ADD/CHECK/DEL with k NADs. agent: a running `manifold agent`, whose API relay the CNI calls
    then use (rows "k8s-agent-<k>"); without it the rows "k8s-<k>" call the API server directly
    (agentSocket names a socket that does not exist: what a node without the agent pays). Through
    the agent every measured ADD is a new pod start, as on a node: the pod is created again under a
    new UID first, and the ADD starts once the agent has LISTed its namespace's NADs for it (the
    kubelet sends it after creating the sandbox), so its lookups are answered from memory."""
    relay = agent.relay_socket if agent else None
    name = ("k8s-agent-%d" if relay else "k8s-%d") % k
    cni_dir = world.mkdir("cache-" + name)
    conf = world.manifold_conf(cni_dir, [world.bridge_conf()], kubeconfig=kube.kubeconfig,
                               agentSocket=relay or os.path.join(world.work, "no-agent.sock"))
    kube.set_networks(world, k)
    cni_args = kube.cni_args()
    rows = {v: new_row(name, v, "%d NAD%s + cluster network" % (k, "s" if k > 1 else "")) for v in VERBS}
    scratch = {v: new_row("", v) for v in VERBS}
    kube.take_requests()
    world.run_manifold("ADD", conf, args=cni_args)
    last_add = [kube.take_requests()]  # the requests of manifold's latest ADD
    plan = FloorPlan(world, World.cached_record(cni_dir))
    world.run_manifold("DEL", conf, args=cni_args)
    world.assert_pod_clean("manifold DEL")
    kube.take_requests()

    def m(keep):
        target = rows if keep else scratch
        args_now = kube.start_pod(agent) if agent else cni_args
        for verb in VERBS:
            ms = world.run_manifold(verb, conf, args=args_now)["ms"]
            entries = kube.take_requests()
            target[verb]["total"].append(ms)
            target[verb]["requests"].append(Kube.classify(entries))
            if verb == "ADD":
                last_add[0] = entries
                target[verb]["api"].append(kube.replay(entries))
                kube.take_requests()
        world.assert_pod_clean("manifold DEL")

    def f(keep):
        target = rows if keep else scratch
        floor_cycle(plan, target)
        target["ADD"]["api_fresh"].append(kube.fresh_replay(world, last_add[0]))
        kube.take_requests()

    paired_iterations(args, m, f)
    for _ in range(args.traced_runs):
        manifold_cycle(world, conf, rows, args=kube.start_pod(agent) if agent else cni_args, traced=True)
        entries = kube.take_requests()
        # Through the agent the pod is new: its status PUT is the one to replay (CHECK and DEL make
        # no request with a cache entry).
        cpu_us = kube.fresh_replay(world, entries if agent else last_add[0], traced=True)["cpu_us"]
        if cpu_us >= 0:
            rows["ADD"]["api_fresh_cpu"].append(cpu_us / 1000.0)
        kube.take_requests()
    return list(rows.values())


def wait_for_relay(agent):
    """Waits until the agent's relay socket exists (a hang guard bounds it, never a verdict)."""
    deadline = time.monotonic() + 30
    while not os.path.exists(agent.relay_socket):
        agent.check_alive()
        if time.monotonic() > deadline:
            raise BenchError("the agent's relay socket did not appear\n" + agent.log_tail())
        time.sleep(0.05)


def scenario_k8s_agent(world, args, kube):
    """The k8s rows again with `manifold agent` running and its API relay in use."""
    with contextlib.ExitStack() as stack:
        agent = AgentProcess(world, kube, world.mkdir("cache-k8s-agent"))
        stack.callback(agent.stop)
        wait_for_relay(agent)
        rows = []
        for k in K8S_SIZES:
            before = agent.metrics().get(RELAY_ANSWERED, 0)
            rows += scenario_k8s(world, args, kube, k, agent=agent)
            answered = agent.metrics().get(RELAY_ANSWERED, 0) - before
            refused = agent.metrics().get(RELAY_REFUSED, 0)
            if answered < args.runs or refused:
                raise BenchError("k8s-agent-%d: the agent answered %d exchanges and refused %d: the CNI calls did "
                                 "not go through it\n%s" % (k, answered, refused, agent.log_tail()))
        burst = run_burst(world, kube, agent, cni_env, args.burst_pods, HOTPLUG_NODE, "bench-net-1", POD_NS,
                          NETWORKS_ANNOTATION)
        if burst["failed"]:
            raise BenchError("burst: %d of %d ADDs failed: %s" % (burst["failed"], burst["pods"],
                                                                  burst["first_failure"]))
        return rows, burst


def scenario_scoped(world, args):
    """sourceRouting + mesh on the one network vs the same network unscoped."""
    scoped_dir, plain_dir = world.mkdir("cache-scoped"), world.mkdir("cache-unscoped")
    scoping = {"sourceRouting": {"enabled": True}, "mesh": {"enabled": True}}
    scoped = world.manifold_conf(scoped_dir, [world.bridge_conf(**scoping)])
    plain = world.manifold_conf(plain_dir, [world.bridge_conf()])
    # Is scoping wired into this binary? Then ADD leaves a `from <ip>` rule in the pod.
    world.run_manifold("ADD", scoped)
    rules = world.pod.ip("-4", "rule", "show")
    record = World.cached_record(scoped_dir)
    world.run_manifold("DEL", scoped)
    world.assert_pod_clean("manifold DEL")
    has_state = any("scoping" in a.get("extra", {}) for a in record["attachments"])
    if not has_state or not re.search(r"\bfrom 192\.0\.2\.", rules):
        return None
    rows = {v: new_row("scoped", v, "sourceRouting + mesh vs unscoped") for v in VERBS}
    plain_rows = {v: new_row("", v) for v in VERBS}

    def s(keep):
        manifold_cycle(world, scoped, rows if keep else {v: new_row("", v) for v in VERBS})

    def p(keep):
        manifold_cycle(world, plain, plain_rows if keep else {v: new_row("", v) for v in VERBS})

    paired_iterations(args, s, p)
    for v in VERBS:
        rows[v]["floor"] = plain_rows[v]["total"]
        rows[v]["floor_label"] = "unscoped manifold"
    for _ in range(args.traced_runs):
        manifold_cycle(world, scoped, rows, traced=True)
    return list(rows.values())


def scenario_error(world, args):
    """An ADD that fails (its delegate binary does not exist): the cost of manifold's error path,
    including its first C++ exception, against a successful VERSION as the exec reference."""
    conf = world.manifold_conf(world.mkdir("cache-error"), [{"cniVersion": "1.0.0", "name": "broken",
                                                             "type": "no-such-plugin"}])
    row = new_row("error", "ADD", "missing delegate -> CNI error 101")
    env = cni_env("ADD", world.pod.path)

    def go(traced):
        m = world.exec([world.manifold], env, json.dumps(conf), traced=traced, check=False)
        if m["exit"] != 1 or '"code": 101' not in m["stdout"]:
            raise BenchError("the failing ADD did not fail with error 101: %s" % m["stdout"][-2000:])
        return m

    for _ in range(args.warmup):
        go(False)
    for _ in range(args.runs):
        row["total"].append(go(False)["ms"])
    for _ in range(args.traced_runs):
        record_traced(row, go(True))
    return [row]


def populate_cache(world, cni_dir, template_conf, count):
    """count cache entries of other containers (copies of a real record under other IDs)."""
    world.run_manifold("ADD", template_conf)
    record = World.cached_record(cni_dir)
    world.run_manifold("DEL", template_conf)
    world.assert_pod_clean("manifold DEL")
    for i in range(count):
        cid = "other-%064d" % i
        record["containerId"] = cid
        path = World.entry_path(cni_dir, cid)
        os.makedirs(os.path.dirname(path), mode=0o700)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(record, f)
        os.chmod(path, 0o600)


def scenario_cache(world, args):
    empty_dir, full_dir = world.mkdir("cache-0"), world.mkdir("cache-%d" % CACHED_CONTAINERS)
    empty = world.manifold_conf(empty_dir, [world.bridge_conf()])
    full = world.manifold_conf(full_dir, [world.bridge_conf()])
    populate_cache(world, full_dir, full, CACHED_CONTAINERS)
    rows = {v: new_row("cache", v, "%d vs 0 cached containers" % CACHED_CONTAINERS) for v in VERBS}
    base = {v: new_row("", v) for v in VERBS}

    def a(keep):
        manifold_cycle(world, full, rows if keep else {v: new_row("", v) for v in VERBS})

    def b(keep):
        manifold_cycle(world, empty, base if keep else {v: new_row("", v) for v in VERBS})

    paired_iterations(args, a, b)
    for v in VERBS:
        rows[v]["floor"] = base[v]["total"]
        rows[v]["floor_label"] = "0 cached containers"
    return list(rows.values())


def scenario_logrotate(world, args):
    """An ADD whose first log line crosses logOptions.maxSize (rotation + gzip of a full 1 MiB log)
    vs the same ADD with a small log: the compression runs in a detached process, so the rotating
    call should cost only the rename and a fork."""
    log = os.path.join(world.log_dir, "rotate.log")
    conf = world.manifold_conf(world.mkdir("cache-logrotate"), [world.bridge_conf()], logFile=log,
                               logOptions={"maxSize": 1, "maxBackups": 1, "maxAge": 0, "compress": True})
    rotating, normal = new_row("logrotate", "ADD", "log crosses maxSize (1 MiB, gzip) vs not"), new_row("", "ADD")
    line = "x" * 1023 + "\n"

    def run(row, keep, prefill):
        with open(log, "w", encoding="utf-8") as f:
            f.write(line * 1024 if prefill else "")
        m = world.run_manifold("ADD", conf)
        if keep:
            row["total"].append(m["ms"])
        world.run_manifold("DEL", conf)
        world.assert_pod_clean("manifold DEL")

    paired_iterations(args, lambda keep: run(rotating, keep, True), lambda keep: run(normal, keep, False))
    rotating["floor"] = normal["total"]
    rotating["floor_label"] = "ADD without rotation"
    return [rotating]


# ---- hotplug: manifold agent --------------------------------------------------------------------

HOTPLUG_NET = "manifold-hotplug"
HOTPLUG_NAD = "bench-hotplug"
HOTPLUG_NODE = "node-a"
HOTPLUG_TARGET = "hp-target"
AGENT_METRICS_PORT = 9155
# "within about a second on this machine": annotation change committed -> network-status written.
BUDGET_HOTPLUG_MS = 1000.0
BUDGET_AGENT_RSS_BYTES = 20 * MB
BUDGET_AGENT_CPU_PERCENT = 1.0
HOTPLUG_WAIT_S = 60  # a hang guard only: never decides a number


def hotplug_container(name):
    return "%s-%s" % (name, "c" * 48)


def proc_counters(pid):
    """The agent's RSS figures (kB), its CPU ticks (utime + stime, every thread), its on-CPU
    nanoseconds and context switches (summed over its threads), from /proc."""
    out = {}
    with open("/proc/%d/status" % pid, encoding="utf-8") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "Threads"):
                out[key] = int(value.split()[0])
    with open("/proc/%d/stat" % pid, encoding="utf-8") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    out["ticks"] = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    switches = 0
    out["cpu_ns"] = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid), encoding="utf-8") as f:
                out["cpu_ns"] += int(f.read().split()[0])  # the scheduler's exact on-CPU time
            with open("/proc/%d/task/%s/status" % (pid, tid), encoding="utf-8") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        switches += int(line.split(":")[1])
        except FileNotFoundError:
            pass
    out["ctxt_switches"] = switches
    return out


class AgentProcess:
    """`manifold agent --no-install` started by the bench in its node namespace."""

    def __init__(self, world, kube, cni_dir):
        self.log_path = os.path.join(world.work, "agent.log")
        self.relay_socket = os.path.join(world.work, "run", "agent.sock")
        argv = [world.manifold, "agent", "--no-install", "--node-name", HOTPLUG_NODE,
                "--kubeconfig", kube.kubeconfig, "--cni-dir", cni_dir,
                "--metrics-address", "127.0.0.1:%d" % AGENT_METRICS_PORT, "--log-level", "error",
                "--relay-socket", self.relay_socket]
        with open(self.log_path, "ab") as log:
            self.started = time.time()
            self.proc = subprocess.Popen(argv, stdout=log, stderr=log, env=base_env())
        self.exit_code = None

    def log_tail(self, n=4000):
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()[-n:]

    def check_alive(self):
        if self.proc.poll() is not None:
            raise BenchError("manifold agent exited with %s\nagent log:\n%s" % (self.proc.returncode, self.log_tail()))

    def metrics(self):
        """/metrics as {sample name with labels: value}."""
        conn = http.client.HTTPConnection("127.0.0.1", AGENT_METRICS_PORT, timeout=10)
        try:
            conn.request("GET", "/metrics")
            resp = conn.getresponse()
            body = resp.read().decode()
        finally:
            conn.close()
        if resp.status != 200:
            raise BenchError("the agent's /metrics answered %d" % resp.status)
        return parse_metrics(body)

    def stop(self):
        """SIGTERM, then (after 30 s) SIGKILL; keeps the exit status."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        self.exit_code = self.proc.returncode


def reconciles(samples, result):
    return samples.get('manifold_agent_reconciles_total{result="%s"}' % result, 0)


def status_names(pod_or_text):
    """The network names of a network-status annotation (text, or a pod object's)."""
    text = pod_or_text
    if isinstance(pod_or_text, dict):
        text = (pod_or_text.get("metadata", {}).get("annotations") or {}).get(NETWORK_STATUS_ANNOTATION, "")
    return [e.get("name") for e in json.loads(text)] if text else []


def put_status_names(entry):
    body = json.loads(entry["body"]) if entry.get("body") else {}
    return status_names(body)


def driver_call(world, verb, conf_dir, libcni_cache, netns, name):
    env = base_env()
    env.update({"NETCONFPATH": conf_dir, "CNI_PATH": ":".join([world.bin_dir, PLUGIN_DIR]),
                "CNI_CACHE_DIR": libcni_cache, "CNI_CONTAINERID": hotplug_container(name), "CNI_IFNAME": "eth0",
                "DRIVER_TIMEOUT": "120",
                "CNI_ARGS": "IgnoreUnknown=1;K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s;K8S_POD_INFRA_CONTAINER_ID=%s;"
                            "K8S_POD_UID=uid-%s" % (POD_NS, name, hotplug_container(name), name)})
    proc = subprocess.run([world.driver, verb, HOTPLUG_NET, netns.path], env=env, capture_output=True,
                          text=True, timeout=300)
    if proc.returncode != 0:
        raise BenchError("driver %s of pod %s failed: %s%s" % (verb, name, proc.stdout[-2000:], proc.stderr[-2000:]))


def scenario_hotplug(world, args, kube):
    """manifold agent with args.hotplug_pods pods of node-a in its cache (each ADDed through the
    libcni driver with the cluster network) plus one test pod: start-up sync, idle RSS and CPU,
    then hot-plug latency of the test pod (annotation "" <-> the NAD), attach and detach apart."""
    out = {"pods": args.hotplug_pods, "runs": args.hotplug_runs, "idle_window_s": args.hotplug_idle_seconds}
    cni_dir = world.mkdir("cache-hotplug")
    conf_dir = world.mkdir("netconf-hotplug")
    libcni_cache = world.mkdir("libcni-cache-hotplug")
    conf = world.manifold_conf(cni_dir, [world.bridge_conf()], kubeconfig=kube.kubeconfig, name=HOTPLUG_NET,
                               logFile=os.path.join(world.log_dir, "hotplug.log"))
    with open(os.path.join(conf_dir, "10-manifold.conf"), "w", encoding="utf-8") as f:
        json.dump(conf, f)
    nad = {"cniVersion": "1.0.0", "name": HOTPLUG_NAD, "type": "macvlan", "master": MASTER, "mode": "bridge",
           "ipam": {"type": "static", "addresses": [{"address": "198.51.100.200/24"}]}}
    kube.api.add_nad(POD_NS, HOTPLUG_NAD, nad)
    names = ["hp-%03d" % i for i in range(args.hotplug_pods)] + [HOTPLUG_TARGET]
    for name in names:
        kube.api.add_pod(POD_NS, name, uid="uid-" + name, node_name=HOTPLUG_NODE)

    # The pods are set up (and later removed) by 4 concurrent ADDs (DELs): never under SCHED_FIFO.
    # Two FIFO manifolds reaping their delegates at once were seen spinning for minutes in the
    # kernel's /proc dentry invalidation (release_task -> shrink_dcache_parent), waiting for a
    # normal-priority task the FIFO spinners kept off both CPUs. The pool's threads inherit the
    # policy of this thread when they are created, and keep it.
    realtime = os.sched_getscheduler(0) == os.SCHED_FIFO
    if realtime:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    # The pool outlives the stack: the clean-up DELs run on it.
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool, contextlib.ExitStack() as stack:
        started = time.monotonic()
        spare = [Netns() for _ in names]
        for ns in spare:
            stack.callback(ns.delete)
        netns = dict(zip(names, pool.map(lambda ns: ns.__enter__(), spare)))
        added = []

        def delete_all():
            t = time.monotonic()
            errors = []
            for name, err in zip(list(added), pool.map(lambda n: _try(driver_call, world, "del", conf_dir,
                                                                        libcni_cache, netns[n], n), list(added))):
                if err:
                    errors.append(err)
            out["del_all_s"] = time.monotonic() - t
            left = [d for d in os.listdir(cni_dir) if not d.startswith(".")]
            if errors or left:
                raise BenchError("hotplug clean-up: %d DEL(s) failed (%s); cache entries left: %s" % (
                    len(errors), "; ".join(map(str, errors[:3])), left[:5]))

        stack.callback(delete_all)
        out["netns_setup_s"] = time.monotonic() - started
        t = time.monotonic()

        def add(name):
            driver_call(world, "add", conf_dir, libcni_cache, netns[name], name)
            added.append(name)

        futures = [pool.submit(add, name) for name in names]
        concurrent.futures.wait(futures)  # every ADD has ended before a failure unwinds into the DELs
        for fut in futures:
            fut.result()
        out["add_all_s"] = time.monotonic() - t
        print("hotplug: %d pods ADDed through the libcni driver in %.1f s (%d namespaces made in %.1f s)" % (
            len(names), out["add_all_s"], len(names), out["netns_setup_s"]))
        target_ns = netns[HOTPLUG_TARGET]
        if realtime:  # measured from here on: one process at a time again
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        detached_status = status_names(kube.api.get_pod(POD_NS, HOTPLUG_TARGET))
        if len(detached_status) != 1:
            raise BenchError("the test pod's network-status after ADD is %s" % detached_status)

        # The agent: start-up sync with every pod in its cache.
        kube.api.clear_requests()
        agent = AgentProcess(world, kube, cni_dir)
        stack.callback(agent.stop)
        try:
            watch = kube.api.wait_for_watches(1, path=r"^/api/v1/pods$", query=r"spec\.nodeName(=|%3D)" + HOTPLUG_NODE,
                                              timeout=HOTPLUG_WAIT_S)[0]
        except Exception as e:  # noqa: BLE001
            agent.check_alive()
            raise BenchError("the agent's watch did not open: %s\nwatches: %s\nagent log:\n%s" % (
                e, kube.api.watches(), agent.log_tail())) from e
        entries = kube.api.requests()
        lists = [e for e in entries if e["verb"] == "list"]
        out["sync"] = {
            "start_to_watch_ms": (watch["started"] - agent.started) * 1000.0,
            "start_to_list_ms": (lists[0]["started"] - agent.started) * 1000.0 if lists else None,
            "list_to_watch_ms": (watch["started"] - lists[0]["started"]) * 1000.0 if lists else None,
            "requests": len(entries), "status_puts": sum(1 for e in entries if e["method"] == "PUT")}
        samples = agent.metrics()
        out["sync"]["pods_tracked"] = samples.get("manifold_agent_pods_tracked")
        out["sync"]["sandboxes_tracked"] = samples.get("manifold_agent_sandboxes_tracked")
        out["sync"]["reconciles_unchanged"] = reconciles(samples, "unchanged")
        if out["sync"]["sandboxes_tracked"] != len(names):
            raise BenchError("the agent tracks %s sandboxes, not %d" % (out["sync"]["sandboxes_tracked"], len(names)))

        # Idle: nothing changes for the window.
        kube.api.clear_requests()
        before = proc_counters(agent.proc.pid)
        t = time.monotonic()
        rss_max = before["VmRSS"]
        while time.monotonic() - t < args.hotplug_idle_seconds:
            time.sleep(min(1.0, max(0.0, args.hotplug_idle_seconds - (time.monotonic() - t))))
            agent.check_alive()
            rss_max = max(rss_max, proc_counters(agent.proc.pid)["VmRSS"])
        after = proc_counters(agent.proc.pid)
        window = time.monotonic() - t
        # schedstat's nanoseconds; utime+stime counts whole clock ticks (10 ms), too coarse here.
        cpu_ms = (after["cpu_ns"] - before["cpu_ns"]) / 1e6
        tick_ms = (after["ticks"] - before["ticks"]) * 1000.0 / os.sysconf("SC_CLK_TCK")
        out["idle"] = {"window_s": window, "rss_bytes": rss_max * 1024, "hwm_bytes": after["VmHWM"] * 1024,
                       "rss_anon_bytes": after["RssAnon"] * 1024, "rss_file_bytes": after["RssFile"] * 1024,
                       "threads": after["Threads"], "cpu_ms": cpu_ms, "cpu_ms_per_min": cpu_ms * 60.0 / window,
                       "cpu_ticks_ms": tick_ms,
                       "cpu_percent": cpu_ms / (window * 1000.0) * 100.0,
                       "wakeups_per_s": (after["ctxt_switches"] - before["ctxt_switches"]) / window,
                       "requests": len([e for e in kube.api.requests() if e["verb"] != "watch"])}

        # Hot-plug latency: the annotation alternates between "" and the NAD.
        lat = {"attach": [], "detach": []}
        detail = {"attach": [], "detach": []}

        def change(attach, keep):
            value = HOTPLUG_NAD if attach else ""
            want_names = detached_status + (["%s/%s" % (POD_NS, HOTPLUG_NAD)] if attach else [])
            base = agent.metrics()
            kube.api.clear_requests()
            t0 = time.time()
            kube.api.modify_pod(POD_NS, HOTPLUG_TARGET, annotations={NETWORKS_ANNOTATION: value})
            t1 = time.time()
            deadline = time.monotonic() + HOTPLUG_WAIT_S
            # Done when the change was reconciled and then the agent's own status write came back
            # as a watch event and was found unchanged: the agent is idle again.
            while True:
                agent.check_alive()
                now = agent.metrics()
                if reconciles(now, "failed") > reconciles(base, "failed") or \
                        reconciles(now, "invalid") > reconciles(base, "invalid"):
                    raise BenchError("the agent failed the hot-plug (%s)\nagent log:\n%s" % (
                        "attach" if attach else "detach", agent.log_tail()))
                if reconciles(now, "changed") > reconciles(base, "changed") and \
                        reconciles(now, "unchanged") > reconciles(base, "unchanged"):
                    break
                if time.monotonic() > deadline:
                    raise BenchError("the agent did not reconcile the change in %d s\nagent log:\n%s" % (
                        HOTPLUG_WAIT_S, agent.log_tail()))
                time.sleep(0.02)
            entries = kube.api.requests()
            puts = [e for e in entries
                    if e["method"] == "PUT" and e["path"].endswith("/pods/%s/status" % HOTPLUG_TARGET)]
            if len(puts) != 1 or puts[0]["status"] != 200 or put_status_names(puts[0]) != want_names:
                raise BenchError("expected one status PUT listing %s, got %s" % (
                    want_names, [(e["status"], put_status_names(e)) for e in puts]))
            if status_names(kube.api.get_pod(POD_NS, HOTPLUG_TARGET)) != want_names:
                raise BenchError("the stored network-status is not %s" % want_names)
            links = target_ns.link_names()
            if ("net1" in links) != attach:
                raise BenchError("after the %s the test pod has links %s" % ("attach" if attach else "detach", links))
            put = puts[0]
            written = put["started"] + put["duration_ms"] / 1000.0
            agent_requests = [e for e in entries if e["user"] == kube.api.user and e["verb"] != "watch"]
            if keep:
                kind = "attach" if attach else "detach"
                lat[kind].append((written - t0) * 1000.0)
                detail[kind].append({
                    "ms": (written - t0) * 1000.0, "modify_call_ms": (t1 - t0) * 1000.0,
                    "first_request_ms": (agent_requests[0]["started"] - t0) * 1000.0 if agent_requests else None,
                    "requests": [(e["method"], e["path"].rsplit("/", 2)[-1] if "/events" not in e["path"] else "events",
                                  e["conn"]) for e in agent_requests],
                    "connections": len({e["conn"] for e in agent_requests})})

        for i in range(args.warmup + args.hotplug_runs):
            keep = i >= args.warmup
            change(True, keep)
            change(False, keep)
        final = proc_counters(agent.proc.pid)
        out["after_hotplug"] = {"rss_bytes": final["VmRSS"] * 1024, "hwm_bytes": final["VmHWM"] * 1024}
        out["latency_ms"] = {k: summary(v) for k, v in lat.items()}
        out["iterations"] = detail
        out["modify_call_ms"] = summary([d["modify_call_ms"] for d in detail["attach"] + detail["detach"]])
        agent.stop()
        out["agent_exit"] = agent.exit_code
        if agent.exit_code != 0:
            raise BenchError("manifold agent exited with %s on SIGTERM\n%s" % (agent.exit_code, agent.log_tail()))
    out["total_s"] = time.monotonic() - started
    rows = []
    for kind in ("attach", "detach"):
        row = new_row("hotplug", kind, "annotation -> status PUT, %d pods" % len(names))
        row["total"] = lat[kind]
        rows.append(row)
    return rows, out


def _try(fn, *a):
    """fn(*a); returns the exception instead of raising it (clean-up collects every failure)."""
    try:
        fn(*a)
        return None
    except Exception as e:  # noqa: BLE001
        return e


# ---- reporting -------------------------------------------------------------------------------------

def finish_row(row):
    """Adds summaries: total, floor, overhead (paired differences), API, own = overhead - API."""
    out = dict(row)
    out["total_ms"] = summary(row["total"])
    out["floor_ms"] = summary(row["floor"])
    if row["total"] and row["floor"]:
        diffs = [t - f for t, f in zip(row["total"], row["floor"])]
        out["overhead_ms"] = summary(diffs)
        fm = out["floor_ms"]["median"]
        out["overhead_ratio"] = (out["overhead_ms"]["median"] / fm) if fm else None
    if row["api"]:
        # Warm in-process replay (the bench's own Python client): reported, not used for budgets.
        out["api_ms"] = summary(row["api"])
        own = [t - f - a for t, f, a in zip(row["total"], row["floor"], row["api"])]
        out["own_vs_warm_api_ms"] = summary(own)
    if row["api_fresh"]:
        # The fresh-process API floor (apireplay): own = overhead - what any fresh process pays.
        out["api_fresh_ms"] = summary(row["api_fresh"])
        own = [t - f - a for t, f, a in zip(row["total"], row["floor"], row["api_fresh"])]
        out["own_ms"] = summary(own)
    if row["api_fresh_cpu"]:
        out["api_fresh_cpu_ms"] = summary(row["api_fresh_cpu"])
    if row["rss_kb"]:
        out["rss_peak_bytes"] = max(row["rss_kb"]) * 1024
    if row["cpu"]:
        out["cpu_ms"] = summary(row["cpu"])
    if row["minflt"]:
        out["minor_faults"] = statistics.median(row["minflt"])
    if row["anon_kb"]:
        out["anon_peak_bytes"] = max(row["anon_kb"]) * 1024
    if row["requests"]:
        out["requests_per_call"] = row["requests"][-1]
    return out


def fmt(v, digits=2):
    return "-" if v is None else ("%.*f" % (digits, v))


def print_table(rows):
    head = ("scenario", "verb", "variant", "median", "p90", "floor", "overhead", "ratio", "api warm",
            "api fresh", "own", "cpu", "peak RSS", "requests")
    lines = [head]
    for r in rows:
        t, f, o = r.get("total_ms"), r.get("floor_ms"), r.get("overhead_ms")
        api, fresh, own = r.get("api_ms"), r.get("api_fresh_ms"), r.get("own_ms")
        req = r.get("requests_per_call")
        lines.append((
            r["scenario"], r["verb"], r["note"], fmt(t and t["median"]), fmt(t and t["p90"]),
            fmt(f and f["median"]), fmt(o and o["median"]),
            "-" if r.get("overhead_ratio") is None else "%+.0f%%" % (100 * r["overhead_ratio"]),
            fmt(api and api["median"]), fmt(fresh and fresh["median"]), fmt(own and own["median"]),
            fmt(r.get("cpu_ms") and r["cpu_ms"]["median"]),
            "-" if "rss_peak_bytes" not in r else "%.2f MB (%.2f)" % (
                r["rss_peak_bytes"] / MB, r.get("anon_peak_bytes", 0) / MB),
            "-" if not req else "%d (%d+%dev) %drt%s" % (req["total"], req["lookups_and_status"], req["events"],
                                                        req.get("round_trips", req["total"]),
                                                        " tls-resumed" if req.get("tls_resumed") else "")))
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(head))]
    print("times in ms: median and p90 wall time of the runs; floor = the delegates alone (or the "
          "variant named);\noverhead = total - floor, paired per iteration; ratio = overhead / floor; api warm = "
          "manifold's API requests replayed\nby this Python process (OpenSSL warm); api fresh = the same requests "
          "sent by a fresh static process (apireplay);\nown = overhead - api fresh; cpu = manifold's own on-CPU time "
          "(traced runs, load-independent);\npeak RSS = VmHWM of manifold alone (in brackets: its private "
          "memory; the rest are pages of the executable)")
    for n, line in enumerate(lines):
        print("  ".join(str(c).ljust(w) if i < 3 else str(c).rjust(w) for i, (c, w) in enumerate(zip(line, widths))))
        if n == 0:
            print("  ".join("-" * w for w in widths))


def find_row(rows, scenario, verb, note_part=""):
    for r in rows:
        if r["scenario"] == scenario and r["verb"] == verb and note_part in r["note"]:
            return r
    return None


def budgets(rows, binary_size, args, hotplug=None, burst=None):
    """The budget lines: (text, value, limit, PASS/FAIL/n/a)."""
    out = []

    def line(text, value, limit, unit, ok=None):
        if value is None:
            out.append({"budget": text, "value": None, "limit": limit, "verdict": "n/a"})
            return
        verdict = "PASS" if (ok if ok is not None else value <= limit) else "FAIL"
        out.append({"budget": text, "value": value, "limit": limit, "unit": unit, "verdict": verdict})

    for verb in ("ADD", "DEL"):
        for variant in BRIDGE_VARIANTS:
            r = find_row(rows, "bridge", verb, variant)
            line("own overhead per %s, no Kubernetes, 1 network (%s, median)" % (verb, variant),
                 r and r.get("overhead_ms") and r["overhead_ms"]["median"], BUDGET_OWN_ADD_MS, "ms")
    for prefix, path in K8S_PATHS:
        for k in K8S_SIZES:
            r = find_row(rows, prefix % k, "ADD")
            if r is None:
                continue
            api = r["api_fresh_ms"]["median"]
            line("own overhead per ADD with Kubernetes, %d NAD(s), %s (median; limit %.1f ms + %.2f ms "
                 "fresh-process API floor)" % (k, path, BUDGET_OWN_ADD_MS, api),
                 r["overhead_ms"]["median"], BUDGET_OWN_ADD_MS + api, "ms")
    # TLS set-up per Kubernetes call, bounded from above by all the Kubernetes work of a 1-NAD ADD:
    # its CPU beyond a no-Kubernetes ADD's (traced runs: load-independent).
    plain = find_row(rows, "bridge", "ADD", "direct")
    for prefix, path in K8S_PATHS:
        r = find_row(rows, prefix % 1, "ADD")
        value = None
        if r and plain and r.get("cpu_ms") and plain.get("cpu_ms"):
            value = r["cpu_ms"]["median"] - plain["cpu_ms"]["median"]
        line("TLS set-up CPU per Kubernetes call, %s (at most: a 1-NAD ADD's CPU beyond a no-Kubernetes "
             "ADD's, median)" % path, value, BUDGET_TLS_MS, "ms")
    peak = max((r["rss_peak_bytes"] for r in rows if "rss_peak_bytes" in r and "reference" not in r["note"]),
               default=None)
    line("peak RSS of manifold itself (max over every measured verb)", peak, BUDGET_RSS_BYTES, "bytes")
    r = find_row(rows, "version", "VERSION")
    line("VERSION (median)", r and r["total_ms"]["median"], BUDGET_VERSION_MS, "ms")
    line("static binary size", binary_size, BUDGET_BINARY_BYTES, "bytes")
    r = find_row(rows, "logrotate", "ADD")
    line("ADD that rotates and compresses a full log: overhead over a normal ADD (median)",
         r and r.get("overhead_ms") and r["overhead_ms"]["median"], BUDGET_ROTATION_MS, "ms")
    for prefix, path in K8S_PATHS:
        for k in K8S_SIZES:
            r = find_row(rows, prefix % k, "ADD")
            if r is None:
                continue
            counts = [q["lookups_and_status"] for q in r["requests"]]
            reads = [q["pod"] + q["nad"] for q in r["requests"]]
            if prefix.startswith("k8s-agent"):  # the lookups answered from memory: the status PUT alone
                line("API requests per ADD, %d NAD(s), %s: the status PUT alone (events: %d)" % (
                    k, path, r["requests"][-1]["events"]), max(counts), 1, "requests", ok=all(c == 1 for c in counts))
                line("API reads (pod and NAD GETs) per ADD, %d NAD(s), %s" % (k, path), max(reads),
                     BUDGET_AGENT_READS, "reads")
            else:
                ok = all(c == 2 + k for c in counts)
                line("API requests per ADD, %d NAD(s), %s: pod GET + NAD GETs + status PUT = 2 + %d (events: %d)" % (
                    k, path, k, r["requests"][-1]["events"]), max(counts), 2 + k, "requests", ok=ok)
            # Round trips as the API server double saw them: requests not pipelined behind another.
            trips = max(q["round_trips"] for q in r["requests"])
            line("sequential API round trips on the ADD's critical path, %d NAD(s), %s" % (k, path), trips,
                 BUDGET_ROUND_TRIPS, "round trips")
    if burst:
        line("manifold agent peak RSS, %d pods started at once through it" % burst["pods"],
             burst["agent_peak_rss_bytes"], BUDGET_BURST_RSS_BYTES, "bytes")
        line("API reads of the %d CNI calls of the burst (pod and NAD GETs upstream)" % burst["pods"],
             burst["requests"]["cni_reads"], BUDGET_AGENT_READS, "reads")
    slope = scaling(rows).get("add_own_slope_ms_per_attachment")
    line("own work per additional attachment (slope of own time over 1/4/16 NADs)", slope, BUDGET_PER_ATTACHMENT_MS,
         "ms")
    if hotplug:
        n = hotplug["pods"] + 1
        attach = hotplug["latency_ms"]["attach"]
        line("hot-plug attach, %d pods on the node: annotation change -> network-status written (median)" % n,
             attach and attach["median"], BUDGET_HOTPLUG_MS, "ms")
        line("manifold agent idle RSS, %d pods on the node (VmRSS, max over %.0f s)" % (n, hotplug["idle"]["window_s"]),
             hotplug["idle"]["rss_bytes"], BUDGET_AGENT_RSS_BYTES, "bytes")
        line("manifold agent idle CPU, %d pods on the node (share of one core over %.0f s)" % (
            n, hotplug["idle"]["window_s"]), hotplug["idle"]["cpu_percent"], BUDGET_AGENT_CPU_PERCENT, "%")
    return out


def scaling(rows):
    """Per-attachment slope over the 1/4/16 runs, and the 0 vs 200 cached containers delta."""
    out = {}
    ks, overhead, own, total = [], [], [], []
    for k in K8S_SIZES:
        r = find_row(rows, "k8s-%d" % k, "ADD")
        if r is None:
            continue
        ks.append(k)
        total.append(r["total_ms"]["median"])
        overhead.append(r["overhead_ms"]["median"])
        own.append(r["own_ms"]["median"])
    if len(ks) >= 2:
        for key, ys in (("total", total), ("overhead", overhead), ("own", own)):
            slope, intercept = fit_line(ks, ys)
            out["add_%s_slope_ms_per_attachment" % key] = slope
            out["add_%s_intercept_ms" % key] = intercept
        out["attachments"] = ks
    for verb in VERBS:
        r = find_row(rows, "cache", verb)
        if r and r.get("overhead_ms"):
            out["cache_%d_minus_0_%s_ms" % (CACHED_CONTAINERS, verb)] = r["overhead_ms"]["median"]
    return out


def print_burst(burst):
    """The burst's figures (nothing when it was not run)."""
    if not burst:
        return
    q = burst["requests"]
    ms = burst["add_ms"]
    print("\nburst: %d pods started at once through manifold agent in %.1f s (ADD median %.0f ms, max %.0f ms); "
          "agent peak RSS %.1f MB; upstream requests %d: CNI reads %d, NAD LISTs %d, status PUTs %d, events %d, "
          "other %d; relay refusals %d" % (
              burst["pods"], burst["elapsed_s"], statistics.median(ms), max(ms), burst["agent_peak_rss_bytes"] / MB,
              q["total"], q["cni_reads"], q["nad_lists"], q["status_puts"], q["events"], q["other"],
              burst["relay_refused"]))
    for name, count in sorted(burst["lookups"].items()):
        print("  %s %+d" % (name, count))


def print_budgets(lines):
    print("\nbudgets (reported only; timing never fails the run)")
    for b in lines:
        if b["verdict"] == "n/a":
            print("  n/a   %s: not measured" % b["budget"])
            continue
        unit = b["unit"]
        if unit == "bytes":
            val, lim = "%.2f MB (%d bytes)" % (b["value"] / MB, b["value"]), "%.2f MB" % (b["limit"] / MB)
        elif unit == "ms":
            val, lim = "%.2f ms" % b["value"], "%.2f ms" % b["limit"]
        elif unit == "%":
            val, lim = "%.2f %%" % b["value"], "%.2f %%" % b["limit"]
        else:
            val, lim = "%d" % b["value"], "%d" % b["limit"]
        print("  %-4s  %s: %s (limit %s)" % (b["verdict"], b["budget"], val, lim))


def print_api_cpu(rows):
    """On-CPU time of manifold's Kubernetes ADDs next to the fresh-process API floor's (traced runs:
    less sensitive to load than wall times)."""
    lines = []
    for prefix, path in K8S_PATHS:
        for k in K8S_SIZES:
            r = find_row(rows, prefix % k, "ADD")
            if r and r.get("cpu_ms") and r.get("api_fresh_cpu_ms"):
                m, a = r["cpu_ms"]["median"], r["api_fresh_cpu_ms"]["median"]
                lines.append("  %d NAD(s), %s: manifold %.2f ms, apireplay %.2f ms, difference %.2f ms" % (
                    k, path, m, a, m - a))
    if lines:
        print("\non-CPU time per Kubernetes ADD (median of the traced runs, kernel included)")
        print("\n".join(lines))


def print_hotplug(h):
    """The hotplug scenario's figures beyond the table: the agent's start-up, idle cost and peak."""
    if not h:
        return
    n = h["pods"] + 1
    sync, idle = h["sync"], h["idle"]
    print("\nmanifold agent (hotplug: %d pods of node %s in its cache, ADDed through the libcni driver in %.1f s)" % (
        n, HOTPLUG_NODE, h["add_all_s"]))
    print("  start-up: LIST sent %s ms after exec, watch open after %.0f ms (list + reconcile of every cached "
          "sandbox: %s ms; %d API requests, %d status PUTs)" % (
              fmt(sync["start_to_list_ms"], 0), sync["start_to_watch_ms"], fmt(sync["list_to_watch_ms"], 0),
              sync["requests"], sync["status_puts"]))
    print("  idle %.0f s: VmRSS %.2f MB (anon %.2f MB, file %.2f MB), VmHWM %.2f MB; CPU %.1f ms/min = %.3f %% of a "
          "core; %.1f context switches/s; %d API requests" % (
              idle["window_s"], idle["rss_bytes"] / MB, idle["rss_anon_bytes"] / MB, idle["rss_file_bytes"] / MB,
              idle["hwm_bytes"] / MB, idle["cpu_ms_per_min"], idle["cpu_percent"], idle["wakeups_per_s"],
              idle["requests"]))
    for kind in ("attach", "detach"):
        s = h["latency_ms"][kind]
        if s:
            print("  hot-plug %s: median %.0f ms, p90 %.0f ms, min %.0f, max %.0f (n=%d)" % (
                kind, s["median"], s["p90"], s["min"], s["max"], s["n"]))
    print("  (from just before the bench's admin call that commits the change, which takes %.1f ms median, to the "
          "double's answer to the agent's status PUT, by the double's log; one machine clock)" % (
              h["modify_call_ms"]["median"]))
    print("  after the hot-plugs: VmRSS %.2f MB, VmHWM %.2f MB; scenario %.0f s" % (
        h["after_hotplug"]["rss_bytes"] / MB, h["after_hotplug"]["hwm_bytes"] / MB, h["total_s"]))


def print_scaling(s):
    print("\nscaling")
    if "attachments" in s:
        print("  ADD per additional attachment (least squares over %s NADs): total %.2f ms, "
              "manifold overhead %.2f ms, own (minus API) %.2f ms" % (
                  "/".join(map(str, s["attachments"])), s["add_total_slope_ms_per_attachment"],
                  s["add_overhead_slope_ms_per_attachment"], s["add_own_slope_ms_per_attachment"]))
    for verb in VERBS:
        key = "cache_%d_minus_0_%s_ms" % (CACHED_CONTAINERS, verb)
        if key in s:
            print("  %s with %d other containers cached minus with 0: %+.2f ms" % (verb, CACHED_CONTAINERS, s[key]))


# ---- main ------------------------------------------------------------------------------------------

def find_default(paths):
    for p in paths:
        if p and os.path.isfile(p) and os.access(p, os.X_OK):
            return os.path.abspath(p)
    return None


def is_static(path):
    proc = subprocess.run(["ldd", path], capture_output=True, text=True)
    return "not a dynamic executable" in proc.stdout + proc.stderr


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="few runs: shows the bench works (CI)")
    p.add_argument("--runs", type=int, help="measured iterations per scenario (default 30, quick 3)")
    p.add_argument("--warmup", type=int, help="unmeasured iterations first (default 3, quick 1)")
    p.add_argument("--traced-runs", type=int,
                   help="traced runs for manifold's peak RSS and CPU time (default 5, quick 1)")
    p.add_argument("--manifold", help="binary under test (default: $MANIFOLD_STATIC_BIN, "
                                      "build/release-static/manifold, build/debug/static/manifold, "
                                      "$MANIFOLD_BIN)")
    p.add_argument("--static", help="static release binary whose size is checked (default: --manifold "
                                    "if static, else build/release-static/manifold)")
    p.add_argument("--driver", help="libcni driver (default: $CNI_DRIVER, build/*/test/integration/driver)")
    p.add_argument("--json", default="bench-results.json", help="output file (default %(default)s)")
    p.add_argument("--realtime", action="store_true",
                   help="run the bench and everything it starts under SCHED_FIFO, so that other "
                        "load on a shared machine does not queue the measured processes")
    p.add_argument("--only", help="comma-separated scenarios: version,bridge,k8s,scoped,cache,error,"
                                  "logrotate,hotplug (the default), and soak (long mode only)")
    p.add_argument("--hotplug-pods", type=int,
                   help="hotplug: pods ADDed on the agent's node besides the test pod (default 100, quick 10)")
    p.add_argument("--hotplug-runs", type=int,
                   help="hotplug: measured attach+detach pairs (default --runs, quick 5)")
    p.add_argument("--hotplug-idle-seconds", type=float,
                   help="hotplug: idle window for the agent's RSS and CPU (default 10, quick 3)")
    p.add_argument("--burst-pods", type=int,
                   help="k8s: pods started at once through the agent (default %d, quick 20)" % BURST_PODS)
    p.add_argument("--soak-cycles", type=int, default=2000,
                   help="soak: at most this many ADD/DEL cycles (default %(default)s)")
    p.add_argument("--soak-seconds", type=float, default=1800,
                   help="soak: and at most this long (default %(default)s)")
    p.add_argument("--soak-seed", type=int, default=1, help="soak: random seed (default %(default)s)")
    args = p.parse_args(argv)
    args.runs = args.runs or (3 if args.quick else 30)
    args.warmup = args.warmup if args.warmup is not None else (1 if args.quick else 3)
    args.traced_runs = args.traced_runs if args.traced_runs is not None else (1 if args.quick else 5)
    args.hotplug_pods = args.hotplug_pods if args.hotplug_pods is not None else (10 if args.quick else 100)
    args.hotplug_runs = args.hotplug_runs or (5 if args.quick else args.runs)
    args.hotplug_idle_seconds = args.hotplug_idle_seconds or (3.0 if args.quick else 10.0)
    args.burst_pods = args.burst_pods or (20 if args.quick else BURST_PODS)
    # test/static-check.sh's build, else the static sub-build of the Debug test build.
    static_default = find_default([os.path.join(REPO, "build", d, "manifold")
                                   for d in ("release-static", "debug/static")])
    args.manifold = find_default([args.manifold, os.environ.get("MANIFOLD_STATIC_BIN"), static_default,
                                  os.environ.get("MANIFOLD_BIN")])
    if not args.manifold:
        p.error("no manifold binary: pass --manifold or build it (test/static-check.sh --build-only)")
    drivers = [args.driver, os.environ.get("CNI_DRIVER")]
    build = os.path.join(REPO, "build")
    if os.path.isdir(build):
        drivers += sorted(os.path.join(build, d, "test", "integration", "driver") for d in os.listdir(build))
    args.driver = find_default(drivers)
    if not args.driver:
        p.error("no libcni driver: pass --driver or build the tests (target cni_driver)")
    if not args.static:
        args.static = args.manifold if is_static(args.manifold) else static_default
    args.only = set((args.only or "version,bridge,k8s,scoped,cache,error,logrotate,hotplug").split(","))
    unknown = args.only - {"version", "bridge", "k8s", "scoped", "cache", "error", "logrotate", "hotplug", "soak"}
    if unknown:
        p.error("unknown scenario(s) for --only: %s" % ",".join(sorted(unknown)))
    if "soak" in args.only and args.quick:
        p.error("the soak belongs to the long mode: not with --quick")
    return args


def scenario_soak(args):
    """The crash suite's bounded soak (test/integration/crash/soak.py) with manifold under strace:
    ADD/DEL cycles with random kills and injected errors; returns its figures."""
    def progress(figures, findings, seconds):
        print("soak: %d cycles, %d kills, errors %s, %d findings, %.0f s" % (
            figures["cycles"], figures["kills"], json.dumps(figures["errors"]), findings, seconds))

    print("soak: at most %d cycles and %.0f s, seed %d" % (args.soak_cycles, args.soak_seconds, args.soak_seed))
    figures = run_soak(args.manifold, args.driver, args.soak_cycles, args.soak_seconds, args.soak_seed, progress)
    progress(figures, len(figures["findings"]), figures["seconds"])
    print("soak: cniDir %d bytes before, %d after; %s" % (
        figures["cni_dir_bytes_before"], figures["cni_dir_bytes_after"],
        "PASS: nothing left behind" if not figures["findings"] else "FAIL:\n  " + "\n  ".join(figures["findings"])))
    return figures


def main(argv):
    args = parse_args(argv)
    if os.geteuid() != 0:
        ci.cannot_run("the benchmark needs root (network namespaces)")
    remove_stale_namespaces()
    soak = scenario_soak(args) if "soak" in args.only else None
    if args.only == {"soak"}:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"manifold": args.manifold, "soak": soak}, f, indent=1)
        return finish_soak(soak)
    if args.realtime:
        # Inherited by every process the bench starts; the kernel's RT throttling still leaves 5%
        # of each CPU to everything else.
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    binary_size = os.path.getsize(args.static) if args.static else None
    print("manifold: %s (%d bytes, %s)" % (args.manifold, os.path.getsize(args.manifold),
                                          "static" if is_static(args.manifold) else "dynamic"))
    print("driver:   %s" % args.driver)
    print("runs: %d measured after %d warm-up, %d traced for RSS and CPU%s%s; load average %s\n" % (
        args.runs, args.warmup, args.traced_runs, " (quick mode)" if args.quick else "",
        ", SCHED_FIFO" if args.realtime else "", "%.1f %.1f %.1f" % os.getloadavg()))
    started = time.time()
    raw = []
    notes = []
    hotplug = None
    burst = None
    with contextlib.ExitStack() as stack:
        world = World(stack, args)
        kube = None
        if "version" in args.only:
            raw += scenario_version(world, args)
        if "bridge" in args.only:
            raw += scenario_bridge(world, args)
        if "k8s" in args.only:
            kube = kube or Kube(stack, world)
            for k in K8S_SIZES:
                raw += scenario_k8s(world, args, kube, k)
            agent_rows, burst = scenario_k8s_agent(world, args, kube)
            raw += agent_rows
        if "scoped" in args.only:
            scoped = scenario_scoped(world, args)
            if scoped is None:
                notes.append("scoped: not measured — this binary ignores sourceRouting/mesh "
                             "(no source-routing rule and no scoping state after ADD)")
            else:
                raw += scoped
        if "cache" in args.only:
            raw += scenario_cache(world, args)
        if "error" in args.only:
            raw += scenario_error(world, args)
        if "logrotate" in args.only:
            raw += scenario_logrotate(world, args)
        if "hotplug" in args.only:
            kube = kube or Kube(stack, world)
            hot_rows, hotplug = scenario_hotplug(world, args, kube)
            raw += hot_rows
    rows = [finish_row(r) for r in raw]
    print_table(rows)
    for n in notes:
        print("note: " + n)
    lines = budgets(rows, binary_size, args, hotplug, burst)
    print_api_cpu(rows)
    print_hotplug(hotplug)
    print_burst(burst)
    print_budgets(lines)
    floor = machine_floor(rows)
    print_machine_floor(floor)
    scale = scaling(rows)
    print_scaling(scale)
    result = {"manifold": args.manifold, "manifold_bytes": os.path.getsize(args.manifold),
              "static_binary": args.static, "static_binary_bytes": binary_size,
              "runs": args.runs, "warmup": args.warmup, "traced_runs": args.traced_runs, "quick": args.quick,
              "realtime": args.realtime, "loadavg": os.getloadavg(),
              "elapsed_s": time.time() - started, "rows": rows, "budgets": lines, "scaling": scale,
              "notes": notes, "soak": soak, "hotplug": hotplug, "burst": burst, "machine_floor": floor}
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    print("\nresults written to %s (%.0f s)" % (args.json, time.time() - started))
    return finish_soak(soak)


def finish_soak(soak):
    """The exit status: the soak (when run) must have found nothing."""
    if soak and soak["findings"]:
        raise BenchError("the soak found %d problems (listed above)" % len(soak["findings"]))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BenchError as e:
        print("bench: %s" % e, file=sys.stderr)
        sys.exit(1)
