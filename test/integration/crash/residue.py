"""What a test run leaves behind, as a comparable snapshot.

A snapshot records, for the pod and the node namespace, the links, addresses, routes of every
routing table and policy-routing rules, and for the pod (where manifold writes them) the rules and
non-built-in chains of every table of both iptables backends (legacy and nft) for IPv4 and IPv6;
and on disk every entry under cniDir (any
file, and any directory but the top-level `.tmp`: the cache layout may change, so no file name is
assumed), the host-local reservations, the runtime's (libcni's) cache entries and the device-info
files. Link-local IPv6 addresses and routes are left out: they come and go with their links, which
are compared themselves. differences() lists what was added to or removed from a baseline.

Each namespace is read by one shell running every command in turn (`ip -n <ns>`, and the iptables
saves under one `ip netns exec <ns>`), all namespaces in parallel.
"""
import json
import os
import subprocess

from harness.netns import HarnessError
from harness.tree import reservations

_IP_COMMANDS = (
    ("links", "-d link show"),
    ("addresses", "addr show"),
    ("routes4", "-4 route show table all"),
    ("routes6", "-6 route show table all"),
    ("rules4", "-4 rule show"),
    ("rules6", "-6 rule show"),
)
_IPTABLES_COMMANDS = (
    ("iptables-legacy", "iptables-legacy-save"),
    ("ip6tables-legacy", "ip6tables-legacy-save"),
    ("iptables-nft", "iptables-nft-save"),
    ("ip6tables-nft", "ip6tables-nft-save"),
)
_MARK = "@@crash-snapshot@@ "
_BUILTIN_CHAINS = {"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"}
_ROUTE_KEYS = ("type", "dst", "gateway", "dev", "table", "protocol", "scope", "prefsrc", "metric")


class Places:
    """Where a scenario's state lives: its namespaces and directories (None = not used)."""

    def __init__(self, pod, node, cni_dir, ipam_dir, libcni_cache=None, device_info_dir=None):
        self.pod = pod
        self.node = node
        self.cni_dir = cni_dir
        self.ipam_dir = ipam_dir
        self.libcni_cache = libcni_cache
        self.device_info_dir = device_info_dir


def _script(commands):
    return "; ".join("echo '%s%s'; %s 2>/dev/null" % (_MARK, key, cmd) for key, cmd in commands)


def _start(ns, with_iptables):
    """Starts reading a namespace in one shell: `ip -j -n <ns>` for each ip command, then (when
    asked) the iptables saves in one `ip netns exec <ns> sh`."""
    script = _script([(key, "ip -j -n '%s' %s" % (ns.name, cmd)) for key, cmd in _IP_COMMANDS])
    if with_iptables:
        script += "; ip netns exec '%s' sh -c \"%s\"" % (ns.name, _script(_IPTABLES_COMMANDS))
    return subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _sections(proc, ns):
    """The output of _start, split by command; raises HarnessError when the reader failed."""
    out, err = proc.communicate(timeout=120)
    if proc.returncode != 0:
        raise HarnessError("reading the state of %s failed: %s" % (ns.name, err.decode("utf-8", "replace")))
    sections, key = {}, None
    for line in out.decode("utf-8", "replace").splitlines():
        if line.startswith(_MARK):
            key = line[len(_MARK):]
            sections[key] = []
        elif key is not None:
            sections[key].append(line)
    return {k: "\n".join(v) for k, v in sections.items()}


def _json(text):
    text = text.strip()
    return json.loads(text) if text else []


def _links(text):
    return sorted(("%s %s" % (link["ifname"], (link.get("linkinfo") or {}).get("info_kind", ""))).strip()
                  for link in _json(text))


def _addresses(text):
    out = []
    for link in _json(text):
        for info in link.get("addr_info", []):
            if not info.get("local", "").startswith("fe80:"):
                out.append("%s %s/%s" % (link["ifname"], info["local"], info["prefixlen"]))
    return sorted(out)


def _routes(text):
    out = []
    for route in _json(text):
        dst = route.get("dst", "")
        if dst.startswith(("fe80:", "ff00:")):
            continue
        out.append(json.dumps({k: route[k] for k in _ROUTE_KEYS if k in route}, sort_keys=True))
    return sorted(out)


def _rules(text):
    return sorted(json.dumps(rule, sort_keys=True) for rule in _json(text))


def _iptables(text):
    """Rules and chain declarations, without counters, comments and empty built-in chains."""
    out, table = [], ""
    for line in text.splitlines():
        if line.startswith("*"):
            table = line[1:]
        if not line or line.startswith(("#", "*", "COMMIT")):
            continue
        if line.startswith(":"):
            name, policy = line[1:].split()[:2]
            if name in _BUILTIN_CHAINS and policy == "ACCEPT":
                continue
            line = ":%s %s" % (name, policy)
        out.append("%s %s" % (table, line))
    return sorted(out)


_PARSERS = {"links": _links, "addresses": _addresses, "routes4": _routes, "routes6": _routes,
            "rules4": _rules, "rules6": _rules}


def netns_states(namespaces, node):
    """{ns: state} for namespaces read in parallel (iptables too, but in the node), a state being
    key -> sorted list of strings ({} for a namespace that is gone)."""
    procs = {ns: _start(ns, ns is not node) for ns in namespaces if ns.exists()}
    states = {ns: {} for ns in namespaces}
    for ns, proc in procs.items():
        sections = _sections(proc, ns)
        states[ns] = {key: _PARSERS.get(key, _iptables)(text) for key, text in sections.items()}
    return states


def _entries(directory, allowed_dirs=()):
    """Relative paths of every entry under directory, except the allowed top-level directories."""
    out = []
    if not directory or not os.path.isdir(directory):
        return out
    for dirpath, dirs, files in os.walk(directory):
        rel = os.path.relpath(dirpath, directory)
        for name in dirs:
            path = os.path.normpath(os.path.join(rel, name))
            if path not in allowed_dirs:
                out.append(path + "/")
        out += [os.path.normpath(os.path.join(rel, name)) for name in files]
    return sorted(out)


def file_state(places):
    """cniDir entries, host-local reservations, libcni cache entries, device-info files."""
    return {
        "cniDir": _entries(places.cni_dir, allowed_dirs=(".tmp",)),
        "host-local reservations": reservations(places.ipam_dir),
        "libcni cache": _entries(places.libcni_cache),
        "device-info files": [e for e in _entries(places.device_info_dir) if not e.endswith("/")],
    }


def snapshot(places, *extra_namespaces):
    """Everything at once: "pod <key>", "node <key>", "<ns name> <key>" and the file keys."""
    state = file_state(places)
    labelled = [("pod", places.pod), ("node", places.node)] + [(n.name, n) for n in extra_namespaces]
    states = netns_states([ns for _, ns in labelled], places.node)
    for label, ns in labelled:
        for key, value in states[ns].items():
            state["%s %s" % (label, key)] = value
    return state


def differences(baseline, now):
    """Human-readable lines for every key whose items differ: what is new and what is gone."""
    out = []
    for key in sorted(set(baseline) | set(now)):
        before, after = baseline.get(key, []), now.get(key, [])
        added = [x for x in after if x not in before]
        removed = [x for x in before if x not in after]
        if added:
            out.append("%s left behind: %s" % (key, "; ".join(added)))
        if removed:
            out.append("%s missing: %s" % (key, "; ".join(removed)))
    return out


def restore(places, baseline, *extra_namespaces):
    """Deletes what is not in the baseline: links in the pod and node, every ip rule and iptables
    chain of the pod (the default rules restored), new files under the places' directories. For
    putting things back after a finding; returns the differences that remain (the extra
    namespaces are snapshotted as in snapshot())."""
    for label, ns in (("pod", places.pod), ("node", places.node)):
        if not ns.exists():
            continue
        known = {line.split()[0] for line in baseline.get(label + " links", [])}
        for name in ns.link_names():
            if name not in known:
                ns.exec("ip", "link", "del", name, check=False)
    if places.pod.exists():
        places.pod.exec("sh", "-c", _RESET_POD_SCRIPT)
    roots = {"cniDir": places.cni_dir, "host-local reservations": places.ipam_dir,
             "libcni cache": places.libcni_cache, "device-info files": places.device_info_dir}
    for key, root in roots.items():
        for rel in reversed(file_state(places)[key]):
            if rel not in baseline.get(key, []):
                path = os.path.join(root, rel.rstrip("/"))
                (os.rmdir if rel.endswith("/") else os.unlink)(path)
    return differences(baseline, snapshot(places, *extra_namespaces))


# Flushes every ip rule and iptables chain of a namespace and restores the default rules.
_RESET_POD_SCRIPT = (
    "ip -4 rule flush; ip -4 rule add priority 32766 table main; "
    "ip -4 rule add priority 32767 table default; ip -6 rule flush; "
    "ip -6 rule add priority 32766 table main; "
    "for b in iptables-legacy ip6tables-legacy iptables-nft ip6tables-nft; do "
    "for t in filter nat mangle raw; do $b -t $t -F; $b -t $t -X; done; done 2>/dev/null; true")


def only_cache_entries(diffs):
    """True when every difference is a left-behind cniDir entry (what a later GC may remove)."""
    return bool(diffs) and all(d.startswith("cniDir left behind") for d in diffs)
