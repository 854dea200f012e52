"""A bounded soak of the crash suite's machinery (run by `test/bench/bench.py --only soak`, the
benchmark's long mode; never in CI): thousands of ADD/DEL cycles of one container through the
libcni driver on [bridge + host-local, macvlan with sourceRouting and an nft mesh], where about a
quarter of the calls have manifold killed at a random side-effect step and another quarter have a
random cache or netlink call fail (trace.py), each failure followed by the runtime's recovery (DEL,
until it succeeds, at most RECOVERY_ATTEMPTS times). Bounded by a cycle count and a time limit.
After every cycle cniDir and host-local's data dir must hold nothing (cache entries left by a call
that succeeded despite a failed step may wait for the runtime's next GC, which is then run); every
CHECK_EVERY cycles and at the end the whole snapshot (residue.py) must equal the baseline; and cniDir must not have grown
(the disk space of everything under it, directories included). Every problem is a finding: it is
recorded, the state is restored (residue.restore) and the soak goes on. The random choices come
from --soak-seed, so a run can be repeated with the same binary.
"""
import contextlib
import os
import random
import time

from crash import residue, trace
from crash.campaign import error_problem
from crash.trace import Injection, TraceError, Tracer
from harness import BRIDGE, MACVLAN_MASTER, configs
from harness.netns import Netns, add_veth
from harness.runner import Driver
from harness.tree import TempTree
from scoping_world import mesh, net1_conf

CONTAINER = "ctr-soak"
CHECK_EVERY = 100
RECOVERY_ATTEMPTS = 3


def disk_usage(directory):
    """Bytes of disk used by directory and everything under it."""
    total = 0
    for dirpath, dirs, files in os.walk(directory):
        for name in [dirpath] + [os.path.join(dirpath, f) for f in files]:
            total += os.lstat(name).st_blocks * 512
    return total


class Soak:
    """The soak's own world (temp tree, node and pod namespaces) and its figures."""

    def __init__(self, stack, manifold, driver_bin, seed):
        self.tree = stack.enter_context(TempTree(manifold))
        self.node = stack.enter_context(Netns())
        add_veth(self.node, MACVLAN_MASTER, MACVLAN_MASTER + "p")
        self.pod = stack.enter_context(Netns())
        self.driver = Driver(driver_bin, self.node, self.tree)
        self.tracer = Tracer(self.tree.bin_dir, manifold, self.tree.path("strace.out"))
        stack.callback(self.tracer.uninstall)
        delegates = [configs.bridge("1.0.0", self.tree.ipam_dir, bridge_name=BRIDGE),
                     net1_conf(False, mesh("nft"), {"enabled": True})]
        self.tree.write_conf(configs.manifold("1.1.0", delegates, self.tree.cni_dir, self.tree.log_file))
        self.places = residue.Places(self.pod, self.node, self.tree.cni_dir, self.tree.ipam_dir,
                                     self.tree.libcni_cache)
        self.rng = random.Random(seed)
        self.figures = {"cycles": 0, "kills": 0, "errors": {}, "harmless errors": 0, "recoveries": 0,
                        "deferred cleanups": 0}
        self.findings = []
        self.baseline = None
        self.injections = []  # what the current cycle injected

    # ---- runs --------------------------------------------------------------------------------------

    def run(self, verb, injection=None):
        """One driver call of verb, under strace when there is an injection; returns (run, trace)."""
        with open(self.tree.log_file, "w", encoding="utf-8"):
            pass  # the log stays small, and traced runs repeat their writes
        if injection is None:
            return self.driver(verb.lower(), self.pod.path, container_id=CONTAINER), None
        self.tracer.install(injection)
        try:
            run = self.driver(verb.lower(), self.pod.path, container_id=CONTAINER)
        finally:
            self.tracer.uninstall()
        return run, self.tracer.trace()

    def counting_run(self, verb):
        """(kill steps, error points) of a successful run of verb."""
        run, traced = self.run(verb, Injection())
        if run.rc != 0:
            raise AssertionError("the counting run of %s failed:\n%s" % (verb, run.describe()))
        return (trace.kill_steps(traced, self.tree.log_file),
                trace.error_points(traced, self.tree.cni_dir))

    def pick(self, plan):
        """None (a clean call), a kill at a random step or a random errno at a random point."""
        steps, points = plan
        roll = self.rng.random()
        if roll < 0.5:
            return None
        if roll < 0.75:
            return Injection(self.rng.choice(steps))
        call, errnos = self.rng.choice(points)
        return Injection(call, self.rng.choice(errnos))

    # ---- one cycle -----------------------------------------------------------------------------------

    def finding(self, what):
        """Records a finding of the current cycle, with what the cycle injected."""
        self.findings.append("cycle %d (%s): %s" % (self.figures["cycles"],
                                                    "; ".join(self.injections) or "no injection", what))

    def judged(self, verb, injection):
        """Runs verb with the injection, checks the hit and the error; True when it succeeded."""
        run, traced = self.run(verb, injection)
        if injection is None:
            if run.rc != 0:
                self.finding("%s without injection failed: %s" % (verb, run.describe()))
            return run.rc == 0
        label = "%s %s at %s" % (verb, injection.label(), injection.call.describe())
        self.injections.append(label)
        try:
            trace.verify_hit(traced, injection)
        except TraceError as e:
            self.finding("%s: %s" % (label, e))
        if injection.errno:
            self.figures["errors"][injection.errno] = self.figures["errors"].get(injection.errno, 0) + 1
            problem = error_problem(run, injection.errno) if run.rc != 0 else None
            if problem:
                self.finding("%s: %s" % (label, problem))
            self.figures["harmless errors"] += run.rc == 0
        else:
            self.figures["kills"] += 1
        return run.rc == 0

    def recover(self):
        """The runtime's DEL until it succeeds."""
        self.figures["recoveries"] += 1
        for _ in range(RECOVERY_ATTEMPTS):
            if self.run("DEL")[0].rc == 0:
                return
        self.finding("DEL failed %d times in a row after a failure" % RECOVERY_ATTEMPTS)

    def cycle(self, add_plan, del_plan):
        """ADD then DEL, each maybe injected, with the runtime's recovery; then the cheap checks."""
        self.figures["cycles"] += 1
        self.injections = []
        if not self.judged("ADD", self.pick(add_plan)) or not self.judged("DEL", self.pick(del_plan)):
            self.recover()
        left = self.left_on_disk()
        if left and not left.get("host-local reservations"):
            self.figures["deferred cleanups"] += 1
            self.driver("gc", "", valid_attachments=[])  # the runtime's next GC (a harmless error)
            left = self.left_on_disk()
        if left:
            self.finding("left after the cycle: %s" % left)
            self.restore(self.baseline)

    def left_on_disk(self):
        """cniDir entries and host-local reservations that exist now ({} when none)."""
        state = residue.file_state(self.places)
        return {k: v for k, v in state.items() if k in ("cniDir", "host-local reservations") and v}

    def restore(self, baseline):
        """Back to the baseline after a finding (residue.restore)."""
        left = residue.restore(self.places, baseline)
        if left:
            raise AssertionError("cannot restore the soak's baseline:\n%s" % "\n".join(left))

    def full_check(self):
        """The whole snapshot against the baseline."""
        diffs = residue.differences(self.baseline, residue.snapshot(self.places))
        if diffs:
            self.finding("residue: %s" % "; ".join(diffs))
            self.restore(self.baseline)

    # ---- the soak ------------------------------------------------------------------------------------

    def soak(self, cycles, seconds, progress):
        """Runs the soak; returns its figures (findings included)."""
        started = time.monotonic()
        for verb in ("ADD", "DEL"):
            if self.run(verb)[0].rc != 0:
                raise AssertionError("the warm-up %s failed" % verb)
        self.baseline = residue.snapshot(self.places)
        usage_before = disk_usage(self.tree.cni_dir)
        add_plan = self.counting_run("ADD")
        del_plan = self.counting_run("DEL")
        while self.figures["cycles"] < cycles and time.monotonic() - started < seconds:
            self.cycle(add_plan, del_plan)
            if self.figures["cycles"] % CHECK_EVERY == 0:
                self.full_check()
                progress(self.figures, len(self.findings), time.monotonic() - started)
        self.full_check()
        usage_after = disk_usage(self.tree.cni_dir)
        if usage_after > usage_before:
            self.finding("cniDir grew from %d to %d bytes" % (usage_before, usage_after))
        return dict(self.figures, seconds=round(time.monotonic() - started, 1),
                    add_steps=len(add_plan[0]), add_error_points=len(add_plan[1]),
                    del_steps=len(del_plan[0]), del_error_points=len(del_plan[1]),
                    cni_dir_bytes_before=usage_before, cni_dir_bytes_after=usage_after,
                    findings=self.findings)


def run_soak(manifold, driver_bin, cycles, seconds, seed, progress):
    """Builds the soak's world, runs it, tears it down; returns the figures."""
    with contextlib.ExitStack() as stack:
        return Soak(stack, manifold, driver_bin, seed).soak(cycles, seconds, progress)
