"""`down`: tears the node down and proves nothing of it is left on the machine.

It works on whatever is there (a node that is up, one whose `up` failed half-way, one already
torn down: then it only checks), so it is idempotent. While the API server and the kubelet still
run, the node is drained first: the static pods' manifests are removed, the workload controllers
and then every pod are deleted, and the wait (bounded) lets the kubelet stop each sandbox, which
runs CNI DEL through manifold as on any node. Then every component gets SIGTERM, and whatever
still runs in the node's cgroup subtree or namespaces (containerd's shims, containers, the holder)
is frozen and killed; with its last process each namespace goes, and with the mount namespace
every mount the node made. Then the cgroup subtree, the tree and the machine paths `up` created
are removed, and the machine is compared with the snapshot `up` took before it began.
"""
import os
import shutil
import signal
import subprocess
import time

from node import namespaces, snapshot
from node.control import Node
from node.namespaces import NodeError

CONTROLLERS = "daemonsets,deployments,replicasets,statefulsets,jobs,replicationcontrollers"
STOP_ORDER = ("kubelet", "kube-proxy", "containerd", "kube-scheduler", "kube-controller-manager",
              "kube-apiserver", "etcd")


def _drain(node, timeout=90):
    """Deletes every pod through the API while the kubelet runs, so each sandbox is stopped (CNI
    DEL) as on a real node. Best effort: returns what went wrong, if anything."""
    if not node.is_up():
        return "the node's namespaces are gone: no drain"
    static = node.layout.static_pods
    for name in os.listdir(static) if os.path.isdir(static) else []:
        os.unlink(os.path.join(static, name))
    try:
        if node.kubectl("get", "--raw=/readyz", check=False, timeout=10).returncode != 0:
            return "the API server does not answer: no drain"
        node.kubectl("delete", CONTROLLERS, "--all", "--all-namespaces", "--wait=false",
                     timeout=60)
        node.kubectl("delete", "pods", "--all", "--all-namespaces", "--wait=false", timeout=60)
        left = node.kubectl("wait", "--for=delete", "pods", "--all", "--all-namespaces",
                            "--timeout=%ds" % timeout, check=False, timeout=timeout + 30)
        if left.returncode != 0:
            return "pods still there after %ds: %s" % (timeout, left.stdout + left.stderr)
    except (NodeError, subprocess.SubprocessError) as e:
        return "drain failed: %s" % e
    return None


def _stop(node, grace=20):
    """SIGTERM to each recorded component, in order, each given up to grace seconds."""
    components = node.state.get("components", {})
    for name in STOP_ORDER:
        pid = components.get(name)
        if not pid:
            continue
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        deadline = time.monotonic() + grace
        while os.path.exists("/proc/%d" % pid) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.1)


def _reap(pid):
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _mounts_below(root):
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        points = [line.split()[4] for line in f]
    return [p for p in points if p == root or p.startswith(root + "/")]


def _remove_tree(node, keep_logs):
    root = node.layout.root
    if not os.path.lexists(root):
        return
    below = _mounts_below(root)
    if below:
        raise NodeError("mounts left below %s (not removing it): %s" % (root, below))
    if keep_logs and os.path.isdir(node.layout.logs):
        shutil.rmtree(keep_logs, ignore_errors=True)
        shutil.copytree(node.layout.logs, keep_logs)
        # The node's /var/log: manifold.log (every CNI call's log), the pods' logs.
        var_log = node.layout.inside("/var/log")
        if os.path.isdir(var_log):
            shutil.copytree(var_log, os.path.join(keep_logs, "var-log"), symlinks=True)
    shutil.rmtree(root)


def down(tree=None, keep_logs=None):
    """Tears the node down; returns (whether up's snapshot was compared, the problems found:
    none means nothing is left)."""
    node = Node(tree)
    problems = []
    identities = node.state.get("identities", [])
    if node.state:
        note = _drain(node)
        if note:
            print("down: %s" % note, flush=True)
        _stop(node)
    namespaces.kill_all(node.layout, identities)
    namespaces.remove_cgroups(node.layout)
    _remove_tree(node, keep_logs)
    for path in reversed(node.state.get("created", [])):
        try:
            os.rmdir(path)
        except OSError as e:
            problems.append("cannot remove %s, which up created: %s" % (path, e))
    before = node.state.get("snapshot")
    if before:
        problems += snapshot.differences(before, snapshot.take())
    if os.path.lexists(node.layout.root):
        problems.append("%s still exists" % node.layout.root)
    return bool(before), problems
