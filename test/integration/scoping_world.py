"""The world of manifold's network-scoping integration tests: the reference scoping experiment
(a mesh proxy serving one network of a two-network pod) rebuilt with real namespaces, Debian's
plugins and the libcni driver. Not a test file itself (the test_scoping_*.py files use it).

    pod     eth0  bridge + host-local, 192.0.2.0/24 and 2001:db8:2::/64, default routes via the node
            net1  macvlan on the node's veth mfmac0, static 198.51.100.10/24 (gw .1) and
                  2001:db8:10::10/64 (gw ::1), IPAM routes 100.64.0.0/16 and 2001:db8:20::/64 via gw
    node    the harness's node namespace = the "cluster" side: bridge mfbr0 with 192.0.2.1 and
            2001:db8:2::1, "clus" listener on port 80
    gw      the macvlan master's veth peer, renamed g0: 198.51.100.1/24, 2001:db8:10::1/64;
            g1: 100.64.0.1/16 + 100.66.0.1/16, 2001:db8:20::1/64 + 2001:db8:30::1/64; forwarding
    remote  r0: 100.64.0.7/16 + 100.66.0.7/16, 2001:db8:20::7/64 + 2001:db8:30::7/64, default
            routes via g1, "remote" listener on port 80

100.66.0.0/16 and 2001:db8:30::/64 are not in the pod's main table: only net1's source-routing
table (default via the gateway) sends replies there. In the pod, the "proxy" (UID 2102) listens on
4143 (inbound, every address) and on 127.0.0.1/::1:4140 (outbound), the "app" (UID 1000) on 8080;
each listener answers with its label, local address and SO_ORIGINAL_DST (scoping_listener.py).
Every address is a documentation or shared-space prefix and exists only in our namespaces.
"""
import json
import os
import select
import subprocess
import sys

from harness import MACVLAN_MASTER, ManifoldTestCase, ci, ips_on
from harness.netns import run

HERE = os.path.dirname(os.path.abspath(__file__))
LISTENER = os.path.join(HERE, "scoping_listener.py")

PROXY_UID = 2102
APP_UID = 1000
PRIORITY = 30000

NET1 = {4: "198.51.100.10", 6: "2001:db8:10::10"}
NET1_CIDR = {4: "198.51.100.10/24", 6: "2001:db8:10::10/64"}
NET1_GW = {4: "198.51.100.1", 6: "2001:db8:10::1"}
IPAM_ROUTE = {4: "100.64.0.0/16", 6: "2001:db8:20::/64"}
REMOTE = {4: "100.64.0.7", 6: "2001:db8:20::7"}           # reachable through the IPAM route
REMOTE_SBR = {4: "100.66.0.7", 6: "2001:db8:30::7"}       # only the source-routing table knows it
CLUSTER_SUBNET = {4: "192.0.2.0/24", 6: "2001:db8:2::/64"}
CLUSTER_GW = {4: "192.0.2.1", 6: "2001:db8:2::1"}
WILDCARD = {4: "0.0.0.0", 6: "::"}
LOOPBACK = {4: "127.0.0.1", 6: "::1"}


def fmt(host, port):
    """host:port as the listener prints it."""
    return "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)


def kernel_has_ipv6():
    """True when this kernel has IPv6 (the IPv6 rows run only then)."""
    return os.path.exists("/proc/sys/net/ipv6/conf/all/disable_ipv6")


def cluster_conf(data_dir, with_v6):
    """The cluster network: bridge + host-local, dual-stack when with_v6, default routes."""
    ranges = [[{"subnet": CLUSTER_SUBNET[4], "gateway": CLUSTER_GW[4]}]]
    routes = [{"dst": "0.0.0.0/0"}]
    if with_v6:
        ranges.append([{"subnet": CLUSTER_SUBNET[6], "gateway": CLUSTER_GW[6]}])
        routes.append({"dst": "::/0"})
    return {"cniVersion": "1.0.0", "name": "cluster", "type": "bridge", "bridge": "mfbr0",
            "isGateway": True, "ipMasq": False, "hairpinMode": False,
            "ipam": {"type": "host-local", "dataDir": data_dir, "ranges": ranges, "routes": routes}}


def net1_conf(with_v6, mesh=None, source_routing=None, name="data"):
    """net1: macvlan with static addresses and IPAM routes; `mesh` / `sourceRouting` keys when
    given (the network-config layer, stripped by manifold before macvlan sees them)."""
    addresses = [{"address": NET1_CIDR[4], "gateway": NET1_GW[4]}]
    routes = [{"dst": IPAM_ROUTE[4], "gw": NET1_GW[4]}]
    if with_v6:
        addresses.append({"address": NET1_CIDR[6], "gateway": NET1_GW[6]})
        routes.append({"dst": IPAM_ROUTE[6], "gw": NET1_GW[6]})
    conf = {"cniVersion": "1.0.0", "name": name, "type": "macvlan", "master": MACVLAN_MASTER,
            "mode": "bridge", "ipam": {"type": "static", "addresses": addresses, "routes": routes}}
    if mesh is not None:
        conf["mesh"] = mesh
    if source_routing is not None:
        conf["sourceRouting"] = source_routing
    return conf


def mesh(mode, **extra):
    """An enabled mesh config with iptablesMode `mode` (defaults of the reference: 4143/4140,
    proxy UID 2102, inbound ports 4190 and 4191 ignored)."""
    conf = {"enabled": True, "iptablesMode": mode}
    conf.update(extra)
    return conf


def backend_binary(mode, family, verb):
    """iptables-nft-save, ip6tables-legacy-restore, ..."""
    return "%s-%s-%s" % ("iptables" if family == 4 else "ip6tables", mode, verb)


class ScopingTestCase(ManifoldTestCase):
    """ManifoldTestCase plus the gateway and remote namespaces, listeners and probes."""

    def setUp(self):
        super().setUp()
        self.v6 = kernel_has_ipv6()
        if not self.v6:
            ci.require_under_ci(self, "the kernel has no IPv6 (the IPv6 rows do not run)", "ipv6")
        for ns in (self.node, self.pod):
            self.quiet_sysctls(ns)
        self.gw = self.new_netns()
        self.remote = self.new_netns()
        self.quiet_sysctls(self.gw)
        self.quiet_sysctls(self.remote)
        self._build_gateway_and_remote()

    # ---- topology --------------------------------------------------------------------------------

    def quiet_sysctls(self, ns):
        """No IPv6 duplicate address detection (addresses usable at once) and no reverse-path
        filter (a reply's path is decided by routing alone, as in the reference experiment)."""
        settings = ["net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0"]
        if self.v6:
            settings += ["net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0"]
        ns.exec("sysctl", "-qw", *settings)

    def _build_gateway_and_remote(self):
        gw, remote = self.gw, self.remote
        # The macvlan master's peer becomes the gateway's g0: net1's frames arrive there.
        self.node.ip("link", "set", MACVLAN_MASTER + "p", "netns", gw.name)
        gw.ip("link", "set", MACVLAN_MASTER + "p", "name", "g0")
        gw.ip("link", "add", "g1", "type", "veth", "peer", "name", "r0", "netns", remote.name)
        addresses = {
            (gw, "g0"): [NET1_GW[4] + "/24"] + ([NET1_GW[6] + "/64"] if self.v6 else []),
            (gw, "g1"): ["100.64.0.1/16", "100.66.0.1/16"] + (
                ["2001:db8:20::1/64", "2001:db8:30::1/64"] if self.v6 else []),
            (remote, "r0"): [REMOTE[4] + "/16", REMOTE_SBR[4] + "/16"] + (
                [REMOTE[6] + "/64", REMOTE_SBR[6] + "/64"] if self.v6 else []),
        }
        for (ns, link), cidrs in addresses.items():
            for cidr in cidrs:
                ns.ip("addr", "add", cidr, "dev", link, *(["nodad"] if ":" in cidr else []))
            ns.ip("link", "set", link, "up")
        remote.ip("route", "add", "default", "via", "100.64.0.1")
        forwarding = ["net.ipv4.ip_forward=1"]
        if self.v6:
            remote.ip("-6", "route", "add", "default", "via", "2001:db8:20::1")
            forwarding.append("net.ipv6.conf.all.forwarding=1")
        gw.exec("sysctl", "-qw", *forwarding)

    # ---- listeners and probes --------------------------------------------------------------------

    def start_listener(self, ns, label, host, port, uid=None):
        """Starts scoping_listener.py serve in ns (as uid when given); killed when the test ends."""
        argv = ["ip", "netns", "exec", ns.name]
        if uid is not None:
            argv += ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups"]
        argv += [sys.executable, "-B", LISTENER, "serve", label, host, str(port)]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(self._stop_listener, proc)
        readable, _, _ = select.select([proc.stdout], [], [], 60)
        line = proc.stdout.readline() if readable else b""
        if line.strip() != b"ready":
            proc.kill()
            _, err = proc.communicate(timeout=30)
            self.fail("listener %s on %s in %s did not start: %s" % (
                label, fmt(host, port), ns.name, err.decode("utf-8", "replace")))
        return proc

    @staticmethod
    def _stop_listener(proc):
        proc.kill()
        proc.communicate(timeout=30)

    def start_services(self):
        """The proxy's and the app's listeners in the pod, "clus" in the node, "remote" remote."""
        families = [4, 6] if self.v6 else [4]
        for family in families:
            self.start_listener(self.pod, "proxy-in", WILDCARD[family], 4143, PROXY_UID)
            self.start_listener(self.pod, "proxy-out", LOOPBACK[family], 4140, PROXY_UID)
            self.start_listener(self.pod, "app", WILDCARD[family], 8080, APP_UID)
            self.start_listener(self.node, "clus", WILDCARD[family], 80)
            self.start_listener(self.remote, "remote", WILDCARD[family], 80)

    def probe(self, ns, host, port, uid=None, bind=None, timeout=30):
        """Connects from ns (as uid, from bind) and returns what scoping_listener.py connect
        printed: the server's line without its peer= part, "timeout", "refused", ...
        The timeout is a generous bound for answers that must come (they come in milliseconds);
        no assertion relies on a connection taking long."""
        argv = ["ip", "netns", "exec", ns.name]
        if uid is not None:
            argv += ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups"]
        argv += [sys.executable, "-B", LISTENER, "connect", host, str(port), "--timeout", str(timeout)]
        if bind:
            argv += ["--bind", bind]
        out = run(argv, timeout=timeout + 60).stdout.strip()
        return out.split(" peer=")[0]

    # ---- inspection ------------------------------------------------------------------------------

    def nat_save(self, mode, family=4):
        """The pod's nat table (iptables-<mode>-save -t nat) without comment lines."""
        out = self.pod.exec(backend_binary(mode, family, "save"), "-t", "nat", check=False).stdout
        return "\n".join(line for line in out.splitlines() if not line.startswith("#"))

    def our_rules(self):
        """The pod's policy-routing rules at manifold's priority, both families."""
        rules = self.pod.ip_json("rule", "show")
        if self.v6:
            rules += self.pod.ip_json("-6", "rule", "show")
        return [r for r in rules if r.get("priority") == PRIORITY]

    def table(self, table_id):
        """The routes of a table, both families ([] when the table does not exist)."""
        out = []
        for family in ([4, 6] if self.v6 else [4]):
            proc = self.pod.exec("ip", "-j", "-%d" % family, "route", "show", "table", str(table_id),
                                 check=False)
            if proc.returncode == 0 and proc.stdout.strip():
                out += json.loads(proc.stdout)
        return out

    def eth0_ip(self, result, family):
        """The pod's eth0 address of `family` in an ADD result."""
        for cidr in ips_on(result, "eth0"):
            if (":" in cidr) == (family == 6):
                return cidr.split("/")[0]
        self.fail("no IPv%d address on eth0 in %s" % (family, json.dumps(result)))
        return None

    def write_scoped(self, mode, version="1.0.0", net1_mesh=True, net1_sbr=True, **top):
        """Writes the manifold config [cluster, net1] with net1's mesh (iptablesMode `mode`) and
        source routing set in its network config; extra top-level keys from `top`."""
        delegates = [cluster_conf(self.tree.ipam_dir, self.v6),
                     net1_conf(self.v6, mesh(mode) if net1_mesh else None,
                               {"enabled": True} if net1_sbr else None)]
        return self.write_manifold(version, delegates, **top)
