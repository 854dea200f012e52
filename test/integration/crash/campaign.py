"""The crash campaign: kill manifold at every side-effect step of a verb, or fail one system call,
then recover as a runtime would and require that nothing is left behind.

CrashMixin goes in front of a scenario's test case class (ManifoldTestCase or a subclass), which
provides invoke() (one runtime call of a verb for a container) and places(). For each verb the
campaign

 1. cycles the container once (ADD, DEL) and takes the baseline snapshot (residue.py): the pod
    must then hold only lo and cniDir nothing; for GC a second container, ctr-keep, is added and
    stays valid through every GC (it is part of the baseline, and is CHECKed and DELed at the end);
 2. traces one successful run of the verb (the counting run) and lists its steps (trace.py);
 3. for every kill step: prepares the verb's precondition (prepare()), runs the verb with manifold
    killed at that step (verified to be the step the counting run found), recovers as a runtime
    does (a killed ADD is followed by DEL, a killed DEL by DEL, a killed CHECK by CHECK then DEL,
    a killed GC by GC) and compares a snapshot with the baseline. A fresh ADD of the same
    container and its DEL must then work: after every killed ADD explicitly, for the other verbs
    through the next point's preparing ADD and once more at the end;
 4. for every error point (sampled in CI, see select_errors): the same with an errno injected. The
    verb must either succeed (the step was harmless; an ADD must then pass CHECK) or fail with a
    CNI error JSON whose code is a CNI error code and whose message names the errno. A success
    that left only cniDir entries behind is followed by the runtime's next GC, which must remove
    them (the documented deferred cleanup, counted in the figures).

Every problem becomes a Finding (scenario, verb, injection, step, what was wrong) instead of
stopping the campaign; the state is then forced back to the baseline so later points are judged
on their own, and the test fails at the end listing every finding.

Environment: MANIFOLD_CRASH_MODE=long injects every errno at every error point (default "ci": one
errno at every cache call and netlink request and at one in 4 netlink receives, see select_errors); MANIFOLD_CRASH_ONLY=text runs only the points whose label contains text (e.g.
"kill at rename#3"), to reproduce a finding; MANIFOLD_CRASH_REPORT=file appends each campaign's
figures, steps and findings to file as a JSON line.
"""
import json
import os
import shutil
import time

from crash import residue, trace
from crash.trace import Injection, TraceError, Tracer

CONTAINER = "ctr-crash"
KEEP = "ctr-keep"
CI_RECEIVE_STRIDE = 4
ERRNO_TEXTS = {
    "ENOSPC": ("No space left on device",),
    "EIO": ("Input/output error",),
    # libnl turns ENOBUFS into NLE_NOMEM ("Out of memory") and EBUSY into NLE_BUSY ("Object busy").
    "ENOBUFS": ("No buffer space available", "Out of memory"),
    "EBUSY": ("Device or resource busy", "Object busy"),
}
CNI_CODES = frozenset([1, 2, 3, 4, 5, 6, 7, 11, 50, 51] + list(range(100, 108)))


def long_mode():
    """True when MANIFOLD_CRASH_MODE=long: every errno at every error point."""
    return os.environ.get("MANIFOLD_CRASH_MODE", "ci") == "long"


def select_errors(points, long):
    """(call, errno) pairs to run. Long mode: every errno at every point. CI: every cache call and
    every netlink request once, and the 3rd of every CI_RECEIVE_STRIDE netlink receives (libnl
    peeks, then reads each message, so that is the peek at an answer's second message: the ACK or
    NLMSG_DONE), one errno each, the errnos of a family taking turns (deterministic, so a CI
    failure reproduces)."""
    if long:
        return [(call, errno) for call, errnos in points for errno in errnos]
    turns, receives, chosen = {}, 0, []
    for call, errnos in points:
        if call.name in trace.RECEIVES:
            receives += 1
            if receives % CI_RECEIVE_STRIDE != 3:
                continue
        turn = turns[errnos] = turns.get(errnos, -1) + 1
        chosen.append((call, errnos[turn % len(errnos)]))
    return chosen


def selected(label):
    """Whether MANIFOLD_CRASH_ONLY (if set) lets this point run."""
    only = os.environ.get("MANIFOLD_CRASH_ONLY")
    return not only or only in label


def error_problem(run, errno):
    """Why a failed run's error is not a clear CNI error naming errno, or None when it is."""
    if run.error is None:
        return "no CNI error JSON (exit %d)" % run.rc
    code = run.error.get("code")
    text = ("%s %s" % (run.error.get("msg", ""), run.error.get("details", ""))).strip()
    if code not in CNI_CODES:
        return "error code %r is not a CNI error code: %s" % (code, text)
    if not any(t in text for t in ERRNO_TEXTS[errno]):
        return "error %s does not name %s: %s" % (code, errno, text)
    return None


class Finding:
    """One thing the campaign found wrong."""

    def __init__(self, scenario, verb, label, problem):
        self.scenario = scenario
        self.verb = verb
        self.label = label
        self.problem = problem

    def __str__(self):
        return "[%s %s] %s: %s" % (self.scenario, self.verb, self.label, self.problem)


class PointFailed(Exception):
    """A check of one point failed; the message says what."""


class CrashMixin:
    """The campaign, for a scenario test case providing invoke(verb, container, ns, valid) and
    places(); `scenario` names it in findings and reports. Every scenario runs one campaign per
    verb (the test_* methods below)."""

    scenario = "?"

    def test_add(self):
        self.campaign("ADD")

    def test_check(self):
        self.campaign("CHECK")

    def test_del(self):
        self.campaign("DEL")

    def test_gc(self):
        self.campaign("GC")

    def setUp(self):
        super().setUp()
        if trace.sanitized(self.manifold_bin):
            self.fail("the crash suite needs a manifold without sanitizers (ASan multiplies its system "
                      "calls): run it against the Debug build, as test/run-all.sh does")
        self.tracer = Tracer(self.tree.bin_dir, self.manifold_bin, self.tree.path("strace.out"))
        self.addCleanup(self.tracer.uninstall)
        self.findings = []
        self.figures = {"kills": 0, "errors": {}, "deferred cleanups": 0, "error codes": {}}
        self.keep_ns = None
        self.ctr_ns = self.pod

    # ---- runtime calls ---------------------------------------------------------------------------

    def call(self, verb, container=CONTAINER, valid=None):
        """One runtime call of verb for container (ctr-crash in ctr_ns, ctr-keep in keep_ns)."""
        ns = self.keep_ns if container == KEEP else self.ctr_ns
        return self.invoke(verb, container, ns, valid)

    @staticmethod
    def require(run, what):
        """Raises PointFailed unless the run succeeded."""
        if run.rc != 0:
            raise PointFailed("%s failed: %s" % (what, (run.error or {}).get("msg") or run.stderr[-500:]))

    def gc(self):
        """The runtime's GC, with ctr-keep (when it exists) as the only valid attachment."""
        valid = [{"containerID": KEEP, "ifname": "eth0"}] if self.keep_ns else []
        return self.call("GC", valid=valid)

    def forget_runtime_cache(self):
        """What a runtime does once GC dropped a sandbox: removes its own (libcni) cache entries."""
        for dirpath, _, files in os.walk(self.places().libcni_cache):
            for name in files:
                if CONTAINER in name:
                    os.unlink(os.path.join(dirpath, name))

    # ---- verb flows ------------------------------------------------------------------------------

    def prepare(self, verb):
        """The verb's precondition. ADD: no cniDir yet (the node's first pod, so creating it is
        among the steps). CHECK, DEL: the container exists. GC: the container was added in a
        sandbox the runtime has since torn down (GC never enters a namespace)."""
        if verb == "ADD":
            if not residue.file_state(self.places())["cniDir"]:
                shutil.rmtree(self.places().cni_dir, ignore_errors=True)
            return
        if verb == "GC":
            self.ctr_ns = self.new_netns()
        self.require(self.call("ADD"), "ADD before " + verb)
        if verb == "GC":
            self.ctr_ns.delete()

    def target(self, verb):
        """The runtime call under test."""
        return self.gc() if verb == "GC" else self.call(verb)

    def finish(self, verb):
        """Ends a successful run of the verb the way the runtime would: back to no container."""
        if verb in ("ADD", "CHECK"):
            self.require(self.call("DEL"), "DEL after " + verb)
        elif verb == "GC":
            self.forget_runtime_cache()

    def recover(self, verb):
        """What the runtime does after the verb failed: DEL after ADD or DEL, CHECK again (then
        DEL) after CHECK, GC again after GC."""
        if verb in ("ADD", "DEL"):
            self.require(self.call("DEL"), "the runtime's DEL after the failed " + verb)
        elif verb == "CHECK":
            self.require(self.call("CHECK"), "CHECK again after the failed CHECK")
            self.require(self.call("DEL"), "DEL after CHECK")
        else:
            self.require(self.gc(), "GC again after the failed GC")
            self.forget_runtime_cache()

    def fresh_cycle(self, baseline):
        """A fresh ADD of the same container and its DEL (in a new sandbox when the last one was
        torn down), then the baseline again."""
        if not self.ctr_ns.exists():
            self.ctr_ns = self.new_netns()
        self.require(self.call("ADD"), "a fresh ADD of the same container")
        self.require(self.call("DEL"), "DEL of the fresh ADD")
        self.require_clean(baseline, "after a fresh ADD and DEL")

    # ---- state -----------------------------------------------------------------------------------

    def extra_namespaces(self):
        """Namespaces snapshotted besides the pod and node: ctr-keep's, when it exists."""
        return [self.keep_ns] if self.keep_ns else []

    def snapshot(self):
        """A snapshot of the scenario's places and extra namespaces."""
        return residue.snapshot(self.places(), *self.extra_namespaces())

    def require_clean(self, baseline, when):
        """Raises PointFailed when anything differs from the baseline."""
        diffs = residue.differences(baseline, self.snapshot())
        if diffs:
            raise PointFailed("residue %s:\n      %s" % (when, "\n      ".join(diffs)))

    def force_clean(self, baseline):
        """Puts the namespaces and directories back to the baseline after a finding (a DEL, then
        residue.restore); fails the test when even that does not restore it."""
        self.call("DEL")
        diffs = residue.restore(self.places(), baseline, *self.extra_namespaces())
        if diffs:
            self.fail("cannot restore the baseline after a finding, stopping:\n%s\nfindings so far:\n%s"
                      % ("\n".join(diffs), "\n".join(map(str, self.findings))))

    # ---- one point ---------------------------------------------------------------------------------

    def traced_run(self, verb, injection):
        """Runs the verb with manifold under strace (and the injection); returns (run, trace)."""
        with open(self.tree.log_file, "w", encoding="utf-8"):
            pass  # every traced run starts from the same (empty) log, so its writes repeat
        self.tracer.install(injection)
        try:
            run = self.target(verb)
        finally:
            self.tracer.uninstall()
        return run, self.tracer.trace()

    def count_error_code(self, run):
        """Tallies the CNI error codes the injections produced."""
        code = str((run.error or {}).get("code"))
        self.figures["error codes"][code] = self.figures["error codes"].get(code, 0) + 1

    def after_success_with_error(self, verb, baseline):
        """The verb succeeded although a call failed: it must have been harmless."""
        if verb == "ADD":
            self.require(self.call("CHECK"), "CHECK after an ADD that reported success")
        self.finish(verb)
        diffs = residue.differences(baseline, self.snapshot())
        if residue.only_cache_entries(diffs):
            self.figures["deferred cleanups"] += 1
            self.require(self.gc(), "the runtime's next GC")
            self.forget_runtime_cache()
            diffs = residue.differences(baseline, self.snapshot())
        if diffs:
            raise PointFailed("residue after a %s that reported success:\n      %s" % (
                verb, "\n      ".join(diffs)))

    def run_point(self, verb, injection, baseline):
        """Prepares, injects, verifies the hit, judges, recovers and checks; raises PointFailed."""
        self.prepare(verb)
        run, traced = self.traced_run(verb, injection)
        trace.verify_hit(traced, injection)
        if injection.errno and run.rc == 0:
            self.after_success_with_error(verb, baseline)
            return
        if injection.errno:
            self.count_error_code(run)
            problem = error_problem(run, injection.errno)
            if problem:
                raise PointFailed(problem)
        elif run.rc == 0:
            raise PointFailed("the runtime saw success although manifold was killed")
        self.recover(verb)
        self.require_clean(baseline, "after the runtime's recovery")
        if verb == "ADD" and not injection.errno:
            self.fresh_cycle(baseline)

    def point(self, verb, injection, baseline):
        """One point; a problem becomes a Finding and the state is forced back to the baseline."""
        try:
            self.run_point(verb, injection, baseline)
        except (PointFailed, TraceError) as e:
            self.findings.append(Finding(self.scenario, verb, self.label(injection), str(e)))
            self.force_clean(baseline)

    def label(self, injection):
        """"kill at rename#3 ..." / "ENOSPC at write#21 ...", with <cniDir> and <tree> for the
        test's directories: what findings show and MANIFOLD_CRASH_ONLY matches."""
        return "%s at %s" % (injection.label(), injection.call.describe(self.replacements()))

    def replacements(self):
        """Long prefixes shortened in step descriptions."""
        return [(self.places().cni_dir, "<cniDir>"), (self.tree.root, "<tree>")]

    # ---- campaign ----------------------------------------------------------------------------------

    def baseline(self, verb):
        """Cycles the container once and snapshots; for GC, ADDs ctr-keep first."""
        self.assertOk(self.call("ADD"), "the warm-up ADD")
        self.assertOk(self.call("DEL"), "the warm-up DEL")
        clean = self.snapshot()
        self.assertEqual(clean["cniDir"], [], "a clean ADD and DEL left cache entries")
        self.assertEqual(clean["pod links"], ["lo"], "a clean ADD and DEL left links in the pod")
        if verb == "GC":
            self.keep_ns = self.new_netns()
            self.assertOk(self.call("ADD", KEEP), "ADD of ctr-keep")
            clean = self.snapshot()
        return clean

    def counting_run(self, verb, baseline):
        """Traces a successful run of the verb and checks it left nothing; returns its trace."""
        self.prepare(verb)
        run, traced = self.traced_run(verb, Injection())
        self.assertOk(run, "the counting run of " + verb)
        self.finish(verb)
        try:
            self.require_clean(baseline, "after the counting run")
        except PointFailed as e:
            self.fail(str(e))
        return traced

    def campaign(self, verb):
        """Runs the verb's kill and error points; fails the test listing every finding."""
        started = time.monotonic()
        baseline = self.baseline(verb)
        traced = self.counting_run(verb, baseline)
        steps = trace.kill_steps(traced, self.tree.log_file)
        points = trace.error_points(traced, self.places().cni_dir)
        for call in steps:
            self.run_selected(verb, Injection(call), baseline)
        for call, errno in select_errors(points, long_mode()):
            self.run_selected(verb, Injection(call, errno), baseline)
        if verb != "ADD":
            self.final_fresh_cycle(verb, baseline)
        if verb == "GC":
            self.assertOk(self.call("CHECK", KEEP), "CHECK of ctr-keep after every GC")
            self.assertOk(self.call("DEL", KEEP), "DEL of ctr-keep")
        self.report(verb, steps, points, time.monotonic() - started)

    def run_selected(self, verb, injection, baseline):
        """Runs one point unless MANIFOLD_CRASH_ONLY excludes it, and counts it."""
        if not selected(self.label(injection)):
            return
        if injection.errno:
            self.figures["errors"][injection.errno] = self.figures["errors"].get(injection.errno, 0) + 1
        else:
            self.figures["kills"] += 1
        self.point(verb, injection, baseline)

    def final_fresh_cycle(self, verb, baseline):
        """The last fresh ADD and DEL of the campaign (the others were the points' own ADDs)."""
        try:
            self.fresh_cycle(baseline)
        except PointFailed as e:
            self.findings.append(Finding(self.scenario, verb, "fresh ADD and DEL at the end", str(e)))

    def report(self, verb, steps, points, seconds):
        """Prints the figures, appends them to MANIFOLD_CRASH_REPORT, fails on findings."""
        kinds = [trace.point_kind(call) for call, _ in points]
        figures = dict(self.figures, scenario=self.scenario, verb=verb, steps=len(steps),
                       error_points=len(points), mode="long" if long_mode() else "ci",
                       error_point_kinds={k: kinds.count(k) for k in sorted(set(kinds))},
                       seconds=round(seconds, 1), findings=[str(f) for f in self.findings],
                       step_list=[c.describe(self.replacements()) for c in steps])
        print("\n%s %s: %d kill steps, %d error points; injected %d kills, errors %s; %d findings; "
              "%.1f s" % (self.scenario, verb, len(steps), len(points), figures["kills"],
                          json.dumps(figures["errors"]), len(self.findings), seconds))
        path = os.environ.get("MANIFOLD_CRASH_REPORT")
        if path:
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps(figures) + "\n")
        if self.findings:
            self.fail("%d findings:\n%s" % (len(self.findings), "\n".join(map(str, self.findings))))


class DriverCrashMixin(CrashMixin):
    """CrashMixin for a scenario without Kubernetes: the runtime is the libcni driver, the places
    are the test's pod and node namespaces and its tree's directories."""

    def invoke(self, verb, container, ns, valid):
        """The libcni driver's call (GC through pkg/invoke with the valid attachments)."""
        if verb == "GC":
            return self.driver("gc", "", valid_attachments=valid)
        return self.driver(verb.lower(), ns.path, container_id=container)

    def places(self):
        """The test's namespaces and directories."""
        return residue.Places(self.pod, self.node, self.tree.cni_dir, self.tree.ipam_dir,
                              self.tree.libcni_cache)
