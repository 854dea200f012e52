"""A running node as its scripts and tests see it: its tree, its holder process, its binaries, and
the commands that reach inside (kubectl with the admin kubeconfig, any command in the node's
namespaces), plus bounded waiting for a condition to hold.
"""
import os
import subprocess
import time

from node import layout, namespaces
from node.namespaces import NodeError


def wait_until(what, predicate, timeout, interval=0.5, alive=None):
    """Polls predicate (bounded) until it returns a true value, which it returns. alive, if given,
    is called on every round and raises if something the wait depends on died."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        if alive:
            alive()
        try:
            result = predicate()
            if result:
                return result
        except (OSError, subprocess.SubprocessError, ValueError) as e:
            last = e
        if time.monotonic() > deadline:
            raise NodeError("timed out after %ds waiting for %s%s" %
                            (timeout, what, (": %s" % last) if last else ""))
        time.sleep(interval)


class Node:
    """The node of one tree; holder and bins come from the state `up` recorded."""

    def __init__(self, tree=None):
        self.layout = tree if isinstance(tree, layout.NodeLayout) else layout.NodeLayout(tree)
        self.state = self.layout.read_state() or {}

    @property
    def holder(self):
        return self.state.get("holder")

    @property
    def bins(self):
        return self.state.get("bins")

    def is_up(self):
        """Whether the holder of the recorded namespaces still runs."""
        holder = self.holder
        if not holder or not self.state.get("identities"):
            return False
        try:
            return list(namespaces.identities(holder)) == self.state["identities"]
        except OSError:
            return False

    def save(self):
        self.layout.write_state(self.state)

    def argv(self, argv, mount=True):
        """argv run inside the node's namespaces."""
        if not self.is_up():
            raise NodeError("the node of %s is not up" % self.layout.root)
        return namespaces.enter_argv(self.holder, argv, mount=mount)

    def run(self, argv, check=True, timeout=120, input=None, mount=True):
        """Runs argv inside the node; returns the CompletedProcess (text)."""
        proc = subprocess.run(self.argv(argv, mount=mount), input=input,
                              stdin=None if input is not None else subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise NodeError("%s failed (%d):\n%s%s" % (" ".join(argv), proc.returncode,
                                                       proc.stdout, proc.stderr))
        return proc

    def kubectl_argv(self, *args, user="admin"):
        """The argv of `kubectl <args>` against the node's API server (network namespace only)."""
        return self.argv([os.path.join(self.bins, "kubectl"), "--kubeconfig",
                          self.layout.kubeconfig(user), *args], mount=False)

    def kubectl(self, *args, check=True, timeout=120, input=None, user="admin"):
        proc = subprocess.run(self.kubectl_argv(*args, user=user), input=input,
                              stdin=None if input is not None else subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise NodeError("kubectl %s failed (%d):\n%s%s" % (" ".join(args), proc.returncode,
                                                               proc.stdout, proc.stderr))
        return proc

    def log_tail(self, name, limit=4000):
        """The end of a component's log."""
        try:
            with open(os.path.join(self.layout.logs, name + ".log"), encoding="utf-8",
                      errors="replace") as f:
                return f.read()[-limit:]
        except OSError as e:
            return "<%s>" % e

    def check_alive(self, names=None):
        """Raises (with the log's end) if a started component has exited."""
        for name, pid in self.state.get("components", {}).items():
            if names and name not in names:
                continue
            if not _running(pid):
                raise NodeError("%s exited; the end of its log:\n%s" % (name, self.log_tail(name)))


def _running(pid):
    try:
        with open("/proc/%d/stat" % pid, encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
