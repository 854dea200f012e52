"""The world of manifold's MultiNetworkPolicy integration tests (not a test file itself; the
test_policy_*.py files use it).

Pods are real network namespaces attached by manifold through the libcni driver: eth0 on the
cluster network (bridge mfbr0 + host-local, as every integration test has) and net1 on the network
"blue", made by Debian's real `bridge` plugin (bridge mfpol0 in the node namespace) or `macvlan`
plugin (on the node's veth mfmac0), host-local addresses from 10.77.0.0/24 and 2001:db8:77::/64
(the macvlan flavour 10.78.0.0/24 and 2001:db8:78::/64). In Kubernetes terms every pod is in
namespace "default" unless the test says otherwise and its net1 is on network "default/blue"; the
objects a real API server would return (the pod with its labels, named ports and network-status,
the policies, the namespaces) are built here from what the ADDs returned.

Rules come from `policy_tool` (test/integration/policy), which runs lib/policy's evaluation and
lifecycle against a pod's namespace with the real iptables binaries, as the node agent will. Traffic
is real: policy_probe.py listeners in the pods and probes between them. A denied connection is
recognised by what only our rules produce, never by a timeout: with denyAction "reject" the sender
gets ICMP administratively prohibited at once (EHOSTUNREACH over IPv4, EACCES over IPv6; EPERM for
a datagram refused by the sender's own rules); with "drop" the probe's bounded wait ends and the
packet counter of our deny rule proves the packet was dropped there.
"""
import json
import os
import re
import select
import subprocess
import sys

from harness import MACVLAN_MASTER, ManifoldTestCase, ci
from harness.netns import run

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "policy_probe.py")
NETWORK = "default/blue"
POLICY_BRIDGE = "mfpol0"
SUBNETS = {"bridge": ("10.77.0.0/24", "2001:db8:77::/64"), "macvlan": ("10.78.0.0/24", "2001:db8:78::/64")}
REFUSED = {4: "unreachable EHOSTUNREACH", 6: "unreachable EACCES"}
SENDER_REFUSED = "unreachable EPERM"


def kernel_has_ipv6():
    """True when this kernel has IPv6."""
    return os.path.exists("/proc/sys/net/ipv6/conf/all/disable_ipv6")


class Pod:
    """One attached pod: its namespace, Kubernetes identity and net1 addresses by family."""

    def __init__(self, name, ns, netns, container_id, labels, ips):
        self.name = name
        self.namespace = ns
        self.netns = netns
        self.container_id = container_id
        self.labels = labels
        self.ips = ips  # {4: "10.77.0.3", 6: "2001:db8:77::3"}

    def object(self, ports=(("http", 8080, "TCP"), ("dns", 53, "UDP"))):
        """The pod as the API server returns it: labels, named ports and network-status."""
        status = [{"name": NETWORK, "interface": "net1", "ips": [self.ips[f] for f in sorted(self.ips)]}]
        containers = [{"name": "app", "ports": [{"name": n, "containerPort": p, "protocol": proto}
                                                for n, p, proto in ports]}]
        return {"metadata": {"name": self.name, "namespace": self.namespace, "labels": self.labels,
                             "annotations": {"k8s.v1.cni.cncf.io/network-status": json.dumps(status)}},
                "spec": {"containers": containers}}


def policy(name, spec, policy_for="blue", ns="default"):
    """A MultiNetworkPolicy object."""
    return {"apiVersion": "k8s.cni.cncf.io/v1beta1", "kind": "MultiNetworkPolicy",
            "metadata": {"name": name, "namespace": ns,
                         "annotations": {"k8s.v1.cni.cncf.io/policy-for": policy_for}},
            "spec": spec}


def namespace(name, labels=None):
    """A Namespace object."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}


class PolicyTestCase(ManifoldTestCase):
    """ManifoldTestCase plus pods on network blue, policy_tool, listeners and probes."""

    kind = "bridge"  # the delegate making net1: "bridge" or "macvlan"

    def setUp(self):
        super().setUp()
        self.tool = os.environ.get("MANIFOLD_POLICY_TOOL", "")
        if not os.access(self.tool, os.X_OK):
            ci.skip_or_fail(self, "MANIFOLD_POLICY_TOOL is not set (run through ctest)")
        self.v6 = kernel_has_ipv6()
        if not self.v6:
            ci.require_under_ci(self, "the kernel has no IPv6 (the IPv6 rows do not run)", "ipv6")
        self.families = [4, 6] if self.v6 else [4]
        self.pods = []
        self.write_world()

    def write_world(self, **top):
        """Writes the manifold config: [cluster, blue] with blue made by self.kind."""
        self.write_manifold("1.0.0", [self.cluster_conf(), self.blue_conf()], **top)

    def blue_conf(self):
        """net1's network: bridge mfpol0 or macvlan on mfmac0, host-local in both families."""
        v4, v6 = SUBNETS[self.kind]
        ranges = [[{"subnet": v4}]] + ([[{"subnet": v6}]] if self.v6 else [])
        ipam = {"type": "host-local", "dataDir": self.tree.ipam_dir, "ranges": ranges}
        if self.kind == "macvlan":
            return {"cniVersion": "1.0.0", "name": "blue", "type": "macvlan", "master": MACVLAN_MASTER,
                    "mode": "bridge", "ipam": ipam}
        return {"cniVersion": "1.0.0", "name": "blue", "type": "bridge", "bridge": POLICY_BRIDGE,
                "isGateway": False, "ipMasq": False, "ipam": ipam}

    # ---- pods ------------------------------------------------------------------------------------

    def quiet_sysctls(self, ns):
        """IPv6 addresses usable at once (no DAD) and no ICMP rate limit on the rejections."""
        settings = ["net.ipv4.icmp_ratelimit=0", "net.ipv4.icmp_msgs_per_sec=100000"]
        if self.v6:
            settings += ["net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0",
                         "net.ipv6.icmp.ratelimit=0"]
        ns.exec("sysctl", "-qw", *settings)

    def add_pod(self, name, labels=None, ns="default"):
        """A new namespace attached by manifold (ADD through the driver); DEL at the end."""
        netns = self.new_netns()
        self.quiet_sysctls(netns)
        container_id = "ctr-%s-%s" % (name, netns.name)
        self.assertOk(self.driver("add", netns.path, container_id=container_id))
        self.addCleanup(self._del_pod, netns, container_id)
        ips = {}
        for family in self.families:
            addresses = netns.addresses("net1", family)
            self.assertEqual(len(addresses), 1, "net1 of %s has %s" % (name, addresses))
            ips[family] = addresses[0].split("/")[0]
        pod = Pod(name, ns, netns, container_id, labels or {}, ips)
        self.pods.append(pod)
        return pod

    def _del_pod(self, netns, container_id):
        run_ = self.driver("del", netns.path, container_id=container_id)
        self.assertOk(run_)

    # ---- policy_tool -----------------------------------------------------------------------------

    def tool_run(self, request):
        """Runs policy_tool with `request`; returns its output object (fails on an error)."""
        proc = run([self.tool], check=False, input_bytes=json.dumps(request).encode(), timeout=120)
        try:
            out = json.loads(proc.stdout)
        except ValueError:
            self.fail("policy_tool printed no JSON: %s %s" % (proc.stdout, proc.stderr))
        if proc.returncode != 0:
            self.fail("policy_tool failed: %s" % out)
        return out

    def pod_object(self, pod):
        """The pod as the API server would return it."""
        return pod.object()

    def request(self, command, target, policies, mode, deny, peers="all", namespaces=None, state=None):
        peer_objects = None if peers is None else [self.pod_object(p)
                                                   for p in (self.pods if peers == "all" else peers)]
        return {"command": command, "netns": target.netns.path, "ifname": "net1", "network": NETWORK,
                "families": self.families, "pod": self.pod_object(target), "policies": policies,
                "peers": peer_objects, "namespaces": namespaces or [namespace("default")],
                "config": {"enabled": True, "iptablesMode": mode, "denyAction": deny}, "state": state}

    def apply(self, target, policies, mode="nft", deny="reject", **kw):
        """Installs the rules of `target`'s net1 under `policies`; returns the PolicyState."""
        out = self.tool_run(self.request("apply", target, policies, mode, deny, **kw))
        self.addCleanup(self.remove, target, out["state"], mode)
        return out["state"]

    def reapply(self, target, state, policies, mode="nft", deny="reject", **kw):
        """Re-applies; returns (restored families, state)."""
        out = self.tool_run(self.request("reapply", target, policies, mode, deny, state=state, **kw))
        return out["restored"], out["state"]

    def check(self, target, state, policies, mode="nft", deny="reject", **kw):
        """CHECK's differences."""
        return self.tool_run(self.request("check", target, policies, mode, deny, state=state, **kw))["diffs"]

    def remove(self, target, state, mode="nft"):
        """Removes the rules recorded in `state` (idempotent)."""
        if target.netns.exists():
            self.tool_run({"command": "remove", "netns": target.netns.path, "state": state,
                           "config": {"iptablesMode": mode}})

    def filter_save(self, pod, mode, family, counters=False):
        """The pod's filter table (iptables-<mode>-save -t filter), comment lines dropped."""
        binary = "%s-%s-save" % ("iptables" if family == 4 else "ip6tables", mode)
        argv = [binary, "-t", "filter"] + (["-c"] if counters else [])
        out = pod.netns.exec(*argv, check=False).stdout
        return "\n".join(line for line in out.splitlines() if not line.startswith("#"))

    def deny_count(self, pod, mode, family, chain="MNP-IN-net1"):
        """Packets our deny rule of `chain` has dropped so far."""
        for line in self.filter_save(pod, mode, family, counters=True).splitlines():
            match = re.match(r"^\[(\d+):\d+\] -A %s .*mnp/net1/deny" % re.escape(chain), line)
            if match:
                return int(match.group(1))
        self.fail("no deny rule in %s of %s" % (chain, pod.name))
        return None

    def assertNoPolicyRules(self, pod, modes=("nft", "legacy")):
        """No MNP chain or jump in any backend or family of the pod."""
        for mode in modes:
            for family in self.families:
                self.assertNotIn("MNP-", self.filter_save(pod, mode, family), "%s IPv%d" % (mode, family))

    # ---- traffic ---------------------------------------------------------------------------------

    def serve(self, pod, *specs, label=None):
        """policy_probe.py listeners on the pod's every address (both families) for `specs`
        ("tcp:8080", "udp:53"); killed when the test ends."""
        for family in self.families:
            host = "0.0.0.0" if family == 4 else "::"
            argv = ["ip", "netns", "exec", pod.netns.name, sys.executable, "-B", PROBE, "serve",
                    label or pod.name, host] + list(specs)
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.addCleanup(self._stop, proc)
            readable, _, _ = select.select([proc.stdout], [], [], 60)
            line = proc.stdout.readline() if readable else b""
            if line.strip() != b"ready":
                proc.kill()
                _, err = proc.communicate(timeout=30)
                self.fail("listener in %s did not start: %s" % (pod.name, err.decode("utf-8", "replace")))

    @staticmethod
    def _stop(proc):
        proc.kill()
        proc.communicate(timeout=30)

    def probe(self, src, dst, proto, port, family=4, timeout=20, sport=0, dst_ip=None):
        """From src's net1 address to dst's (or dst_ip): the listener's answer without its peer
        part, or the probe's outcome. The timeout bounds answers that must come (they come in
        milliseconds); only a "drop" test waits for it, and proves the drop by a counter."""
        argv = ["ip", "netns", "exec", src.netns.name, sys.executable, "-B", PROBE, "connect", proto,
                dst_ip or dst.ips[family], str(port), "--bind", src.ips[family], "--timeout", str(timeout)]
        if sport:
            argv += ["--sport", str(sport)]
        return run(argv, timeout=timeout + 60).stdout.strip().split(" peer=")[0]

    def assertAllowed(self, src, dst, proto, port, family=4):
        out = self.probe(src, dst, proto, port, family)
        self.assertEqual(out, "%s %s:%d" % (dst.name, proto, port),
                         "%s -> %s %s/%d over IPv%d" % (src.name, dst.name, proto, port, family))

    def assertRefused(self, src, dst, proto, port, family=4, by_sender=False):
        """Refused by a reject rule: the receiver's (ICMP admin-prohibited) or the sender's."""
        out = self.probe(src, dst, proto, port, family)
        expected = {REFUSED[family]} | ({SENDER_REFUSED} if by_sender else set())
        self.assertIn(out, expected, "%s -> %s %s/%d over IPv%d" % (src.name, dst.name, proto, port, family))

    def assertTraffic(self, rows):
        """rows: (src, dst, proto, port, allowed, by_sender) for every family."""
        for src, dst, proto, port, allowed, *rest in rows:
            for family in self.families:
                if allowed:
                    self.assertAllowed(src, dst, proto, port, family)
                else:
                    self.assertRefused(src, dst, proto, port, family, by_sender=bool(rest and rest[0]))
