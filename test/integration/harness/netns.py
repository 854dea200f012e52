"""Network namespaces and links for manifold's integration tests.

Every namespace a test makes is named mf-<pid>-<counter>, is owned by a context manager and is
deleted when the test ends, even on failure; namespaces left by a killed test run (their pid is
gone) are swept at start-up. Tests never touch the host's own links: the "node" the plugins run in
is itself a namespace of ours (see testcase.py), holding the bridge and the veth masters.
"""
import itertools
import json
import os
import re
import subprocess

NETNS_DIR = "/var/run/netns"
_NAME_RE = re.compile(r"^mf-(\d+)-\d+$")
_counter = itertools.count()


class HarnessError(RuntimeError):
    """A setup or inspection command of the harness itself failed."""


def unique_name():
    """Returns a namespace name unique on this machine: mf-<pid>-<counter>."""
    return "mf-%d-%d" % (os.getpid(), next(_counter))


def run(cmd, check=True, input_bytes=None, timeout=60):
    """Runs cmd (a list), returns the CompletedProcess (text); raises HarnessError if check fails."""
    proc = subprocess.run(cmd, input=input_bytes, capture_output=True, timeout=timeout)
    proc.stdout = proc.stdout.decode("utf-8", "replace")
    proc.stderr = proc.stderr.decode("utf-8", "replace")
    if check and proc.returncode != 0:
        raise HarnessError("command %s failed with %d: %s%s" % (
            cmd, proc.returncode, proc.stdout, proc.stderr))
    return proc


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_namespaces():
    """Deletes mf-<pid>-* namespaces whose creating process no longer exists."""
    if not os.path.isdir(NETNS_DIR):
        return
    for name in os.listdir(NETNS_DIR):
        match = _NAME_RE.match(name)
        if match and not _pid_alive(int(match.group(1))):
            run(["ip", "netns", "del", name], check=False)


class Netns:
    """A network namespace of ours, created on enter and always deleted on exit."""

    def __init__(self, name=None):
        self.name = name or unique_name()
        self.path = os.path.join(NETNS_DIR, self.name)

    def __enter__(self):
        run(["ip", "netns", "add", self.name])
        try:
            self.ip("link", "set", "lo", "up")
        except BaseException:
            self.delete()
            raise
        return self

    def __exit__(self, *exc):
        self.delete()
        return False

    def exists(self):
        """True while the namespace's bind mount exists."""
        return os.path.exists(self.path)

    def delete(self):
        """Deletes the namespace and every link in it; a no-op when already gone.

        The links are deleted one by one first: the kernel destroys a dead namespace's links
        asynchronously, and a veth peer outside would otherwise linger for a moment."""
        if not self.exists():
            return
        try:
            doomed = [name for name in self.link_names() if name != "lo"]
            if doomed:
                self.ip_batch(["link del %s" % name for name in doomed], check=False)
        except (HarnessError, ValueError):
            pass
        run(["ip", "netns", "del", self.name], check=False)

    def ip(self, *args):
        """Runs `ip -n <ns> args...` and returns its stdout."""
        return run(["ip", "-n", self.name, *args]).stdout

    def ip_batch(self, lines, check=True):
        """Runs several `ip` commands in the namespace with one `ip -force -n <ns> -batch -`
        process (one exec instead of one per command; each costs ~10 ms on a VM with slow page
        faults); with -force every line runs even when an earlier one fails, and the exit status
        is non-zero if any failed. Returns the CompletedProcess."""
        text = "".join(line + "\n" for line in lines)
        return run(["ip", "-force", "-n", self.name, "-batch", "-"], check=check,
                   input_bytes=text.encode())

    def ip_json(self, *args):
        """Runs `ip -j -n <ns> args...` and returns the parsed JSON (a list)."""
        out = run(["ip", "-j", "-n", self.name, *args]).stdout.strip()
        return json.loads(out) if out else []

    def exec(self, *cmd, check=True, timeout=60):
        """Runs cmd inside the namespace with `ip netns exec`."""
        return run(["ip", "netns", "exec", self.name, *cmd], check=check, timeout=timeout)

    def links(self):
        """Every link in the namespace (`ip -d -j link show`)."""
        return self.ip_json("-d", "link", "show")

    def link_names(self):
        """The sorted names of every link in the namespace."""
        return sorted(link["ifname"] for link in self.links())

    def link(self, ifname):
        """The `ip -d -j link` entry of ifname, or None when there is no such link."""
        for link in self.links():
            if link["ifname"] == ifname:
                return link
        return None

    def mac(self, ifname):
        """The lower-case MAC address of ifname."""
        link = self.link(ifname)
        if link is None:
            raise HarnessError("no link %s in %s" % (ifname, self.name))
        return link["address"].lower()

    def addresses(self, ifname, family=4):
        """The global "addr/prefix" strings of ifname for the family (4 or 6)."""
        out = []
        for entry in self.ip_json("-%d" % family, "addr", "show", "dev", ifname):
            for info in entry.get("addr_info", []):
                if info.get("scope") == "global":
                    out.append("%s/%d" % (info["local"], info["prefixlen"]))
        return out

    def routes(self, family=4, table="main"):
        """The routes of a table (`ip -j route show table`), as dicts with dst, gateway, dev."""
        return self.ip_json("-%d" % family, "route", "show", "table", table)

    def default_routes(self, family=4):
        """The default routes of the main table."""
        return [r for r in self.routes(family) if r.get("dst") == "default"]


def add_veth(ns, name, peer):
    """Creates a veth pair name/peer inside ns and sets both ends up."""
    ns.ip_batch(["link add %s type veth peer name %s" % (name, peer),
                 "link set %s up" % name, "link set %s up" % peer])


def add_dummy(ns, name, address=None):
    """Creates an up placeholder link in ns (dummy, or ifb on kernels built without the dummy
    driver), optionally with an address; returns its ifindex."""
    kind = "dummy" if kernel_supports("dummy") else "ifb"
    lines = ["link add %s type %s" % (name, kind), "link set %s up" % name]
    if address:
        lines.append("addr add %s dev %s" % (address, name))
    ns.ip_batch(lines)
    return ns.link(name)["ifindex"]


def process_gone(pid):
    """True when pid does not exist or is a zombie (killed, not yet reaped by its new parent)."""
    try:
        with open("/proc/%d/stat" % pid, encoding="utf-8") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True
    return state in ("Z", "X")


_support_cache = {}


def kernel_supports(kind):
    """Whether this kernel can create links of kind (dummy, ipvlan, macvlan, vlan...).

    Probed once per process in a scratch namespace of ours; ipvlan, macvlan and vlan are created
    on top of a veth there. Some CI kernels are built without dummy, ipvlan or vlan.
    """
    if kind not in _support_cache:
        with Netns() as scratch:
            scratch.ip("link", "add", "mfprobe0", "type", "veth", "peer", "name", "mfprobe1")
            if kind in ("ipvlan", "macvlan", "vlan"):
                extra = {"vlan": ["id", "5"], "ipvlan": ["mode", "l2"], "macvlan": ["mode", "bridge"]}
                cmd = ["link", "add", "link", "mfprobe0", "name", "mfprobe2", "type", kind] + extra[kind]
            else:
                cmd = ["link", "add", "mfprobe2", "type", kind]
            _support_cache[kind] = run(["ip", "-n", scratch.name, *cmd], check=False).returncode == 0
    return _support_cache[kind]
