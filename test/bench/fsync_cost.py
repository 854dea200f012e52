#!/usr/bin/env python3
"""What making manifold's cache durable would cost per ADD on this machine.

    python3 test/bench/fsync_cost.py [--dir DIR] [--runs N] [--bytes B] [--saves S]

manifold saves a container's cache entry the way lib/store does it: write a temp file in
`<cniDir>/.tmp`, rename it over `<cniDir>/<entry>`; today without any fsync. This measures, in a
directory on the same filesystem as the real cniDir (default: a temp directory under /var/lib, next
to /var/lib/cni), that save alone and that save made durable: fsync of the temp file before the
rename and fsync of the directory after it (the entry's directory, and .tmp's for the created and
removed temp name). The two alternate run by run, so load changes hit both alike. Prints median and
p90 per save in microseconds, and per ADD for `--saves` saves (an ADD saves its entry twice: every
network before the first delegate runs, then the results; once more with Kubernetes, and twice
more per network with scoping, as the crash suite's step lists show). No root needed; nothing
outside --dir is touched.
"""
import argparse
import os
import shutil
import statistics
import tempfile
import time


def save(directory, name, data, durable):
    """One cache save: temp file in .tmp, optionally fsynced, renamed, directories fsynced."""
    tmp_dir = os.path.join(directory, ".tmp")
    tmp = os.path.join(tmp_dir, name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, os.path.join(directory, name))
    if durable:
        for d in (directory, tmp_dir):
            dir_fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)


def timed_us(directory, name, data, durable):
    """Microseconds one save takes."""
    start = time.perf_counter_ns()
    save(directory, name, data, durable)
    return (time.perf_counter_ns() - start) / 1000.0


def percentile(values, q):
    """The q-th percentile (0-100) by linear interpolation."""
    v = sorted(values)
    pos = (len(v) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def measure(directory, runs, size):
    """{"plain": [us...], "durable": [us...]}, alternating (and swapping order every other run)."""
    data = (b'{"kind":"manifold-cache","version":1,' + b"x" * size)[:size]
    samples = {"plain": [], "durable": []}
    for i in range(runs):
        order = (False, True) if i % 2 == 0 else (True, False)
        for durable in order:
            samples["durable" if durable else "plain"].append(
                timed_us(directory, "entry-%d.json" % durable, data, durable))
    return samples


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", help="where to measure (default: a temp dir under /var/lib)")
    p.add_argument("--runs", type=int, default=500, help="saves of each kind (default %(default)s)")
    p.add_argument("--bytes", type=int, default=2500, help="entry size (default %(default)s, a "
                   "two-network entry)")
    p.add_argument("--saves", type=int, default=2, help="saves per ADD (default %(default)s)")
    args = p.parse_args()
    parent = args.dir or ("/var/lib" if os.access("/var/lib", os.W_OK) else None)
    directory = tempfile.mkdtemp(prefix="mf-fsync-", dir=parent)
    try:
        os.makedirs(os.path.join(directory, ".tmp"))
        samples = measure(directory, args.runs, args.bytes)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print("directory: %s (%d runs of each, %d-byte entry)" % (os.path.dirname(directory), args.runs, args.bytes))
    for kind in ("plain", "durable"):
        v = samples[kind]
        print("%-8s per save: median %8.1f us  p90 %8.1f us   per ADD (%d saves): median %8.1f us  p90 %8.1f us"
              % (kind, statistics.median(v), percentile(v, 90), args.saves,
                 args.saves * statistics.median(v), args.saves * percentile(v, 90)))
    extra = [d - p_ for d, p_ in zip(samples["durable"], samples["plain"])]
    print("fsyncs add per save: median %.1f us, p90 %.1f us; per ADD: median %.2f ms, p90 %.2f ms"
          % (statistics.median(extra), percentile(extra, 90),
             args.saves * statistics.median(extra) / 1000, args.saves * percentile(extra, 90) / 1000))


if __name__ == "__main__":
    main()
