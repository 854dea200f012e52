"""The node's network and mount namespaces, its cgroup, and the processes that run in them.

A holder process (`unshare --net --mount`, then `sleep infinity`) owns both namespaces. Before it
sleeps it binds the node's directories over the machine paths (layout.BINDS), mounts a sysfs of
the node's network namespace (so /sys/class/net lists the node's links) with the machine's cgroup
hierarchies moved under it, hides the machine's kernel tunables that the kubelet insists on
setting behind files already holding its values (vm.overcommit_memory, kernel.panic, … are not
namespaced: the kubelet would change them for the whole machine), makes every mount rshared (the
kubelet's and containerd's mount propagation needs it; the machine's / stays private), and brings
up the node's own link: a veth `eth0` holding the node IP with the default route, its peer `uplink`
staying in the namespace. Every component is started with `nsenter --target <holder> --net
--mount` into the node cgroup's `system` child; containerd's shims follow it there and the pods'
cgroups are the kubelet's, below the same node cgroup (its cgroupRoot), so one subtree holds every
process the node ever runs.
"""
import os
import shlex
import signal
import subprocess
import time

from node import layout

# The kubelet's kernel tunables and the values it wants (k8s.io/component-helpers' sysctl).
KUBELET_TUNABLES = (("vm/overcommit_memory", "1"), ("vm/panic_on_oom", "0"), ("kernel/panic", "10"),
                    ("kernel/panic_on_oops", "1"), ("kernel/keys/root_maxkeys", "1000000"),
                    ("kernel/keys/root_maxbytes", "25000000"))


class NodeError(Exception):
    """The node could not be brought up or torn down; the message says what and why."""


def hierarchies():
    """Mount points of every cgroup (v1) and cgroup2 hierarchy of the machine."""
    out = []
    with open("/proc/self/mounts", encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 2 and fields[2] in ("cgroup", "cgroup2"):
                out.append(fields[1])
    return out


def _copy_cpuset(parent, child):
    for name in ("cpuset.cpus", "cpuset.mems"):
        with open(os.path.join(parent, name), encoding="utf-8") as f:
            value = f.read().strip()
        with open(os.path.join(child, name), "w", encoding="utf-8") as f:
            f.write(value)


def make_cgroups(node):
    """Creates <cgroup> and <cgroup>/system in every hierarchy (cpuset ones initialised from their
    parent, or no process could join them)."""
    for root in hierarchies():
        parent = root
        for part in (node.cgroup, "system"):
            path = os.path.join(parent, part)
            os.makedirs(path, exist_ok=True)
            if os.path.exists(os.path.join(path, "cpuset.cpus")):
                _copy_cpuset(parent, path)
            parent = path


def join_system_cgroup(node):
    """Moves the calling process into <cgroup>/system of every hierarchy (a preexec_fn)."""
    for root in hierarchies():
        with open(os.path.join(root, node.cgroup, "system", "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))


def _holder_script(node):
    lines = ["set -e"]
    for name, target in layout.BINDS:
        lines.append("mount -n --bind %s %s" % (shlex.quote(node.bind_source(name)), target))
    keep = shlex.quote(node.path("mounts", "cgroup-keep"))
    lines += ["mount -n --rbind /sys/fs/cgroup %s" % keep,
              "mount -n -t sysfs sysfs /sys",
              "mount -n --move %s /sys/fs/cgroup" % keep]
    for name, value in KUBELET_TUNABLES:
        stand_in = shlex.quote(node.path("mounts", "sysctl", name.replace("/", ".")))
        lines += ["echo %s > %s" % (value, stand_in),
                  "mount -n --bind %s /proc/sys/%s" % (stand_in, name)]
    lines += ["mount -n --make-rshared /",
              "ip link set lo up",
              "ip link add eth0 type veth peer name uplink",
              "ip addr add %s/%d dev eth0" % (layout.NODE_IP, layout.NODE_PREFIX),
              "ip link set uplink up", "ip link set eth0 up",
              "ip route add default dev eth0",
              "echo ready", "exec sleep infinity"]
    return "\n".join(lines)


def start_holder(node):
    """Starts the holder; returns its pid once the namespaces are set up."""
    for name, _ in layout.BINDS:
        os.makedirs(node.bind_source(name), exist_ok=True)
    os.makedirs(node.path("mounts", "cgroup-keep"))
    os.makedirs(node.path("mounts", "sysctl"))
    log = open(os.path.join(node.logs, "holder.log"), "wb")
    proc = subprocess.Popen(
        ["unshare", "--net", "--mount", "--propagation", "private", "sh", "-c",
         _holder_script(node)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
        start_new_session=True, preexec_fn=lambda: join_system_cgroup(node))
    line = proc.stdout.readline()
    proc.stdout.close()
    log.close()
    if line != b"ready\n":
        proc.wait(timeout=30)
        with open(os.path.join(node.logs, "holder.log"), encoding="utf-8", errors="replace") as f:
            raise NodeError("the node's namespaces could not be set up:\n" + f.read())
    return proc.pid


def identities(pid):
    """The (mount, network) namespace identities of a process."""
    return (os.readlink("/proc/%d/ns/mnt" % pid), os.readlink("/proc/%d/ns/net" % pid))


def enter_argv(holder, argv, mount=True):
    """argv run inside the node's namespaces (the network one only if not mount)."""
    prefix = ["nsenter", "--target", str(holder), "--net"] + (["--mount"] if mount else [])
    return prefix + ["--"] + list(argv)


def start(node, holder, name, argv, env=None):
    """Starts a long-running component in the node (its log in logs/<name>.log); returns its
    Popen. TMPDIR is the tree's, so temporary mounts of containerd stay out of the machine's /tmp."""
    os.makedirs(node.path("tmp"), exist_ok=True)
    environment = dict(os.environ, TMPDIR=node.path("tmp"), **(env or {}))
    log = open(os.path.join(node.logs, name + ".log"), "ab")
    try:
        return subprocess.Popen(enter_argv(holder, argv), stdin=subprocess.DEVNULL, stdout=log,
                                stderr=log, cwd=node.root, env=environment,
                                start_new_session=True,
                                preexec_fn=lambda: join_system_cgroup(node))
    finally:
        log.close()


def cgroup_processes(node):
    """Pids of every process in the node's cgroup subtree (any hierarchy)."""
    pids = set()
    for root in hierarchies():
        for dirpath, _, files in os.walk(os.path.join(root, node.cgroup)):
            if "cgroup.procs" not in files:
                continue
            try:
                with open(os.path.join(dirpath, "cgroup.procs"), encoding="utf-8") as f:
                    pids.update(int(p) for p in f.read().split())
            except OSError:
                continue
    return pids


def namespace_processes(ids):
    """Pids of every process in one of the given namespaces (identities as readlink shows them)."""
    wanted = set(ids)
    pids = set()
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if wanted & set(identities(int(entry))):
                pids.add(int(entry))
        except OSError:
            continue
    return pids


def kill_pods(node, timeout=60):
    """SIGKILLs the processes of the node's pods (below its cgroup, outside the components'
    `system` child) and containerd's shims (in `system`), and waits, bounded, until none is left."""
    def pods_and_shims():
        pids = set()
        for root in hierarchies():
            top = os.path.join(root, node.cgroup)
            for dirpath, _, files in os.walk(top):
                if "cgroup.procs" not in files or dirpath == top:
                    continue
                component = os.path.relpath(dirpath, top).split(os.sep)[0] == "system"
                pids.update(p for p in _cgroup_procs(dirpath) if not component or _is_shim(p))
        return pids

    deadline = time.monotonic() + timeout
    while True:
        pids = pods_and_shims()
        if not pids:
            return
        if time.monotonic() > deadline:
            raise NodeError("processes of the node's pods survive SIGKILL: %s" % sorted(pids))
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)


def _cgroup_procs(path):
    try:
        with open(os.path.join(path, "cgroup.procs"), encoding="utf-8") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _is_shim(pid):
    try:
        with open("/proc/%d/comm" % pid, encoding="utf-8") as f:
            return f.read().startswith("containerd-shim")
    except OSError:
        return False


def freeze(node, state):
    """Freezes (or thaws) the node's whole cgroup subtree, so processes cannot fork while killed."""
    for root in hierarchies():
        path = os.path.join(root, node.cgroup, "freezer.state")
        if os.path.exists(path):
            with open(path, "w", encoding="utf-8") as f:
                f.write(state)


def kill_all(node, ids, timeout=60):
    """SIGKILLs every process of the node (its cgroup subtree, its namespaces) and waits, bounded,
    until none is left."""
    deadline = time.monotonic() + timeout
    while True:
        pids = cgroup_processes(node) | namespace_processes(ids)
        pids.discard(os.getpid())
        if not pids:
            return
        if time.monotonic() > deadline:
            raise NodeError("processes of the node survive SIGKILL: %s" % sorted(pids))
        freeze(node, "FROZEN")
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        freeze(node, "THAWED")
        time.sleep(0.1)


def remove_cgroups(node, timeout=30):
    """Removes the node's cgroup subtree from every hierarchy (deepest first; a cgroup whose last
    process just died may stay busy for a moment, so this retries, bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        left = []
        for root in hierarchies():
            top = os.path.join(root, node.cgroup)
            paths = sorted((d for d, _, _ in os.walk(top)), key=len, reverse=True)
            for path in paths:
                try:
                    os.rmdir(path)
                except FileNotFoundError:
                    pass
                except OSError:
                    left.append(path)
        if not left:
            return
        if time.monotonic() > deadline:
            raise NodeError("cgroups of the node cannot be removed: %s" % left)
        time.sleep(0.1)
