"""A running node as its scripts and tests see it: its tree, its holder process, its binaries, and
the commands that reach inside (kubectl with the admin kubeconfig, any command in the node's
namespaces), the starting and stopping of its components (a restart of its runtime as a node
restarts without a reboot), plus bounded waiting for a condition to hold.
"""
import os
import signal
import subprocess
import time

from node import configs, layout, namespaces
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

    def start_component(self, name, argv):
        """Starts a long-running component inside the node and records its pid (for `down`)."""
        proc = namespaces.start(self.layout, self.holder, name, argv)
        # The component outlives this process (down stops it by its recorded pid): not ours to
        # wait for, so the Popen must not warn about a child still running when it is collected.
        proc.returncode = 0
        self.state["components"][name] = proc.pid
        self.save()

    def stop_component(self, name, grace=30):
        """SIGTERM to a recorded component, as a service manager stops it (SIGKILL after grace
        seconds); returns once it is gone."""
        pid = self.state.get("components", {}).get(name)
        if not pid or not _running(pid):
            return
        os.kill(pid, signal.SIGTERM)
        try:
            wait_until(name + " to exit", lambda: not _running(pid), grace, 0.2)
        except NodeError:
            os.kill(pid, signal.SIGKILL)
            wait_until(name + " to die", lambda: not _running(pid), 30, 0.2)

    def start_containerd(self):
        """Starts containerd from its configuration and waits until it answers."""
        self.start_component("containerd", configs.containerd(self.layout))
        wait_until("containerd", lambda: self.run(["ctr", "--address", layout.CONTAINERD_SOCKET,
                                                   "version"], check=False).returncode == 0,
                   60, alive=lambda: self.check_alive(["containerd"]))

    def restart_runtime(self, stop_pods):
        """A node restart without a reboot: the kubelet and containerd stopped (SIGTERM), and with
        stop_pods every pod's process and containerd's shims killed too, as a shutdown of the
        node's services does (pinned network namespaces, /run and /var/lib stay, as without a
        reboot); then containerd and the kubelet started again with the same configuration."""
        for name in ("kubelet", "containerd"):
            self.stop_component(name)
        if stop_pods:
            namespaces.kill_pods(self.layout)
        self.start_containerd()
        self.start_component("kubelet", configs.kubelet(self.layout, self.bins))

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
