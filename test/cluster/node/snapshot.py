"""A snapshot of the machine state the node could change, taken by `up` before it changes anything
and compared by `down` after it has removed everything: the machine's links, addresses, routes and
rules, its iptables rule sets (both back ends, IPv4 and IPv6), its mount table, its named network
namespaces, the top of every cgroup hierarchy, the kernel tunables the kubelet sets, and every
machine path a node component could write if it escaped its mount namespace. Anything that differs
is a leak of the node, unless it is named like the integration tests' namespaces (a developer's
machine runs them beside the node; CI runs the node alone).
"""
import os
import re
import subprocess

from node import namespaces

# Machine paths a kubelet, containerd, podman or the CNI plugins write by default.
WATCHED = ("/etc/cni/net.d", "/opt/cni", "/var/lib/cni", "/var/lib/kubelet", "/var/lib/containerd",
           "/var/lib/containers", "/var/lib/etcd", "/run/containerd", "/run/containers",
           "/run/libpod", "/run/netns", "/var/run/netns", "/run/manifold", "/run/cni",
           "/var/log/pods", "/var/log/containers", "/etc/kubernetes", "/usr/libexec/kubernetes",
           "/var/run/kubernetes", "/opt/containerd", "/run/xtables.lock")
SAVERS = ("iptables-legacy-save", "ip6tables-legacy-save", "iptables-nft-save", "ip6tables-nft-save")
_COUNTERS = re.compile(r"\[\d+:\d+\]")
# A dynamic address's remaining lifetimes change every second.
_LIFETIMES = re.compile(r"\s+valid_lft \S+ preferred_lft \S+")


def _run(argv):
    run = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    return run.stdout if run.returncode == 0 else "<%s failed: %s>" % (argv[0], run.stderr.strip())


def _lines(text, drop=()):
    return sorted(line for line in text.splitlines()
                  if line.strip() and not any(line.startswith(d) for d in drop))


def _rules(saver):
    text = _COUNTERS.sub("", _run([saver]))
    return _lines(text, drop=("#",))


def _mounts():
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        return sorted({" ".join((fields[4], fields[fields.index("-") + 1]))
                       for fields in (line.split() for line in f)})


def _listing(path):
    if os.path.islink(path) or not os.path.isdir(path):
        return ["<file>"] if os.path.lexists(path) else ["<absent>"]
    out = []
    for dirpath, dirs, files in os.walk(path):
        rel = os.path.relpath(dirpath, path)
        out += [os.path.normpath(os.path.join(rel, name)) for name in dirs + files]
    return sorted(out)


def _cgroup_tops():
    out = []
    for root in namespaces.hierarchies():
        out += ["%s/%s" % (root, name) for name in os.listdir(root)
                if os.path.isdir(os.path.join(root, name))]
    return sorted(out)


def _tunables():
    out = []
    for name, _ in namespaces.KUBELET_TUNABLES:
        with open("/proc/sys/" + name, encoding="utf-8") as f:
            out.append("%s=%s" % (name, f.read().strip()))
    return out


def take():
    """The snapshot: a dict of sorted string lists."""
    snap = {"links": _lines(re.sub(r"^\d+: ", "", _run(["ip", "-o", "link", "show"]), flags=re.M)),
            "addresses": _lines(_LIFETIMES.sub("", _run(["ip", "-o", "address", "show"]))),
            "routes4": _lines(_run(["ip", "-4", "route", "show", "table", "all"])),
            "routes6": _lines(_run(["ip", "-6", "route", "show", "table", "all"])),
            "rules4": _lines(_run(["ip", "-4", "rule", "show"])),
            "rules6": _lines(_run(["ip", "-6", "rule", "show"])),
            "mounts": _mounts(), "cgroups": _cgroup_tops(), "tunables": _tunables()}
    for saver in SAVERS:
        snap[saver] = _rules(saver)
    for path in WATCHED:
        snap["path " + path] = _listing(path)
    return snap


# The integration tests name their namespaces, links and cgroups mf-<their pid>-<n>; the node never
# names anything so.
_OTHER_TEST = re.compile(r"\bmf-\d+-\d+\b")


def _another_test(item):
    """True for an item of an integration test that ran beside the node (a developer's machine;
    CI runs the node alone): not the node's to answer for."""
    return bool(_OTHER_TEST.search(item))


def differences(before, after):
    """Human-readable lines for everything that is in one snapshot and not in the other."""
    out = []
    for key in sorted(set(before) | set(after)):
        old = {i for i in before.get(key, []) if not _another_test(i)}
        new = {i for i in after.get(key, []) if not _another_test(i)}
        out += ["%s: left behind: %s" % (key, item) for item in sorted(new - old)]
        out += ["%s: gone: %s" % (key, item) for item in sorted(old - new)]
    return out
