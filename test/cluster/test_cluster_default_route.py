#!/usr/bin/env python3
"""`"default-route": []` in a real pod: a macvlan NetworkAttachmentDefinition on a host veth whose
host-local IPAM adds default routes of its own (IPv4, and IPv6 where the kernel has it) through a
gateway, selected by a pod with `"default-route": []` in the JSON form of the networks annotation.
That pod has no default route of either family afterwards (neither the cluster network's on eth0
nor the NAD's on net1), network-status shows no gateway, and `default` still marks the cluster
network. A second pod selecting the same NAD without the key keeps the cluster's default route via
eth0 (and shows that the NAD's IPAM does add one on net1). Ends with the harness's leak check.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from node import layout  # noqa: E402
from scenario.case import ClusterTestCase, main  # noqa: E402

# net1's addresses and gateways: on the test's own host veth, so they meet nothing else.
SUBNET = {4: "192.0.2.0/24", 6: "2001:db8:70::/64"}
GATEWAY = {4: "192.0.2.1", 6: "2001:db8:70::1"}
RANGE_V4 = ("192.0.2.70", "192.0.2.79")


def kernel_has_ipv6():
    """True when this kernel has IPv6 (the pod then gets an IPv6 default route from the NAD)."""
    return os.path.exists("/proc/sys/net/ipv6/conf/all/disable_ipv6")


def route_lines(cluster, namespace, pod, family):
    """The main-table routes inside the pod, as busybox's `ip route` / `ip -6 route` prints them."""
    argv = ["ip", "route"] if family == 4 else ["ip", "-6", "route"]
    out = cluster.exec(namespace, pod, *argv).stdout
    return [" ".join(line.split()) for line in out.splitlines() if line.strip()]


def default_lines(cluster, namespace, pod, family):
    """The default routes inside the pod (a multipath default prints as one `default` line too)."""
    return [line for line in route_lines(cluster, namespace, pod, family)
            if line.split()[0] == "default"]


def default_routes(cluster, namespace, pod, family):
    """(gateway, device) of each default route via a gateway inside the pod."""
    return [m.groups() for line in default_lines(cluster, namespace, pod, family)
            for m in [re.match(r"default via (\S+) dev (\S+)", line)] if m]


class EmptyDefaultRoute(ClusterTestCase):
    """`"default-route": []` removes every default route, the NAD IPAM's own included."""

    def nad_with_default_routes(self, families):
        """A macvlan NAD on a new host veth; host-local adds a default route per family."""
        ranges = [[{"subnet": SUBNET[4], "gateway": GATEWAY[4],
                    "rangeStart": RANGE_V4[0], "rangeEnd": RANGE_V4[1]}]]
        routes = [{"dst": "0.0.0.0/0", "gw": GATEWAY[4]}]
        if 6 in families:
            ranges.append([{"subnet": SUBNET[6], "gateway": GATEWAY[6]}])
            routes.append({"dst": "::/0", "gw": GATEWAY[6]})
        self.nad("macvlan-gw", {"cniVersion": "1.0.0", "name": "dr-" + self.namespace,
                                "type": "macvlan", "master": self.host_veth(), "mode": "bridge",
                                "ipam": {"type": "host-local", "ranges": ranges,
                                         "routes": routes}})

    def test_no_default_route_left_and_none_in_network_status(self):
        families = [4, 6] if kernel_has_ipv6() else [4]
        self.nad_with_default_routes(families)
        self.create_pod("none", networks=[{"name": "macvlan-gw", "default-route": []}])
        self.create_pod("kept", networks=[{"name": "macvlan-gw"}])

        # The pod that asked for no default route has none of either family, and only those
        # are gone: its connected routes stay.
        for family in families:
            self.assertEqual(default_lines(self.cluster, self.namespace, "none", family), [],
                             "IPv%d routes of the pod with \"default-route\": []" % family)
        connected = route_lines(self.cluster, self.namespace, "none", 4)
        for subnet, ifname in ((layout.POD_SUBNET, "eth0"), (SUBNET[4], "net1")):
            self.assertTrue(any((line + " ").startswith("%s dev %s " % (subnet, ifname))
                                for line in connected), connected)
        status = self.cluster.network_status(self.namespace, "none")
        self.assertEqual([(s["name"], s["interface"]) for s in status],
                         [(layout.CLUSTER_NETWORK, "eth0"),
                          (self.namespace + "/macvlan-gw", "net1")], status)
        self.assertIs(status[0].get("default"), True, status)
        self.assertFalse(status[1].get("default", False), status)
        for entry in status:
            self.assertNotIn("gateway", entry, status)

        # The other pod keeps the cluster's default route via eth0, and the NAD's IPAM gave it
        # one via net1 as well (what "default-route": [] took away from the first pod).
        kept = default_routes(self.cluster, self.namespace, "kept", 4)
        self.assertIn((layout.POD_GATEWAY, "eth0"), kept)
        self.assertIn((GATEWAY[4], "net1"), kept)
        if 6 in families:
            self.assertIn((GATEWAY[6], "net1"),
                          default_routes(self.cluster, self.namespace, "kept", 6))
        kept_status = self.cluster.network_status(self.namespace, "kept")
        self.assertIs(kept_status[0].get("default"), True, kept_status)
        self.assertEqual(kept_status[0].get("gateway"), [layout.POD_GATEWAY], kept_status)

        for pod in ("none", "kept"):
            self.delete_pod(pod)
        self.assertNodeSettles(what="after the pods' deletion, the node")


if __name__ == "__main__":
    main()
