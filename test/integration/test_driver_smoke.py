#!/usr/bin/env python3
"""Smoke tests of the harness and the libcni runtime driver, without manifold.

They drive Debian's plugins (bridge + host-local, macvlan, ipvlan, tuning) and the fake plugins
straight through the driver, so they pass on their own and prove that the world the manifold tests
build (node/pod namespaces, veth masters, temp trees), the driver's libcni and pkg/invoke paths, and
the result/error parsing all work. They also pin the plugin behaviour the manifold tests rely on
(e.g. the error code of macvlan with a missing master).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import (BRIDGE, ManifoldTestCase, TUNED_MAC, configs, find_interface,  # noqa: E402
                     ips_on, main, route_dsts)


class DriverSmokeTest(ManifoldTestCase):
    """Each test writes one network config and drives it through the driver."""

    def test_bridge_add_check_del_del_1_0_0(self):
        self.tree.write_conf(self.cluster_conf("1.0.0"), "10-cluster.conf")
        add = self.driver("add", self.pod.path, netname="cluster")
        self.assertOk(add)
        res = add.result
        self.assertEqual(res["cniVersion"], "1.0.0")
        idx, eth0 = find_interface(res, "eth0", sandbox=self.pod.path)
        self.assertIsNotNone(idx, res)
        self.assertEqual(eth0["mac"].lower(), self.pod.mac("eth0"))
        addrs = ips_on(res, "eth0")
        self.assertEqual(len(addrs), 1, res)
        self.assertTrue(addrs[0].startswith("192.0.2."), addrs)
        self.assertNotIn("version", res["ips"][0])
        self.assertEqual(self.pod.addresses("eth0"), addrs)
        self.assertEqual([r.get("gateway") for r in self.pod.default_routes()], [configs.CLUSTER_GATEWAY])
        self.assertIn("0.0.0.0/0", route_dsts(res))
        self.assertEqual(len(self.tree.reservations()), 1)
        self.assertEqual(len(self.tree.libcni_cache_files()), 1)
        self.assertIn(BRIDGE, self.node.link_names())

        self.assertOk(self.driver("check", self.pod.path, netname="cluster"))
        self.assertOk(self.driver("del", self.pod.path, netname="cluster"))
        self.assertOk(self.driver("del", self.pod.path, netname="cluster"))
        self.assertNothingLeft()

    def test_bridge_del_with_missing_netns_succeeds(self):
        self.tree.write_conf(self.cluster_conf("1.0.0"), "10-cluster.conf")
        self.assertOk(self.driver("add", self.pod.path, netname="cluster"))
        self.pod.delete()
        self.assertOk(self.driver("del", self.pod.path, netname="cluster"))
        self.assertNothingLeft()

    def test_default_container_id_is_derived_from_the_netns_path(self):
        self.tree.write_conf(self.cluster_conf("1.0.0"), "10-cluster.conf")
        self.assertOk(self.driver("add", self.pod.path, netname="cluster"))
        cached = self.tree.libcni_cache_files()
        self.assertEqual(len(cached), 1)
        self.assertRegex(cached[0], r"^results/cluster-driver-[0-9a-f]{20}-eth0$")
        self.assertOk(self.driver("del", self.pod.path, netname="cluster"))
        self.assertNothingLeft()

    def test_bridge_0_3_1_result_has_ip_versions(self):
        self.tree.write_conf(self.cluster_conf("0.3.1"), "10-cluster.conf")
        add = self.driver("add", self.pod.path, netname="cluster")
        self.assertOk(add)
        self.assertEqual(add.result["cniVersion"], "0.3.1")
        self.assertEqual(add.result["ips"][0]["version"], "4")
        check = self.driver("check", self.pod.path, netname="cluster")
        self.assertNotEqual(check.rc, 0, "libcni refuses CHECK below 0.4.0")
        self.assertOk(self.driver("del", self.pod.path, netname="cluster"))
        self.assertNothingLeft()

    def test_macvlan_tuning_conflist_sets_mac_0_4_0(self):
        self.tree.write_conf(self.tuning_list("0.4.0"), "20-tuned.conflist")
        add = self.driver("add", self.pod.path, netname="tunednet", ifname="net2")
        self.assertOk(add)
        self.assertEqual(add.result["cniVersion"], "0.4.0")
        self.assertEqual(self.pod.mac("net2"), TUNED_MAC)
        _, net2 = find_interface(add.result, "net2", sandbox=self.pod.path)
        self.assertEqual(net2["mac"].lower(), TUNED_MAC)
        self.assertEqual(self.pod.addresses("net2"), ["198.51.100.20/24"])
        self.assertOk(self.driver("check", self.pod.path, netname="tunednet", ifname="net2"))
        self.assertOk(self.driver("del", self.pod.path, netname="tunednet", ifname="net2"))
        self.assertNothingLeft()

    def test_macvlan_static(self):
        self.tree.write_conf(self.macvlan_conf("1.0.0"), "20-mac.conf")
        add = self.driver("add", self.pod.path, netname="macnet", ifname="net1")
        self.assertOk(add)
        self.assertEqual(self.pod.addresses("net1"), ["198.51.100.10/24"])
        self.assertIn({"dst": configs.MACVLAN_ROUTE, "gateway": configs.MACVLAN_GATEWAY},
                      [{"dst": r["dst"], "gateway": r.get("gateway")} for r in self.pod.routes()])
        self.assertEqual(self.pod.link("net1")["linkinfo"]["info_kind"], "macvlan")
        self.assertOk(self.driver("del", self.pod.path, netname="macnet", ifname="net1"))
        self.assertNothingLeft()

    def test_ipvlan_static(self):
        self.require_link_kind("ipvlan")
        self.tree.write_conf(self.ipvlan_conf("0.4.0"), "30-ipv.conf")
        add = self.driver("add", self.pod.path, netname="ipvnet", ifname="net3")
        self.assertOk(add)
        self.assertEqual(self.pod.addresses("net3"), ["203.0.113.10/24"])
        self.assertEqual(self.pod.link("net3")["linkinfo"]["info_kind"], "ipvlan")
        self.assertEqual(ips_on(add.result, "net3"), ["203.0.113.10/24"])
        self.assertOk(self.driver("del", self.pod.path, netname="ipvnet", ifname="net3"))
        self.assertNothingLeft()

    def test_macvlan_missing_master_fails_with_plugin_code_999(self):
        conf = configs.macvlan("1.0.0", "mfnosuchdev", "198.51.100.10/24")
        self.tree.write_conf(conf, "20-mac.conf")
        add = self.driver("add", self.pod.path, netname="macnet", ifname="net1")
        self.assertCniError(add, 999)
        self.assertEqual(add.error["source"], "plugin")
        self.assertNothingLeft()

    def test_fake_fail_error_code_reaches_the_driver_output(self):
        self.tree.write_conf(self.fake_conf("fake-fail", failCode=11, failMsg="nope"), "40-f.conf")
        add = self.driver("add", self.pod.path, netname="fake-fail")
        self.assertCniError(add, 11)
        self.assertEqual(add.error["msg"], "nope")
        self.assertEqual([r["command"] for r in self.tree.records()], ["ADD"])

    def test_fake_garbage_is_rejected_by_libcni(self):
        self.tree.write_conf(self.fake_conf("fake-garbage"), "40-g.conf")
        add = self.driver("add", self.pod.path, netname="fake-garbage")
        self.assertNotEqual(add.rc, 0)
        self.assertEqual(add.error["source"], "driver")

    def test_1_1_0_goes_through_invoke_with_cache_gc_and_status(self):
        conf = {"cniVersion": "1.1.0", "name": "rec", "plugins": [
            {"type": "fake-record", "recordFile": self.tree.record_file, "address": "192.0.2.77/24"}]}
        self.tree.write_conf(conf, "50-rec.conflist")
        add = self.driver("add", self.pod.path, netname="rec", container_id="ctr-1")
        self.assertOk(add)
        self.assertEqual(add.result["cniVersion"], "1.1.0")
        self.assertEqual(ips_on(add.result, "eth0"), ["192.0.2.77/24"])
        self.assertEqual(self.pod.addresses("eth0"), ["192.0.2.77/24"])
        self.assertEqual(self.tree.libcni_cache_files(), ["results/rec-ctr-1-eth0"])
        self.assertOk(self.driver("check", self.pod.path, netname="rec", container_id="ctr-1"))
        valid = [{"containerID": "ctr-1", "ifname": "eth0"}]
        self.assertOk(self.driver("gc", self.pod.path, netname="rec", valid_attachments=valid))
        self.assertOk(self.driver("status", self.pod.path, netname="rec"))
        self.assertOk(self.driver("del", self.pod.path, netname="rec", container_id="ctr-1"))
        records = self.tree.records()
        self.assertEqual([r["command"] for r in records], ["ADD", "CHECK", "GC", "STATUS", "DEL"])
        self.assertEqual(records[1]["config"]["prevResult"]["ips"][0]["address"], "192.0.2.77/24")
        self.assertEqual(records[2]["config"]["cni.dev/valid-attachments"], valid)
        self.assertEqual(records[2]["containerID"], "")
        self.assertEqual(records[3]["config"]["name"], "rec")
        self.assertEqual(records[4]["config"]["prevResult"]["cniVersion"], "1.1.0")
        self.assertNothingLeft()

    def test_capability_args_reach_only_declaring_plugins(self):
        conf = {"cniVersion": "1.0.0", "name": "caps", "plugins": [
            {"type": "fake-record", "recordFile": self.tree.record_file, "capabilities": {"mac": True}},
            {"type": "fake-fail", "recordFile": self.tree.record_file, "failOn": []}]}
        self.tree.write_conf(conf, "60-caps.conflist")
        add = self.driver("add", self.pod.path, netname="caps",
                          cap_args={"mac": "02:00:00:00:00:01", "portMappings": []},
                          cni_args="IgnoreUnknown=true;K8S_POD_NAME=p")
        self.assertOk(add)
        first, second = self.tree.records()
        self.assertEqual(first["config"]["runtimeConfig"], {"mac": "02:00:00:00:00:01"})
        self.assertNotIn("runtimeConfig", second["config"])
        self.assertEqual(first["args"], "IgnoreUnknown=true;K8S_POD_NAME=p")
        self.assertIn("prevResult", second["config"])
        self.assertOk(self.driver("del", self.pod.path, netname="caps"))


if __name__ == "__main__":
    main()
