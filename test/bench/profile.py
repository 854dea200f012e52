#!/usr/bin/env python3
"""Instruction counts of manifold's verbs under callgrind (the benchmark's profiling, repeatable on a
loaded machine where wall times are not).

    sudo python3 test/bench/profile.py --manifold BIN [--only version,bridge,k8s-1,k8s-16,agent-1]
                                       [--top N] [--json FILE] [--keep DIR] [--symbol-order FILE]

BIN must have symbols: the Debug build's manifold, or an unstripped static release binary (the
link line of `ninja -C build/debug/static -t commands manifold` without `-s`). Every verb runs once
unmeasured, then once under `valgrind --tool=callgrind` in the same node and pod namespaces as the
benchmark (bench.py's World and API server double): VERSION; ADD, CHECK, DEL with one bridge
delegate and no Kubernetes; ADD, CHECK, DEL with the pod and k macvlan NADs looked up in the API
server double, then apireplay (the benchmark's fresh-process API floor, apireplay.c) sending that
ADD's requests; agent-N: the k8s-N verbs with the API requests handed to a running `manifold
agent` (its relay), apireplay still the direct floor. Prints manifold's own instructions (Ir,
delegates are not traced) per verb, the floor's as "k8s-N apireplay" and, with --top, the functions
with the most inclusive instructions.
apireplay is $APIREPLAY (build/*/test/bench/apireplay, with symbols) or built on the fly. Needs
root and valgrind.

--symbol-order FILE writes the functions manifold ran in those verbs, by their linker (mangled)
names, verb by verb: the static build's `plugin/symbol-order.txt`, which lld uses to lay the
code of a CNI call out together (CMakeLists.txt). Regenerate it from an unstripped static binary
after changes to what a call runs (then --top prints mangled names).
"""
import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

import bench  # noqa: E402


def total_instructions(callgrind_file):
    """The Ir total callgrind wrote ("summary:" or "totals:" line)."""
    with open(callgrind_file, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"^(?:summary|totals):\s+(\d+)", line)
            if m:
                return int(m.group(1))
    raise bench.BenchError("no instruction total in " + callgrind_file)


FUNCTION_NAME = re.compile(r"^c?fn=\(\d+\) (.+)$")


def executed_functions(callgrind_files):
    """The functions named in callgrind files (run with --demangle=no), first seen first, each
    once; callgrind's own entries ("(below main)", bare addresses) left out."""
    names = {}
    for path in callgrind_files:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = FUNCTION_NAME.match(line.rstrip("\n"))
                if not m:
                    continue
                name = re.sub(r"'\d+$", "", m.group(1))  # callgrind's recursion-depth suffix
                if not name.startswith(("0x", "(")):
                    names.setdefault(name, None)
    return list(names)


def write_symbol_order(path, rows, manifold):
    with open(path, "w", encoding="utf-8") as f:
        f.write("# The functions CNI calls run, verb by verb: lld places them together in the static binary\n"
                "# (CMakeLists.txt), so a call faults in fewer of its pages. Written by\n"
                "# `test/bench/profile.py --symbol-order` from callgrind runs of %s\n"
                "# (%s); names no longer in the binary are ignored.\n"
                % (os.path.basename(manifold), ", ".join(r["label"] for r in rows)))
        for name in executed_functions([r["file"] for r in rows]):
            f.write(name + "\n")


def top_functions(callgrind_file, n):
    """The n functions with the most inclusive instructions: [(Ir, name)]."""
    proc = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", callgrind_file],
                          capture_output=True, text=True, check=True)
    out = []
    for line in proc.stdout.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+(?:\([\s\d.%]+\)\s+)?(\S.*)$", line)
        if m and ":" in m.group(2):
            out.append((int(m.group(1).replace(",", "")), m.group(2).split(" [")[0]))
        if len(out) >= n:
            break
    return out


class Profiler:
    def __init__(self, world, out_dir, top, mangled=False):
        self.world = world
        self.out_dir = out_dir
        self.top = top
        self.mangled = mangled  # function names as the linker knows them (--symbol-order)
        self.rows = []

    def run(self, label, command, conf=None, args=None, argv=None):
        env = bench.cni_env(command, self.world.pod.path, args=args)
        stdin = json.dumps(conf) if conf is not None else '{"cniVersion":"1.0.0"}'
        if command == "VERSION" or argv:
            env = bench.base_env()
            env["CNI_COMMAND"] = command
        out = os.path.join(self.out_dir, label.replace(" ", "-") + ".out")
        mangled = ["--demangle=no"] if self.mangled else []
        proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + mangled +
                              (argv or [self.world.manifold]), input=stdin.encode(), env=env,
                              capture_output=True, timeout=600)
        if proc.returncode != 0:
            raise bench.BenchError("%s under callgrind failed:\n%s\n%s" % (
                label, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")[-3000:]))
        row = {"label": label, "instructions": total_instructions(out), "file": out}
        if self.top:
            row["top"] = top_functions(out, self.top)
        self.rows.append(row)
        return row

    def cycle(self, name, conf, args=None, kube=None):
        # Unmeasured first: page cache, bridge creation, host-local's first reservation.
        for verb in bench.VERBS:
            self.world.run_manifold(verb, conf, args=args)
        add_requests = None
        if kube:
            kube.take_requests()
        for verb in bench.VERBS:
            self.run("%s %s" % (name, verb), verb, conf, args)
            if kube and verb == "ADD":
                add_requests = kube.take_requests()
        self.world.assert_pod_clean("manifold DEL")
        if kube:
            # The fresh-process API floor of the same ADD: apireplay sending manifold's requests.
            self.run("%s apireplay" % name, "apireplay", argv=kube.apireplay_argv(self.world, add_requests))
            kube.take_requests()


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--manifold", required=True, help="a manifold binary with symbols")
    p.add_argument("--only", default="version,bridge,k8s-1,k8s-16,agent-1")
    p.add_argument("--top", type=int, default=0, help="print the N most expensive functions per verb")
    p.add_argument("--json", help="write the counts here")
    p.add_argument("--keep", help="keep the callgrind files in this directory")
    p.add_argument("--symbol-order", help="write the functions the verbs ran here (plugin/symbol-order.txt)")
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        print("profile.py needs root (network namespaces)", file=sys.stderr)
        return 2
    if not shutil.which("valgrind"):
        print("profile.py needs valgrind", file=sys.stderr)
        return 2
    only = args.only.split(",")
    bench.remove_stale_namespaces()
    bench_args = bench.parse_args(["--quick", "--manifold", args.manifold,
                                   "--driver", os.environ.get("CNI_DRIVER", "/bin/true")])
    with contextlib.ExitStack() as stack:
        world = bench.World(stack, bench_args)
        out_dir = args.keep or world.mkdir("callgrind")
        os.makedirs(out_dir, exist_ok=True)
        prof = Profiler(world, out_dir, args.top, mangled=bool(args.symbol_order))
        if "version" in only:
            world.exec([world.manifold], dict(bench.base_env(), CNI_COMMAND="VERSION"), '{"cniVersion":"1.0.0"}')
            prof.run("version VERSION", "VERSION")
        if "bridge" in only:
            prof.cycle("bridge", world.manifold_conf(world.mkdir("cache-bridge"), [world.bridge_conf()]))
        kube = None
        for name in only:
            prefix = next((p for p in ("k8s-", "agent-") if name.startswith(p)), None)
            if prefix is None:
                continue
            k = int(name[len(prefix):])
            kube = kube or bench.Kube(stack, world)
            kube.set_networks(world, k)
            with contextlib.ExitStack() as agent_stack:
                extra = {}
                if prefix == "agent-":
                    # The same ADD with its requests handed to a running `manifold agent` (its API relay).
                    agent = bench.AgentProcess(world, kube, world.mkdir("cache-agent-process-" + name))
                    agent_stack.callback(agent.stop)
                    bench.wait_for_relay(agent)
                    extra["agentSocket"] = agent.relay_socket
                conf = world.manifold_conf(world.mkdir("cache-" + name), [world.bridge_conf()],
                                           kubeconfig=kube.kubeconfig, **extra)
                prof.cycle(name, conf, bench.Kube.cni_args(), kube)
        print("%-20s %15s" % ("verb", "instructions"))
        for row in prof.rows:
            print("%-20s %15s" % (row["label"], "{:,}".format(row["instructions"])))
            for ir, fn in row.get("top", []):
                print("    %15s  %s" % ("{:,}".format(ir), fn[:150]))
        if args.symbol_order:
            write_symbol_order(args.symbol_order, [r for r in prof.rows if "apireplay" not in r["label"]],
                               args.manifold)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump({"manifold": args.manifold, "rows": prof.rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except bench.BenchError as e:
        print("profile: %s" % e, file=sys.stderr)
        sys.exit(1)
