"""A private mount namespace in which a container runtime sees the test's own directories.

Runtimes keep state in fixed machine paths: libcni's result cache in /var/lib/cni, netns bind
mounts in /run/netns, runc's state in /run/runc, containerd's shim sockets in /run/containerd/s,
the tuning plugin's saved settings in /run/cni, and `ctr run --cni` reads /etc/cni/net.d and
/opt/cni/bin. A PrivateMounts binds directories of the test's tree over those paths inside a new
mount namespace (propagation private, so nothing reaches the machine's mount table) and keeps it
alive with a holder process; every runtime command enters it with `nsenter --mount` (and usually
`--net` into the test's node namespace). Whatever the runtime writes there lands in the tree, where
the leak checks look and which the test removes; the machine's directories are never touched.
The namespace lives while the holder or any runtime process in it (conmon, a shim) runs; when
the holder is told to end, every other process in it must end too (they exit asynchronously after
their container, so this is waited for, bounded), else a runtime process of the test leaked.
"""
import os
import shlex
import subprocess
import time

from harness.netns import HarnessError


class PrivateMounts:
    """The mount namespace; binds is a list of (source dir, target path), mounted in order."""

    def __init__(self, binds, exit_timeout=30):
        self.binds = list(binds)
        self.exit_timeout = exit_timeout
        self._holder = None
        self._identity = None

    def __enter__(self):
        script = ["set -e"]
        # -n: no utab entry, for which libmount would create /run/mount on the machine.
        for source, target in self.binds:
            script.append("mount -n --bind %s %s" % (shlex.quote(source), shlex.quote(target)))
        script.append("echo ready")
        script.append("read _ || true")
        self._holder = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(script)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if self._holder.stdout.readline() != b"ready\n":
            err = self._holder.communicate()[1].decode("utf-8", "replace")
            raise HarnessError("private mount namespace failed: %s" % err)
        self._identity = os.readlink(self.path)
        return self

    def __exit__(self, *exc):
        self._holder.communicate(b"\n", timeout=30)
        deadline = time.monotonic() + self.exit_timeout
        while self.processes():
            if time.monotonic() > deadline:
                raise HarnessError("processes left in the test's mount namespace: %s" %
                                   self.processes())
            time.sleep(0.05)
        return False

    def processes(self):
        """(pid, command line) of every live process in the namespace."""
        out = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if os.readlink("/proc/%s/ns/mnt" % pid) != self._identity:
                    continue
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    out.append((int(pid), f.read().replace(b"\0", b" ").decode().strip()))
            except OSError:
                continue
        return out

    @property
    def path(self):
        """The namespace file of the holder (/proc/<pid>/ns/mnt)."""
        return "/proc/%d/ns/mnt" % self._holder.pid

    def prefix(self, netns=None):
        """The argv prefix that runs a command inside the namespace (and inside netns if given).
        nsenter opens both files before entering either, so netns is a path of the machine's."""
        argv = ["nsenter", "--mount=" + self.path]
        if netns:
            argv.append("--net=" + netns)
        return argv + ["--"]


def runtime_binds(tree_root, cni_conf_dir, cni_bin_dir, libcni_cache):
    """The binds every runtime test uses, with their sources created under tree_root: /run, /var/lib
    (holding only cni, bound to libcni_cache), /opt (holding only cni/bin, bound to cni_bin_dir) and
    /etc/cni/net.d (bound to cni_conf_dir). Returns (binds, run_dir)."""
    run_dir = os.path.join(tree_root, "run")
    var_lib = os.path.join(tree_root, "var-lib")
    opt = os.path.join(tree_root, "opt")
    for path in (run_dir, os.path.join(var_lib, "cni"), os.path.join(opt, "cni", "bin")):
        os.makedirs(path, exist_ok=True)
    if not os.path.isdir("/etc/cni/net.d"):
        raise HarnessError("/etc/cni/net.d does not exist (the podman package creates it)")
    binds = [(run_dir, "/run"), (var_lib, "/var/lib"), (libcni_cache, "/var/lib/cni"),
             (opt, "/opt"), (cni_bin_dir, "/opt/cni/bin"), (cni_conf_dir, "/etc/cni/net.d")]
    return binds, run_dir
