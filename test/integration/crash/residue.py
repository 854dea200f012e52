"""What a test run leaves behind, as a comparable snapshot.

A snapshot records, for the pod and the node namespace, the links, addresses, routes of every
routing table and policy-routing rules, and for the pod (where manifold writes them) the rules and
non-built-in chains of every table of both iptables backends (legacy and nft) for IPv4 and IPv6;
and on disk every entry under cniDir (any
file, and any directory but the top-level `.tmp`: the cache layout may change, so no file name is
assumed; the top-level `.tls` holds the node's stored TLS session, not a container's state, and is
left out), the host-local reservations, the runtime's (libcni's) cache entries and the device-info
files. Link-local IPv6 addresses and routes are left out: they come and go with their links, which
are compared themselves. differences() lists what was added to or removed from a baseline.

Each namespace is read by one shell: two `ip -n <ns> -batch` runs (IPv4 with link details, IPv6)
and, in pods, the iptables saves under one `ip netns exec <ns>` (legacy ones only where the
namespace has legacy tables, which a save would otherwise create); all namespaces in parallel.
"""
import json
import os
import subprocess

from harness.netns import HarnessError
from harness.tree import TLS_SESSION_DIR, reservations

# Two `ip -batch` runs per namespace: (global options, [(key, batch line)...]); one JSON document
# per line comes out.
_IP_BATCHES = (
    ("-d -j -4", (("links", "link show"), ("addresses", "addr show"),
                  ("routes4", "route show table all"), ("rules4", "rule show"))),
    ("-j -6", (("addresses", "addr show"), ("routes6", "route show table all"),
               ("rules6", "rule show"))),
)
# The iptables saves of a pod: (key, command, the /proc file that lists its loaded tables or None).
# A legacy save runs only when the namespace has legacy tables: it would create them otherwise.
_IPTABLES_COMMANDS = (
    ("iptables-nft", "iptables-nft-save", None),
    ("ip6tables-nft", "ip6tables-nft-save", None),
    ("iptables-legacy", "iptables-legacy-save", "/proc/net/ip_tables_names"),
    ("ip6tables-legacy", "ip6tables-legacy-save", "/proc/net/ip6_tables_names"),
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


def _ip_script(ns):
    lines = []
    for options, commands in _IP_BATCHES:
        batch = "\\n".join(line for _, line in commands)
        lines.append("echo '%sip %s'; printf '%s\\n' | ip %s -n '%s' -batch -" % (
            _MARK, options, batch, options, ns.name))
    return "; ".join(lines)


def _iptables_script(ns):
    saves = []
    for key, command, tables in _IPTABLES_COMMANDS:
        save = "echo '%s%s'; %s" % (_MARK, key, command)
        saves.append("if read x < %s; then %s; fi" % (tables, save) if tables else save)
    return "ip netns exec '%s' sh -c \"%s\"" % (ns.name, "; ".join(saves))


def _start(ns, with_iptables):
    """Starts reading a namespace in one shell: two `ip -batch` runs, then (when asked) the
    iptables saves in one `ip netns exec <ns> sh`."""
    script = _ip_script(ns) + ("; " + _iptables_script(ns) if with_iptables else "")
    return subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _sections(proc, ns):
    """The output of _start, split at the marks; raises HarnessError when the reader failed."""
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


def _ip_documents(text, commands, ns):
    """{key: [parsed JSON documents]} of one batch's output, one document per command."""
    decoder, pos, docs = json.JSONDecoder(), 0, []
    text = text.strip()
    while pos < len(text):
        doc, pos = decoder.raw_decode(text, pos)
        docs.append(doc)
        while pos < len(text) and text[pos].isspace():
            pos += 1
    if len(docs) != len(commands):
        raise HarnessError("ip -batch in %s printed %d documents for %d commands" % (ns.name, len(docs), len(commands)))
    return [(key, doc) for (key, _), doc in zip(commands, docs)]


def _links(doc):
    return sorted(("%s %s" % (link["ifname"], (link.get("linkinfo") or {}).get("info_kind", ""))).strip()
                  for link in doc)


def _addresses(doc):
    out = []
    for link in doc:
        for info in link.get("addr_info", []):
            if not info.get("local", "").startswith("fe80:"):
                out.append("%s %s/%s" % (link["ifname"], info["local"], info["prefixlen"]))
    return sorted(out)


def _routes(doc):
    out = []
    for route in doc:
        dst = route.get("dst", "")
        if dst.startswith(("fe80:", "ff00:")):
            continue
        out.append(json.dumps({k: route[k] for k in _ROUTE_KEYS if k in route}, sort_keys=True))
    return sorted(out)


def _rules(doc):
    return sorted(json.dumps(rule, sort_keys=True) for rule in doc)


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


def _state(sections, ns, with_iptables):
    """The state of one namespace from its sections (addresses of both families merged)."""
    state = {}
    for options, commands in _IP_BATCHES:
        for key, doc in _ip_documents(sections.get("ip " + options, ""), commands, ns):
            state[key] = sorted(state.get(key, []) + _PARSERS[key](doc))
    if with_iptables:
        for key, _, _ in _IPTABLES_COMMANDS:
            state[key] = _iptables(sections.get(key, ""))
    return state


def netns_states(namespaces, node):
    """{ns: state} for namespaces read in parallel (iptables too, but in the node), a state being
    key -> sorted list of strings ({} for a namespace that is gone)."""
    procs = {ns: _start(ns, ns is not node) for ns in namespaces if ns.exists()}
    states = {ns: {} for ns in namespaces}
    for ns, proc in procs.items():
        states[ns] = _state(_sections(proc, ns), ns, ns is not node)
    return states


def _entries(directory, allowed_dirs=(), ignored_trees=()):
    """Relative paths of every entry under directory, except the allowed top-level directories and
    the top-level trees ignored with all they hold."""
    out = []
    if not directory or not os.path.isdir(directory):
        return out
    for dirpath, dirs, files in os.walk(directory):
        rel = os.path.relpath(dirpath, directory)
        if rel == ".":
            dirs[:] = [d for d in dirs if d not in ignored_trees]
        for name in dirs:
            path = os.path.normpath(os.path.join(rel, name))
            if path not in allowed_dirs:
                out.append(path + "/")
        out += [os.path.normpath(os.path.join(rel, name)) for name in files]
    return sorted(out)


def file_state(places):
    """cniDir entries, host-local reservations, libcni cache entries, device-info files."""
    return {
        "cniDir": _entries(places.cni_dir, allowed_dirs=(".tmp",), ignored_trees=(TLS_SESSION_DIR,)),
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


# Deletes every ip rule but the kernel's defaults, and flushes every iptables chain, of a namespace.
_RESET_POD_SCRIPT = (
    "for f in 4 6; do ip -$f rule show | cut -d: -f1 | while read p; do case $p in "
    "0|32766|32767) ;; *) ip -$f rule del priority $p;; esac; done; done; "
    "for b in iptables-legacy ip6tables-legacy iptables-nft ip6tables-nft; do "
    "for t in filter nat mangle raw; do $b -t $t -F; $b -t $t -X; done; done 2>/dev/null; true")


def only_cache_entries(diffs):
    """True when every difference is a left-behind cniDir entry (what a later GC may remove)."""
    return bool(diffs) and all(d.startswith("cniDir left behind") for d in diffs)
