"""A containerd daemon of the test's own, and the `ctr` client.

The daemon gets its own config file, root, state and socket in the test's tree (the machine's
containerd, if any, is never contacted) and runs in the test's private mount namespace (its shims'
sockets go to /run/containerd/s, which is the tree's there) and in the test's node network
namespace (the CRI plugin runs CNI in the daemon). It is ready when it logs that it booted; it is
stopped with SIGTERM after every task and container of its containerd namespaces is removed, so
no shim outlives it. `ctr run --cni` runs CNI in the ctr process itself (go-cni with its defaults:
the first network of /etc/cni/net.d, as eth0, with plugins from /opt/cni/bin); ctr therefore runs
in the same namespaces, where those paths are the tree's. Both pass their environment to the
plugins, so ASAN_OPTIONS/UBSAN_OPTIONS of the test reach manifold.
"""
import os
import subprocess
import threading

from harness.netns import HarnessError

NAMESPACE = "manifold-test"
BOOTED = "containerd successfully booted"
CRI_PLUGIN = "io.containerd.grpc.v1.cri"


class CtrError(AssertionError):
    """A ctr command failed; the message holds its output."""


class Containerd:
    """The daemon; extra_config is TOML appended to the config (e.g. the CRI plugin's section),
    without it the CRI plugin is disabled."""

    def __init__(self, root, mounts, netns, extra_config=None, namespaces=(NAMESPACE,),
                 boot_timeout=60):
        self.root = root
        self.mounts = mounts
        self.netns = netns
        self.address = os.path.join(root, "containerd.sock")
        self.namespaces = namespaces
        self.boot_timeout = boot_timeout
        self.log_path = os.path.join(root, "containerd.log")
        self.config_path = os.path.join(root, "config.toml")
        os.makedirs(root, exist_ok=True)
        with open(self.config_path, "w", encoding="utf-8") as f:
            f.write(self._config(extra_config))
        self._proc = None
        self._log_thread = None
        self._booted = threading.Event()
        self._foreground = []

    def _config(self, extra_config):
        lines = ["version = 2",
                 'root = "%s"' % os.path.join(self.root, "root"),
                 'state = "%s"' % os.path.join(self.root, "state"),
                 "disabled_plugins = [%s]" % ("" if extra_config else '"%s"' % CRI_PLUGIN),
                 "[grpc]", '  address = "%s"' % self.address,
                 "[ttrpc]", '  address = "%s.ttrpc"' % self.address,
                 "[debug]", '  level = "info"']
        return "\n".join(lines) + "\n" + (extra_config or "")

    def __enter__(self):
        argv = self.mounts.prefix(self.netns) + ["containerd", "--config", self.config_path]
        self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE)
        self._log_thread = threading.Thread(target=self._copy_log, daemon=True)
        self._log_thread.start()
        if not self._booted.wait(self.boot_timeout) or self._proc.poll() is not None:
            self._terminate()
            raise HarnessError("containerd did not boot:\n" + self.log_tail())
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def _copy_log(self):
        """Copies the daemon's log to log_path and signals the boot message (or the exit)."""
        with open(self.log_path, "wb") as log:
            for line in self._proc.stderr:
                log.write(line)
                log.flush()
                if BOOTED.encode() in line:
                    self._booted.set()
        self._booted.set()

    def log_tail(self, limit=6000):
        """The end of the daemon's log."""
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()[-limit:]

    def stop(self):
        """Removes every task and container of the namespaces, then stops the daemon."""
        if self._proc is None or self._proc.poll() is not None:
            return
        for namespace in self.namespaces:
            listing = self.ctr("containers", "list", "--quiet", namespace=namespace)
            for cid in listing.stdout.split():
                self.remove_container(cid, namespace)
        for run in self._foreground:
            run.wait()
        self._terminate()

    def _terminate(self):
        self._proc.terminate()
        self._proc.wait(timeout=60)
        self._log_thread.join(timeout=60)
        self._proc.stderr.close()

    def remove_container(self, cid, namespace=NAMESPACE):
        """Kills the container's task if it has one, deletes the task and the container."""
        self.ctr("tasks", "kill", "--signal", "SIGKILL", cid, check=False, namespace=namespace)
        self.ctr("tasks", "delete", "--force", cid, check=False, namespace=namespace)
        self.ctr("containers", "delete", cid, namespace=namespace)

    def ctr_argv(self, *args, namespace=NAMESPACE):
        """The argv of `ctr <args>` against this daemon, in the test's namespaces."""
        return self.mounts.prefix(self.netns) + ["ctr", "--address", self.address,
                                                 "--namespace", namespace, *args]

    def ctr(self, *args, check=True, timeout=120, namespace=NAMESPACE):
        """Runs `ctr <args>` in a containerd namespace; returns the CompletedProcess (text),
        raises CtrError if check and it failed."""
        proc = subprocess.run(self.ctr_argv(*args, namespace=namespace), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise CtrError("ctr %s failed (%d):\n%s%s" % (" ".join(args), proc.returncode,
                                                         proc.stdout, proc.stderr))
        return proc

    def run_foreground(self, cid, rootfs, cgroup_parent):
        """`ctr run --cni` of a container that is attached once the call returns (see
        ForegroundRun); a failed ADD raises CtrError."""
        run = ForegroundRun(self, cid, rootfs, cgroup_parent)
        self._foreground.append(run)
        run.start()
        return run


class ForegroundRun:
    """`ctr run --cni` without --detach, the only mode in which ctr 1.6 DELs: after the task
    exits, ctr DELs every network (with an empty CNI_NETNS: the namespace died with the task) and
    deletes the task; the container stays until `ctr containers delete`. The container's sh prints
    a line once it runs (ctr runs ADD before it starts the task) and exits on a line of input."""

    SCRIPT = "echo ready; read line"

    def __init__(self, containerd, cid, rootfs, cgroup_parent):
        self.containerd = containerd
        self.cid = cid
        self.pid_file = os.path.join(containerd.root, cid + ".pid")
        self.argv = containerd.ctr_argv(
            "run", "--cni", "--rootfs", "--cgroup", "/%s/%s" % (cgroup_parent, cid),
            "--pid-file", self.pid_file, rootfs, cid, "/bin/sh", "-c", self.SCRIPT)
        self.proc = None
        self.outcome = None

    def start(self):
        """Starts ctr and returns once the container runs (its network attached)."""
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        if self.proc.stdout.readline() != b"ready\n":
            raise CtrError("ctr run --cni %s failed:\n%s" % (self.cid, self.wait()[2]))

    @property
    def pid(self):
        """The container's init pid on the machine."""
        with open(self.pid_file, encoding="utf-8") as f:
            return int(f.read())

    def exit(self):
        """Lets the container exit; returns (rc, stdout, stderr) of ctr, which DELs first."""
        self.proc.stdin.write(b"\n")
        self.proc.stdin.flush()
        return self.wait()

    def kill(self):
        """Kills the container's task (SIGKILL); returns (rc, stdout, stderr) of ctr."""
        self.containerd.ctr("tasks", "kill", "--signal", "SIGKILL", self.cid)
        return self.wait()

    def wait(self, timeout=120):
        """Waits for ctr to end (once); returns (rc, stdout, stderr)."""
        if self.outcome is None:
            out, err = self.proc.communicate(timeout=timeout)
            self.outcome = (self.proc.returncode, out.decode("utf-8", "replace"),
                            err.decode("utf-8", "replace"))
        return self.outcome
