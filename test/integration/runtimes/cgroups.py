"""The cgroup parent of one test's containers, in every mounted hierarchy.

Runtimes create a container's cgroup below a parent they are given (podman's --cgroup-parent,
containerd's cgroup path, the CRI sandbox's cgroup_parent) and remove only the container's own
directory, never the parent (nor podman's shared `conmon` cgroup in it). Each test therefore names
a parent of its own, mf-<pid>-<n> like its namespaces, and removes that whole subtree when it ends,
once the runtime's monitor processes in it have exited (they do so asynchronously, after the
container); parents left by a killed run (their pid is gone) are removed at start-up.
"""
import os
import re
import time

_STALE_RE = re.compile(r"^mf-(\d+)-\d+$")


def hierarchies():
    """The mount points of every cgroup (v1) and cgroup2 file system."""
    out = []
    with open("/proc/self/mounts", encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 2 and fields[2] in ("cgroup", "cgroup2"):
                out.append(fields[1])
    return out


def directories(name):
    """Every directory at or below /<name> in any hierarchy, deepest first."""
    out = []
    for root in hierarchies():
        for dirpath, _, _ in os.walk(os.path.join(root, name)):
            out.append(dirpath)
    return sorted(out, key=len, reverse=True)


def children(name):
    """The cgroups below /<name> (paths relative to it), in any hierarchy."""
    out = set()
    for root in hierarchies():
        top = os.path.join(root, name)
        for dirpath, _, _ in os.walk(top):
            if dirpath != top:
                out.add(os.path.relpath(dirpath, top))
    return sorted(out)


def _has_processes(path):
    try:
        with open(os.path.join(path, "cgroup.procs"), encoding="utf-8") as f:
            return bool(f.read().strip())
    except FileNotFoundError:
        return False


def remove(name, timeout=30):
    """Removes /<name> and everything below it from every hierarchy, first waiting (bounded) for
    the processes still in it to exit."""
    deadline = time.monotonic() + timeout
    while any(_has_processes(d) for d in directories(name)):
        if time.monotonic() > deadline:
            raise OSError("processes still in cgroup %s after %ds" % (name, timeout))
        time.sleep(0.05)
    for path in directories(name):
        os.rmdir(path)


def remove_stale():
    """Removes the parents of earlier runs whose process no longer exists."""
    for root in hierarchies():
        for name in os.listdir(root):
            match = _STALE_RE.match(name)
            if match and not os.path.exists("/proc/%s" % match.group(1)):
                try:
                    remove(name, timeout=0)
                except OSError:
                    pass
