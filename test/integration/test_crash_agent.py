#!/usr/bin/env python3
"""Crash consistency of the node agent's hot-plug (`manifold agent`): the agent is SIGKILLed at
every side-effect step of an attach, a detach and a replace, started again, and must converge with
nothing leaked.

What is killed where. The agent runs under `strace -e inject=SYSCALL:signal=KILL:when=N` (strace
6.1, without -f: only the agent's main thread is traced — the thread that lists, watches and
reconciles; the /metrics thread and the delegates are not, so they never count towards N. strace
counts `when=` per system call and per traced thread, so with -f every delegate would count from 1
on its own). A counting run first traces one whole hot-plug without injection and splits the main
thread's calls at the moment the annotation changed: the calls before it (startup: LIST, WATCH,
the first reconcile) only shift N, and every step after it becomes one kill point:

- every rename of a cache temp file onto the entry: the attachment recorded before its delegate
  runs, its result saved after, a detach's save of the entry without it (the temp file is left in
  cniDir/.tmp, swept by the container's DEL);
- every delegate started: its clone3 (the agent dies before the delegate's ADD or DEL exists), the
  pidfd_open right after it (the delegate exists but its config is not written to its stdin yet:
  it reads nothing and fails on its own) and its wait4 (the delegate finished its ADD or DEL, the
  agent has not recorded the outcome). Any orphaned delegate is waited for before the restart;
- every unlink in the agent's thread (none in these scenarios today; listed when they appear);
- every send on a TCP socket, i.e. every TLS write to the API server: the ClientHello and Finished
  of the reconcile's connection, the NAD GET, the network-status PUT and each AddedInterface /
  RemovedInterface event POST (each named after the request the double saw in the counting run).
Killing a delegate instead (an execve injection) is not done: with -f every delegate's first execve
would be hit, the retries' too; the agent's rollback of a failing delegate is test_agent_*'s.

Each point runs on a fresh pod (own name, uid and container id; ADDed by the runtime through the
libcni driver): the traced agent starts, the annotation changes (kubectl annotate --overwrite), and
the agent must die at exactly the call the counting run found (name, index, after the annotation,
same fd kind and paths up to numbers and the container id) — a point where it does not die, or dies
elsewhere (e.g. before the annotation changed), fails the test as a stale calibration. What it left
is summarised (pod links, cache attachments with or without a result, network-status, reservations,
temp files), and every interface in the pod must already be recorded in the cache (the write-ahead
promise: nothing the cache does not know of). Then the agent is started again normally and, once
it has converged:

- the pod's namespace holds exactly lo, eth0 and the interfaces the annotation asks for, each with
  the one address its cache result and the network-status name (inside its NAD's subnet, or the
  exact requested one);
- host-local's reservations are exactly the addresses of eth0 and of the attached networks (none
  leaked, none missing);
- manifold's cache entry lists exactly those attachments, each with a result;
- the network-status lists them;
- the restarted agent stops cleanly on SIGTERM, and the runtime's DEL succeeds and leaves nothing
  anywhere (assertNothingLeft).
An AddedInterface / RemovedInterface event the killed agent had not sent yet is not sent by the
restarted one (it finds no difference left to apply): not a leak, so only shown in the summary.

Scenarios: attach ("blue", macvlan + host-local, hot-plugged into a pod without secondary
networks), detach (a pod with "blue,green" keeps "green"), replace (data0 of "red", macvlan +
host-local with the ips capability, asking for 198.18.0.110 and then for 198.18.0.111: detached and
attached again on the same name). A problem at one point is a finding; the campaign goes on (after
a DEL that must leave nothing) and the test fails at the end listing every finding with the agent's
log of that point. MANIFOLD_CRASH_ONLY=text runs only the points whose label contains text (e.g.
"replace: kill at wait4#2").
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from agent_case import AgentTestCase  # noqa: E402
from crash import trace as crash_trace  # noqa: E402
from crash.campaign import selected  # noqa: E402
from harness import ci, main  # noqa: E402
from harness.netns import process_gone  # noqa: E402

STRACE = shutil.which("strace")
RENAMES = ("rename", "renameat", "renameat2")
SPAWNS = ("clone", "clone3", "vfork", "fork")
UNLINKS = ("unlink", "unlinkat")
SENDS = ("sendmsg", "sendto")
TRACED = RENAMES + SPAWNS + UNLINKS + SENDS + ("pidfd_open", "wait4")
GRACE_SECONDS = 5  # how long a converged, still running agent gets to die before the point fails

_LINE_RE = re.compile(r"^(?P<ts>\d+\.\d+) (?P<name>[a-z_0-9]+)\((?P<args>.*)\)\s+=\s+(?P<result>.*)$")
_FD_RE = re.compile(r"^-?\d+<(?P<what>[^>]*)>")
_PATH_RE = re.compile(r'(?:^|, )"(/[^"]*)"')


class Call:
    """One traced call of the agent's main thread: time, name, arguments, result, and its index
    among the calls of the same name since the thread started (what strace's when= counts)."""

    def __init__(self, ts, name, args, result, index):
        self.ts = ts
        self.name = name
        self.args = args
        self.result = result
        self.index = index
        self.request = None  # for a TLS write of an API request: "PUT /api/v1/...", when known

    def tls_content_type(self):
        """The TLS record type a send starts with: "handshake", "ccs" (the client's Finished
        follows), "data" (an HTTP request), or None."""
        m = re.search(r'iov_base="\\(\d+)', self.args)
        return {"26": "handshake", "24": "ccs", "27": "data"}.get(m.group(1)) if m else None

    @property
    def fd(self):
        """strace -yy's decoration of the first argument ("TCP:[...]", a path...), or ""."""
        m = _FD_RE.match(self.args)
        return m.group("what") if m else ""

    def is_point(self):
        """Whether a kill here is a step of the hot-plug (see the module docstring)."""
        if self.name in SENDS:
            return self.fd.startswith("TCP:")
        if self.name in ("clone", "clone3"):
            return "CLONE_THREAD" not in self.args
        return True

    def shape(self, container_id):
        """What must be the same call in the counting run and a kill run."""
        fd = self.fd.split(":", 1)[0] if not self.fd.startswith("/") else self.fd
        text = "%s(%s %s)" % (self.name, fd, " ".join(_PATH_RE.findall(self.args)))
        return re.sub(r"\d+", "#", text.replace(container_id, "<ctr>"))

    def describe(self, replacements):
        """A short label: "rename#2 <cniDir>/.tmp/... -> ..."."""
        if self.name in SENDS:
            kind = self.tls_content_type()
            what = {"handshake": "TLS ClientHello", "ccs": "TLS Finished"}.get(kind) or "TLS write of %s" % (
                self.request or "an API request")
        elif self.name in SPAWNS:
            what = "start of a delegate"
        elif self.name == "pidfd_open":
            what = "the delegate just started, not waited for yet"
        elif self.name == "wait4":
            what = "the delegate exited, its outcome not recorded yet"
        else:
            what = " -> ".join(_PATH_RE.findall(self.args))
        for old, new in replacements:
            what = what.replace(old, new)
        return "%s#%d %s" % (self.name, self.index, what)


def parse_trace(path):
    """(calls, killed) of an strace -ttt output of one thread; killed: it died of SIGKILL."""
    calls, counts, killed = [], {}, False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if "+++ killed by SIGKILL" in line:
                killed = True
            m = _LINE_RE.match(line.rstrip("\n"))
            if not m:
                continue
            name = m.group("name")
            counts[name] = counts.get(name, 0) + 1
            calls.append(Call(float(m.group("ts")), name, m.group("args"), m.group("result"), counts[name]))
    return calls, killed


def strace_children(pid):
    """The pids of the children of strace's (single-threaded) process."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid), encoding="utf-8") as f:
            return [int(p) for p in f.read().split()]
    except FileNotFoundError:
        return []


def ip_of(address):
    return address.split("/")[0]


class Scenario:
    """A pod's networks before (the runtime's ADD) and after the annotation change, and what the
    pod must look like then: {ifname: (NAD, subnet prefix or exact address)}."""

    def __init__(self, name, before, after, expected, events):
        self.name = name
        self.before = before
        self.after = after
        self.expected = expected
        self.events = events  # (reason, message regex) of each event the hot-plug sends


class Finding(Exception):
    """A point went wrong; the message says how."""


class AgentCrashTest(AgentTestCase):
    """One kill campaign per scenario."""

    def setUp(self):
        super().setUp()
        if not STRACE:
            ci.skip_or_fail(self, "strace is not installed (apt-get install strace)")
        if crash_trace.sanitized(self.manifold_bin):
            self.fail("the agent's crash campaign needs a manifold without sanitizers (LeakSanitizer "
                      "refuses to run under ptrace): run it against the Debug build, as test/run-all.sh does")
        self.add_blue_and_green()
        red = self.hostlocal_nad_conf(subnet="198.18.0.0/24", start="198.18.0.100")
        red["capabilities"] = {"ips": True}
        self.api.add_nad("default", "red", red)
        self.write_k8s()
        self.base_name = self.pod_name
        self.findings = []
        self.left = {}  # label -> what the killed agent left behind (before the restart)
        self.traced = []  # (strace's process, the agent's pid) of every traced agent

    # ---- scenarios -------------------------------------------------------------------------------

    def test_attach(self):
        self.campaign(Scenario("attach", None, "blue", {"net1": ("default/blue", "198.51.100.")},
                               [("AddedInterface", r"Add net1 \[198\.51\.100\.\d+/24\] from default/blue")]))

    def test_detach(self):
        self.campaign(Scenario("detach", "blue,green", "green", {"net2": ("default/green", "203.0.113.")},
                               [("RemovedInterface", r"Remove net1 from default/blue")]))

    def test_replace(self):
        def red(ip):
            return json.dumps([{"name": "red", "interface": "data0", "ips": [ip + "/24"]}])
        self.campaign(Scenario("replace", red("198.18.0.110"), red("198.18.0.111"),
                               {"data0": ("default/red", "=198.18.0.111")},
                               [("RemovedInterface", r"Remove data0 from default/red"),
                                ("AddedInterface", r"Add data0 \[198\.18\.0\.111/24\] from default/red")]))

    # ---- one pod per point -------------------------------------------------------------------------

    def new_pod(self, scenario, n):
        """A fresh pod (own name, uid, container id) ADDed with the scenario's first networks."""
        self.pod_name = "%s-%d" % (self.base_name[:40], n)
        self.pod_uid = "uid-" + self.pod_name
        self.container_id = "ctr-" + self.pod_name
        self.add_node_pod(scenario.before)
        self.assertOk(self.add(), "the runtime's ADD of " + self.pod_name)

    def strace_argv(self, out, inject=None):
        argv = [STRACE, "-o", out, "-ttt", "-yy", "-e", "trace=" + ",".join("?" + n for n in TRACED)]
        if inject:
            argv += ["-e", "inject=%s:signal=KILL:when=%d" % (inject.name, inject.index)]
        return argv + ["--"]

    def start_traced_agent(self, out, inject=None):
        """The agent under strace; returns (strace's process, the agent's pid) once its watch is open."""
        before = {w["id"] for w in self.api.watches()}
        # Without the API relay: its socket's removal at exit is no step of a hot-plug (the relay's
        # own life is test_agent_relay.py's and relay_test.cpp's).
        proc = self.start_agent("--relay-socket", "", wait_watch=False, wrapper=self.strace_argv(out, inject))
        self.wait_for(lambda: proc.poll() is not None or any(
            w["id"] not in before and w["path"] == "/api/v1/pods" for w in self.api.watches()),
            "the traced agent's pod watch")
        if proc.poll() is not None:
            raise Finding("the agent died before the annotation changed (stale calibration?); trace tail:\n%s"
                          % self.tail(out))
        children = strace_children(proc.pid)
        if len(children) != 1:
            raise Finding("strace has %d children, expected the agent alone" % len(children))
        # Killing strace would only detach it: the agent itself is killed when the test ends
        # (this cleanup runs before start_agent's, which reaps strace).
        self.addCleanup(self._kill_agent, proc, children[0])
        self.traced.append((proc, children[0]))
        return proc, children[0]

    def _kill_agent(self, proc, pid):
        """Kills a traced agent (then its strace exits) unless it is already gone."""
        if proc.poll() is None and not process_gone(pid):
            os.kill(pid, signal.SIGKILL)
        proc.wait(30)

    def tail(self, path, lines=12):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except FileNotFoundError:
            return "(no trace)"

    def hotplug_done(self, scenario):
        """The annotation's change is fully applied: status written and every event sent."""
        return self.status_interfaces() == self.expected_status(scenario) and not self.missing_events(scenario)

    def missing_events(self, scenario):
        """The reasons of the scenario's events the double has not received."""
        return [reason for reason, pattern in scenario.events
                if not any(re.fullmatch(pattern, m) for m in self.events(reason))]

    def expected_status(self, scenario):
        status = {"eth0": "cluster"}
        status.update({ifname: nad for ifname, (nad, _) in scenario.expected.items()})
        return status

    def converged(self, scenario):
        """The pod, its cache entry and its network-status show exactly the scenario's networks."""
        entry = self.entry()
        if not entry:
            return False
        attachments = entry["attachments"]
        return ([a["ifname"] for a in attachments] == ["eth0", *scenario.expected]
                and all(a.get("result") for a in attachments)
                and self.status_interfaces() == self.expected_status(scenario)
                and self.pod.link_names() == sorted(["eth0", "lo", *scenario.expected]))

    # ---- the checks ---------------------------------------------------------------------------------

    def check_converged(self, scenario):
        """Everything the module docstring promises once the agent converged (raises Finding)."""
        entry = self.entry()
        results = {}
        for a in entry["attachments"]:
            result = a["result"] if isinstance(a["result"], dict) else json.loads(a["result"])
            results[a["ifname"]] = sorted(ip_of(ip["address"]) for ip in result.get("ips", []))
        status = {e.get("interface"): sorted(e.get("ips", [])) for e in self.status()}
        problems = []
        reserved = []
        for ifname in ["eth0", *scenario.expected]:
            on_link = sorted(ip_of(a) for a in self.pod.addresses(ifname))
            if len(on_link) != 1 or on_link != results.get(ifname) or on_link != status.get(ifname):
                problems.append("%s: addresses %s in the pod, %s in the cache result, %s in the network-status"
                                % (ifname, on_link, results.get(ifname), status.get(ifname)))
                continue
            want = "192.0.2." if ifname == "eth0" else scenario.expected[ifname][1]
            ok = on_link[0] == want[1:] if want.startswith("=") else on_link[0].startswith(want)
            if not ok:
                problems.append("%s has %s, expected %s" % (ifname, on_link[0], want.lstrip("=") + "*"))
            reserved.append(on_link[0])
        reservations = self.tree.reservations()
        if sorted(os.path.basename(r) for r in reservations) != sorted(reserved):
            problems.append("host-local reservations %s, expected exactly %s" % (reservations, sorted(reserved)))
        if problems:
            raise Finding("after convergence:\n      " + "\n      ".join(problems))

    def check_runtime_del(self, what):
        run = self.delete()
        if run.rc != 0:
            raise Finding("the runtime's DEL %s failed: %s" % (what, self._explain(run)))
        try:
            self.assertNothingLeft(self.pod)
        except AssertionError as e:
            raise Finding("left behind after the runtime's DEL %s: %s" % (what, e)) from None

    # ---- the counting run and the points ------------------------------------------------------------

    def replacements(self):
        return [(self.tree.cni_dir, "<cniDir>"), (self.container_id, "<ctr>")]

    def counting_run(self, scenario):
        """Traces one hot-plug without injection; returns its kill points (calls after the change)."""
        self.new_pod(scenario, 0)
        out = self.tree.path("strace-count.out")
        proc, agent_pid = self.start_traced_agent(out)
        changed_at = time.time()
        self.annotate(scenario.after)
        self.wait_for(lambda: self.hotplug_done(scenario) and self.converged(scenario),
                      "the traced hot-plug of the counting run")
        os.kill(agent_pid, signal.SIGTERM)
        proc.wait(30)
        calls, _ = parse_trace(out)
        try:
            self.check_converged(scenario)
            self.check_runtime_del("after the counting run")
        except Finding as e:
            self.fail("the counting run (no kill): %s" % e)
        self.api.delete_pod("default", self.pod_name)
        points = [c for c in calls if c.ts >= changed_at and c.is_point()]
        # Name each TLS write of a request after the request the double received (same order).
        requests = ["%s %s" % (e["method"], e["path"].replace(self.pod_name, "<pod>")) for e in self.requests()
                    if e["started"] >= changed_at and e["headers"].get("user-agent", "").startswith("manifold/")]
        writes = [c for c in points if c.name in SENDS and c.tls_content_type() == "data"]
        if len(writes) == len(requests):
            for call, request in zip(writes, requests):
                call.request = request
        self.assertTrue(points, "the counting run found no step after the annotation changed")
        self.assertFalse([c for c in calls if c.ts >= changed_at and c.name in SPAWNS and c.result.startswith("-1")],
                         "a spawn failed in the counting run")
        return points, self.container_id

    def campaign(self, scenario):
        started = time.monotonic()
        points, counted_ctr = self.counting_run(scenario)
        labels = [p.describe([(self.tree.cni_dir, "<cniDir>"), (counted_ctr, "<ctr>")]) for p in points]
        ran = 0
        for n, (point, label) in enumerate(zip(points, labels), start=1):
            label = "%s: kill at %s" % (scenario.name, label)
            if not selected(label):
                continue
            ran += 1
            log_offset = os.path.getsize(self.agent_log)
            try:
                self.run_point(scenario, n, point, counted_ctr, label)
            except (Finding, AssertionError) as e:
                with open(self.agent_log, encoding="utf-8", errors="replace") as f:
                    f.seek(log_offset)
                    log = f.read()[-5000:]
                self.findings.append("[%s] %s\n    agent log of the point:\n%s" % (label, e, log))
                self.force_clean()
        seconds = time.monotonic() - started
        kinds = {}
        for p in points:
            kinds[p.name] = kinds.get(p.name, 0) + 1
        print("\n%s: %d kill points %s, ran %d; %d findings; %.1f s\n  %s" % (
            scenario.name, len(points), json.dumps(kinds), ran, len(self.findings), seconds,
            "\n  ".join("%s\n      left: %s" % (label, self.left.get("%s: kill at %s" % (scenario.name, label), "-"))
                         for label in labels)))
        if self.findings:
            self.fail("%d findings:\n%s" % (len(self.findings), "\n".join(self.findings)))

    def force_clean(self):
        """After a finding: stop every agent, DEL the point's pod; nothing may be left."""
        for proc, pid in self.traced:
            self._kill_agent(proc, pid)
        for proc in self.agents:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
        self.delete()
        try:
            self.assertNothingLeft(self.pod)
        except AssertionError as e:
            self.fail("cannot clean up after a finding, stopping: %s\nfindings so far:\n%s"
                      % (e, "\n".join(self.findings)))

    def run_point(self, scenario, n, point, counted_ctr, label):
        """Kills the agent at `point` of the hot-plug, restarts it, checks (raises Finding)."""
        self.new_pod(scenario, n)
        out = self.tree.path("strace-%d.out" % n)
        proc, _ = self.start_traced_agent(out, point)
        changed_at = time.time()
        self.annotate(scenario.after)
        self.wait_for(lambda: proc.poll() is not None or self.hotplug_done(scenario),
                      "the traced agent to die or to finish the hot-plug")
        try:
            proc.wait(GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            raise Finding("the agent finished the hot-plug without being killed (stale calibration); "
                          "trace tail:\n%s" % self.tail(out)) from None
        calls, killed = parse_trace(out)
        self.verify_hit(calls, killed, point, changed_at, counted_ctr, out)
        # A delegate the agent started may still run, orphaned: wait for it (a real node would
        # not, but the restarted agent's DEL racing the orphan's ADD is not what is tested here).
        children = [int(c.result.split()[0]) for c in calls
                    if c.name in SPAWNS and "CLONE_THREAD" not in c.args and c.result.split()[0].isdigit()]
        self.wait_for(lambda: all(process_gone(pid) for pid in children), "the orphaned delegate to finish")
        self.left[label] = self.crash_state()

        agent = self.start_agent()
        self.wait_for(lambda: self.converged(scenario), "the restarted agent to converge")
        self.check_converged(scenario)
        code = self.stop_agent(agent)
        if code != 0:
            raise Finding("the restarted agent exited %s on SIGTERM" % code)
        # Not a leak, so not a finding: an event the killed agent did not send is not sent again
        # (the restarted agent sees no difference left). Shown in the summary.
        missing = self.missing_events(scenario)
        if missing:
            self.left[label] += "; never sent: %s event" % ", ".join(missing)
        self.check_runtime_del("after the restarted agent converged")
        self.api.delete_pod("default", self.pod_name)

    def crash_state(self):
        """What the killed agent left, for the summary; raises Finding when the pod holds an
        interface the cache does not record (nothing could ever remove it)."""
        entry = self.entry() or {"attachments": []}
        recorded = [a["ifname"] for a in entry["attachments"]]
        links = [name for name in self.pod.link_names() if name != "lo"]
        unrecorded = sorted(set(links) - set(recorded))
        if unrecorded:
            raise Finding("the killed agent left %s in the pod, which its cache entry does not record (%s)"
                          % (unrecorded, recorded))
        temps = [f for f in self.tree.cache_files() if f.startswith(".tmp/")]
        return "pod %s; cache %s; status %s; %d reservations%s" % (
            ",".join(links), ",".join(a["ifname"] + ("" if a.get("result") else "(no result)")
                                      for a in entry["attachments"]),
            ",".join(self.status_interfaces()), len(self.tree.reservations()),
            "; %d cache temp file(s)" % len(temps) if temps else "")

    def verify_hit(self, calls, killed, point, changed_at, counted_ctr, out):
        """The agent died of SIGKILL at exactly the counting run's call (raises Finding)."""
        last = calls[-1] if calls else None
        if not killed or last is None or not last.result.startswith("?"):
            raise Finding("the agent did not die at an injected call; trace tail:\n%s" % self.tail(out))
        expected = point.shape(counted_ctr)
        if (last.name, last.index) != (point.name, point.index) or last.shape(self.container_id) != expected:
            raise Finding("killed at %s, expected %s (stale calibration)" % (
                last.describe(self.replacements()), point.describe(self.replacements())))
        if last.ts < changed_at:
            raise Finding("killed at %s before the annotation changed (stale calibration)"
                          % last.describe(self.replacements()))


if __name__ == "__main__":
    main()
