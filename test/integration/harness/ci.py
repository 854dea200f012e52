"""Skips that cannot hide in CI. Outside CI a test that cannot run here (not root, a kernel feature
or a tool missing) is reported as skipped: the test file exits with SKIP_EXIT (77), which CTest's
SKIP_RETURN_CODE shows as "Skipped". With CI=true in the environment the same test fails instead,
unless what it lacks is a kernel feature listed in MANIFOLD_CI_ABSENT_FEATURES (comma-separated,
set by .ci/run for the CI machine kind) and really absent here: those skips stay skips, tagged so
exit_status() can tell them from the others.
"""
import os
import sys
import unittest

SKIP_EXIT = 77
ABSENT_ENV = "MANIFOLD_CI_ABSENT_FEATURES"
_ABSENT_PREFIX = "[absent on the CI machine kind: "


def in_ci():
    """True when CI=true (or 1/yes) is in the environment."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def declared_absent(feature):
    """Whether the CI machine kind is declared to lack this kernel feature."""
    listed = os.environ.get(ABSENT_ENV, "")
    return feature in {f.strip() for f in listed.split(",") if f.strip()}


def skip_or_fail(testcase, reason, feature=None):
    """Skips the test (outside CI, or for a feature the CI machine kind lacks) or fails it."""
    if in_ci() and not (feature and declared_absent(feature)):
        testcase.fail("cannot run under CI=true: %s" % reason)
    if in_ci():
        reason = "%s%s] %s" % (_ABSENT_PREFIX, feature, reason)
    testcase.skipTest(reason)


def require_under_ci(testcase, reason, feature):
    """For a test that runs partly without the feature (e.g. IPv4 rows only): fails under CI=true
    unless the CI machine kind is declared to lack it; otherwise prints a note and returns."""
    if in_ci() and not declared_absent(feature):
        testcase.fail("cannot run fully under CI=true: %s" % reason)
    print("note: %s; running without it" % reason)


def cannot_run(reason):
    """Exit for a whole test file that cannot run here: skipped outside CI, failed under CI=true."""
    if in_ci():
        print("FAILED: %s (a test that cannot run fails under CI=true)" % reason)
        sys.exit(1)
    print("SKIPPED: %s" % reason)
    sys.exit(SKIP_EXIT)


def run_unittest():
    """Runs the calling test file's tests and exits with exit_status()."""
    program = unittest.main(module="__main__", verbosity=2, exit=False)
    sys.exit(exit_status(program.result))


def exit_status(result):
    """The file's exit status from a unittest result: 1 on any failure (or, under CI=true, on a skip
    that is not a declared-absent feature), SKIP_EXIT when something was skipped, else 0."""
    if not result.wasSuccessful():
        return 1
    if not result.skipped:
        return 0
    undeclared = [r for _, r in result.skipped if not r.startswith(_ABSENT_PREFIX)]
    if in_ci() and undeclared:
        print("FAILED: skipped under CI=true: %s" % "; ".join(undeclared))
        return 1
    return SKIP_EXIT
