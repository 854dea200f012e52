"""Running the libcni driver and the manifold binary, and parsing what they print.

Both run inside the test's node namespace (`ip netns exec`), so everything a plugin does "on the
host" (bridges, veth host ends, iptables) happens in a namespace of ours. A Run carries the exit
status, the raw output, the parsed result JSON (stdout) and the parsed CNI error: for the driver
that is its one-line JSON error on stderr, for a direct plugin run the error JSON on stdout.
"""
import json
import os
import subprocess
import sys
import time

# Environment variables that must never leak from the calling environment into a run.
_SCRUBBED = ("CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS", "CNI_PATH",
             "CNI_CACHE_DIR", "NETCONFPATH", "CAP_ARGS", "VALID_ATTACHMENTS", "DRIVER_TIMEOUT",
             "DRIVER_RAW")
_SBIN = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def base_env():
    """The calling environment without CNI variables, with sbin directories on PATH, and the
    directory of the interpreter running the test first: the fake delegates
    (`#!/usr/bin/env python3`) run under that same interpreter, never through a version
    manager's shim found earlier on PATH (a pyenv shim costs 0.4 s of CPU per start, measured)."""
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    inherited = [env["PATH"]] if env.get("PATH") else []
    env["PATH"] = ":".join([os.path.dirname(sys.executable), *inherited, _SBIN])
    return env


class Run:
    """The outcome of one driver or plugin invocation."""

    def __init__(self, argv, rc, stdout, stderr, elapsed, error_from_stdout=False):
        self.argv = argv
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.elapsed = elapsed
        self.result = None
        self.error = None
        parsed = _parse_json(stdout)
        if rc == 0:
            self.result = parsed
        elif error_from_stdout:
            self.error = parsed if isinstance(parsed, dict) else None
        else:
            self.error = parse_driver_error(stderr)

    @property
    def code(self):
        """The CNI error code, or None when there is no parsable error."""
        return None if self.error is None else self.error.get("code")

    def describe(self):
        """A multi-line description for assertion messages."""
        return "argv: %s\nexit: %d (%.2fs)\nstdout:\n%s\nstderr:\n%s" % (
            " ".join(self.argv), self.rc, self.elapsed, self.stdout[-6000:], self.stderr[-6000:])


def _parse_json(text):
    text = text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def parse_driver_error(stderr):
    """The driver's error line: the last stderr line that is a JSON object with a "code"."""
    for line in reversed(stderr.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and "code" in obj:
                return obj
    return None


def _execute(argv, env, stdin_bytes, timeout, error_from_stdout):
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, env=env, input=stdin_bytes, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError("%s did not finish within %ss; stderr: %s" % (
            " ".join(argv), timeout, (exc.stderr or b"").decode("utf-8", "replace")))
    return Run(argv, proc.returncode, proc.stdout.decode("utf-8", "replace"),
               proc.stderr.decode("utf-8", "replace"), time.monotonic() - start, error_from_stdout)


class Driver:
    """Runs `driver VERB NETNAME NETNS` in the node namespace against the test's tree."""

    def __init__(self, driver_bin, node, tree, default_timeout=60):
        self.driver_bin = os.path.abspath(driver_bin)
        self.node = node
        self.tree = tree
        self.default_timeout = default_timeout

    def __call__(self, verb, netns_path, netname="manifold-net", ifname=None, container_id=None,
                 cni_args=None, cap_args=None, valid_attachments=None, extra_env=None,
                 timeout=None, wrapper=()):
        timeout = timeout or self.default_timeout
        env = base_env()
        env.update({"NETCONFPATH": self.tree.conf_dir, "CNI_PATH": self.tree.cni_path(),
                    "CNI_CACHE_DIR": self.tree.libcni_cache, "DRIVER_TIMEOUT": str(timeout)})
        if ifname:
            env["CNI_IFNAME"] = ifname
        if container_id:
            env["CNI_CONTAINERID"] = container_id
        if cni_args:
            env["CNI_ARGS"] = cni_args
        if cap_args is not None:
            env["CAP_ARGS"] = json.dumps(cap_args)
        if valid_attachments is not None:
            env["VALID_ATTACHMENTS"] = json.dumps(valid_attachments)
        env.update(extra_env or {})
        # wrapper: a command the driver runs under in the node namespace (e.g. strace -f -o FILE).
        argv = ["ip", "netns", "exec", self.node.name] + list(wrapper) + [self.driver_bin, verb, netname,
                                                                          netns_path]
        return _execute(argv, env, None, timeout + 30, error_from_stdout=False)


def run_plugin(binary, node, command, stdin, env=None, drop=(), timeout=60):
    """Runs a CNI plugin binary directly in the node namespace.

    stdin is a dict (JSON-encoded), str or bytes; env holds the CNI_* variables to set (CNI_COMMAND
    is set from command unless dropped); names in drop are removed from the environment.
    """
    full = base_env()
    full["CNI_COMMAND"] = command
    full.update(env or {})
    for name in drop:
        full.pop(name, None)
    if isinstance(stdin, dict):
        stdin = json.dumps(stdin)
    if isinstance(stdin, str):
        stdin = stdin.encode("utf-8")
    argv = ["ip", "netns", "exec", node.name, os.path.abspath(binary)]
    return _execute(argv, full, stdin, timeout, error_from_stdout=True)
