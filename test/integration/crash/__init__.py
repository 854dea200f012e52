"""The crash-consistency suite's shared code (test_crash_*.py): manifold is killed at every
side-effect step of ADD, CHECK, DEL and GC, or one of its system calls fails, and after the
runtime's recovery nothing may be left behind.

trace.py     strace as the runtime's view of manifold: counting runs, steps, injections, hit checks
residue.py   snapshots of namespaces and directories, and their differences
campaign.py  CrashMixin: the per-verb campaign (baseline, counting run, points, findings, figures)
soak.py      the bounded soak of test/bench/bench.py --only soak: random kills and errors on repeat
test_trace.py  unit tests of trace.py and the CI sampling (ctest "integration: crash_trace")
"""
