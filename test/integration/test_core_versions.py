#!/usr/bin/env python3
"""manifold ADD/CHECK/DEL end to end through libcni, for config versions 0.3.1, 0.4.0, 1.0.0, 1.1.0.

The delegates are Debian's plugins: bridge + host-local as the cluster network (eth0), macvlan with
static IPAM (net1) and a conflist of macvlan + tuning that sets the MAC (net2); an ipvlan variant
replaces the macvlan. Each test asserts the links, addresses, routes and MACs inside the pod
namespace, the result the runtime got (always in manifold's own cniVersion, converted from
whatever the delegate answered; the cluster network's result, or every attachment's with
"returnAllResults"), the cache under cniDir, and that DEL (twice) leaves nothing behind.
"""
import ipaddress
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import (TUNED_MAC, ManifoldTestCase, configs, find_interface, ips_on,  # noqa: E402
                     main, route_dsts)

VERSIONS = ["0.3.1", "0.4.0", "1.0.0", "1.1.0"]
CONTAINER = "ctr-versions"
NET1_ADDR = "198.51.100.10/24"
NET2_ADDR = "198.51.100.20/24"
IPVLAN_ADDR = "203.0.113.10/24"


def mixed_versions(version):
    """Delegate versions that differ from manifold's, so results must be converted (down from
    1.0.0 for old configs; up from 0.4.0 and 0.3.1 for 1.x configs)."""
    if version in ("0.3.1", "0.4.0"):
        return "1.0.0", "0.4.0", "1.0.0"
    return "0.4.0", "0.3.1", "0.4.0"


def check_applies(version, delegate_versions):
    """CHECK exists from 0.4.0 on, for manifold's config and for every delegate it would check."""
    return all(v not in ("0.3.0", "0.3.1") for v in (version,) + tuple(delegate_versions))


class CoreVersionsTest(ManifoldTestCase):
    """One ADD → CHECK → DEL → DEL round per version and delegate mix (methods generated below)."""

    def round_trip(self, version, delegate_versions, return_all=False, secondary="macvlan"):
        cluster_v, second_v, tuned_v = delegate_versions
        second = (self.macvlan_conf(second_v, NET1_ADDR) if secondary == "macvlan"
                  else self.ipvlan_conf(second_v, IPVLAN_ADDR))
        net1_addr = NET1_ADDR if secondary == "macvlan" else IPVLAN_ADDR
        net1_route = configs.MACVLAN_ROUTE if secondary == "macvlan" else configs.IPVLAN_ROUTE
        net1_gw = configs.MACVLAN_GATEWAY if secondary == "macvlan" else configs.IPVLAN_GATEWAY
        delegates = [self.cluster_conf(cluster_v), second, self.tuning_list(tuned_v, NET2_ADDR)]
        extra = {"returnAllResults": True} if return_all else {}
        self.write_manifold(version, delegates, **extra)

        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertOk(add)
        res = add.result
        self.assertIsInstance(res, dict, add.describe())

        # --- the namespace ---
        self.assertEqual(self.pod.link_names(), ["eth0", "lo", "net1", "net2"])
        eth0_addrs = self.pod.addresses("eth0")
        self.assertEqual(len(eth0_addrs), 1, eth0_addrs)
        self.assertIn(ipaddress.ip_interface(eth0_addrs[0]).ip,
                      ipaddress.ip_network(configs.CLUSTER_SUBNET))
        self.assertEqual(self.pod.addresses("net1"), [net1_addr])
        self.assertEqual(self.pod.link("net1")["linkinfo"]["info_kind"], secondary)
        self.assertEqual(self.pod.addresses("net2"), [NET2_ADDR])
        self.assertEqual(self.pod.link("net2")["linkinfo"]["info_kind"], "macvlan")
        self.assertEqual(self.pod.mac("net2"), TUNED_MAC)
        routes = [(r["dst"], r.get("gateway"), r.get("dev")) for r in self.pod.routes()]
        self.assertIn(("default", configs.CLUSTER_GATEWAY, "eth0"), routes)
        self.assertIn((net1_route, net1_gw, "net1"), routes)
        self.assertEqual(len(self.pod.default_routes()), 1, routes)

        # --- the result, in manifold's cniVersion ---
        self.assertEqual(res.get("cniVersion"), version, res)
        _, eth0 = find_interface(res, "eth0", sandbox=self.pod.path)
        self.assertIsNotNone(eth0, res)
        self.assertEqual(eth0.get("mac", "").lower(), self.pod.mac("eth0"))
        self.assertEqual(ips_on(res, "eth0"), eth0_addrs)
        self.assertIn("0.0.0.0/0", route_dsts(res))
        for ip in res.get("ips", []):
            if version in ("0.3.1", "0.4.0"):
                self.assertEqual(ip.get("version"), "4", res)
            else:
                self.assertNotIn("version", ip, res)
            self.assertLess(ip["interface"], len(res["interfaces"]), res)
        if return_all:
            _, net1 = find_interface(res, "net1", sandbox=self.pod.path)
            _, net2 = find_interface(res, "net2", sandbox=self.pod.path)
            self.assertIsNotNone(net1, res)
            self.assertIsNotNone(net2, res)
            self.assertEqual(net1.get("mac", "").lower(), self.pod.mac("net1"))
            self.assertEqual(net2.get("mac", "").lower(), TUNED_MAC)
            self.assertEqual(ips_on(res, "net1"), [net1_addr])
            self.assertEqual(ips_on(res, "net2"), [NET2_ADDR])
            self.assertIn(net1_route, route_dsts(res))
            self.assertEqual(len(res["ips"]), 3, res)
        else:
            self.assertEqual(find_interface(res, "net1"), (None, None), res)
            self.assertEqual(find_interface(res, "net2"), (None, None), res)
            self.assertEqual(len(res["ips"]), 1, res)
            self.assertNotIn(net1_route, route_dsts(res))

        # --- state on disk ---
        self.assertEqual(len(self.tree.reservations()), 1)
        self.assertNotEqual(self.tree.cache_files(), [], "manifold cached nothing under cniDir")

        # --- CHECK (the spec has it from 0.4.0; libcni refuses it below) ---
        if check_applies(version, delegate_versions):
            self.assertOk(self.driver("check", self.pod.path, container_id=CONTAINER))

        # --- DEL, twice ---
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertNothingLeft()
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertNothingLeft()


def _generate():
    for version in VERSIONS:
        tag = version.replace(".", "_")
        same = (configs.delegate_version(version),) * 3

        def same_test(self, v=version, d=same):
            self.round_trip(v, d)

        def mixed_test(self, v=version):
            self.round_trip(v, mixed_versions(v))

        def all_results_test(self, v=version):
            self.round_trip(v, mixed_versions(v), return_all=True)

        def ipvlan_test(self, v=version, d=same):
            self.require_link_kind("ipvlan")
            self.round_trip(v, d, return_all=True, secondary="ipvlan")

        setattr(CoreVersionsTest, "test_%s_same_delegate_versions" % tag, same_test)
        setattr(CoreVersionsTest, "test_%s_mixed_delegate_versions" % tag, mixed_test)
        setattr(CoreVersionsTest, "test_%s_return_all_results" % tag, all_results_test)
        setattr(CoreVersionsTest, "test_%s_ipvlan" % tag, ipvlan_test)


_generate()

if __name__ == "__main__":
    main()
