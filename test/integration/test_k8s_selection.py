#!/usr/bin/env python3
"""Network selection with Kubernetes, end to end through libcni against the API server double:
the networks annotation in its comma and JSON forms (with `interface`, `ips` and `mac` reaching
the pod, the plugins' runtimeConfig and CNI_ARGS), the same NAD twice, conflist NADs, empty-config
NADs resolved from confDir, clusterNetwork/defaultNetworks by NAD name with the file fallback, the
default-network annotation, namespace isolation, and a missing NAD.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import BRIDGE, MACVLAN_MASTER, main  # noqa: E402
from k8s_case import (DEFAULT_NETWORK, NETWORKS, K8sTestCase, api_paths, nad_path,  # noqa: E402
                      pod_path)


class K8sSelectionTest(K8sTestCase):
    """Which networks a pod gets, and how the selection reaches the delegates."""

    def test_comma_form_with_namespace_and_ifname(self):
        self.api.add_nad("default", "mac-a", self.macvlan_nad_conf("198.51.100.10/24"))
        self.api.add_nad("other", "mac-b", self.macvlan_nad_conf("198.51.100.11/24"))
        self.add_pod({NETWORKS: " mac-a , other/mac-b@mb0 "})
        self.write_k8s()
        self.assertOk(self.add())
        self.assertEqual(self.pod.link_names(), ["eth0", "lo", "mb0", "net1"])
        self.assertEqual(self.pod.addresses("net1"), ["198.51.100.10/24"])
        self.assertEqual(self.pod.addresses("mb0"), ["198.51.100.11/24"])
        self.assertEqual(api_paths(self.requests()), [
            ("GET", pod_path("default", self.pod_name)),
            ("GET", nad_path("default", "mac-a")),
            ("GET", nad_path("other", "mac-b")),
            ("PUT", pod_path("default", self.pod_name) + "/status")])
        status = json.loads(self.status_annotation())
        self.assertEqual([(e["name"], e.get("interface")) for e in status],
                         [("cluster", "eth0"), ("default/mac-a", "net1"), ("other/mac-b", "mb0")])
        self.api.clear_requests()
        self.assertOk(self.check())
        self.assertOk(self.delete())
        self.assertEqual(self.requests(), [], "CHECK and DEL with a cache must not call the API")
        self.assertNothingLeft()

    def test_json_form_with_interface_ips_and_mac(self):
        record = self.tree.record_file
        conflist = {"cniVersion": "1.0.0", "plugins": [
            {"type": "macvlan", "master": MACVLAN_MASTER, "mode": "bridge",
             "capabilities": {"ips": True}, "ipam": {"type": "static"}},
            {"type": "tuning", "capabilities": {"mac": True}},
            {"type": "fake-fail", "failOn": [], "recordFile": record,
             "capabilities": {"ips": True, "mac": True}},
            {"type": "fake-fail", "failOn": [], "recordFile": record}]}
        self.api.add_nad("default", "tuned", conflist)
        selection = [{"name": "tuned", "interface": "data0", "ips": ["198.51.100.42/24"],
                      "mac": "02:00:5e:10:00:42"}]
        self.add_pod({NETWORKS: json.dumps(selection)})
        self.write_k8s()
        self.assertOk(self.add())
        self.assertEqual(self.pod.link_names(), ["data0", "eth0", "lo"])
        self.assertEqual(self.pod.addresses("data0"), ["198.51.100.42/24"])
        self.assertEqual(self.pod.mac("data0"), "02:00:5e:10:00:42")
        adds = [r for r in self.tree.records() if r["command"] == "ADD"]
        self.assertEqual(len(adds), 2)
        for rec in adds:
            self.assertEqual(rec["ifname"], "data0")
            args = dict(kv.split("=", 1) for kv in rec["args"].split(";"))
            self.assertEqual(args["IP"], "198.51.100.42/24")
            self.assertEqual(args["MAC"], "02:00:5e:10:00:42")
            self.assertEqual(args["K8S_POD_NAME"], self.pod_name)
            self.assertEqual(rec["config"]["name"], "tuned", "the NAD name is injected")
        # runtimeConfig only reaches the plugin that declares the capabilities.
        self.assertEqual(adds[0]["config"]["runtimeConfig"],
                         {"ips": ["198.51.100.42/24"], "mac": "02:00:5e:10:00:42"})
        self.assertNotIn("runtimeConfig", adds[1]["config"])
        status = json.loads(self.status_annotation())
        self.assertEqual(status[1]["name"], "default/tuned")
        self.assertEqual(status[1]["interface"], "data0")
        self.assertEqual(status[1]["ips"], ["198.51.100.42"])
        self.assertEqual(status[1]["mac"], "02:00:5e:10:00:42")
        self.assertOk(self.check())
        self.assertOk(self.delete())
        self.assertNothingLeft()

    def test_same_nad_twice_gets_two_interfaces_and_one_fetch(self):
        self.api.add_nad("default", "pool", self.hostlocal_nad_conf())
        self.add_pod({NETWORKS: "pool,pool"})
        self.write_k8s()
        self.assertOk(self.add())
        self.assertEqual(self.pod.link_names(), ["eth0", "lo", "net1", "net2"])
        net1, net2 = self.pod.addresses("net1"), self.pod.addresses("net2")
        self.assertEqual(len(net1), 1)
        self.assertEqual(len(net2), 1)
        self.assertNotEqual(net1, net2)
        self.assertEqual(api_paths(self.requests()), [
            ("GET", pod_path("default", self.pod_name)),
            ("GET", nad_path("default", "pool")),
            ("PUT", pod_path("default", self.pod_name) + "/status")])
        status = json.loads(self.status_annotation())
        self.assertEqual([(e["name"], e["interface"]) for e in status],
                         [("cluster", "eth0"), ("default/pool", "net1"), ("default/pool", "net2")])
        self.assertEqual(len(self.tree.reservations()), 3)
        self.assertOk(self.delete())
        self.assertNothingLeft()

    def test_conflist_nad_gets_the_nad_name(self):
        conflist = {"cniVersion": "0.4.0", "plugins": [
            {"type": "macvlan", "master": MACVLAN_MASTER, "mode": "bridge",
             "ipam": {"type": "static", "addresses": [{"address": "198.51.100.20/24"}]}},
            {"type": "tuning", "mac": "02:00:5e:10:00:20"},
            {"type": "fake-fail", "failOn": [], "recordFile": self.tree.record_file}]}
        self.api.add_nad("default", "chain", conflist)
        self.add_pod({NETWORKS: "chain"})
        self.write_k8s()
        self.assertOk(self.add())
        self.assertEqual(self.pod.mac("net1"), "02:00:5e:10:00:20")
        self.assertEqual(self.pod.addresses("net1"), ["198.51.100.20/24"])
        rec = self.tree.records()[0]
        self.assertEqual((rec["config"]["name"], rec["config"]["cniVersion"]), ("chain", "0.4.0"))
        self.assertEqual(rec["config"]["prevResult"]["interfaces"][0]["mac"], "02:00:5e:10:00:20")
        self.assertOk(self.check())
        self.assertOk(self.delete())
        dels = [r["command"] for r in self.tree.records()]
        self.assertEqual(dels, ["ADD", "CHECK", "DEL"])
        self.assertNothingLeft()

    def test_empty_config_nad_is_resolved_from_conf_dir(self):
        self.write_conf_dir_file("10-unrelated.conf", self.macvlan_nad_conf("198.51.100.99/24",
                                                                           name="unrelated"))
        self.write_conf_dir_file("20-whatever.conf", self.macvlan_nad_conf("198.51.100.30/24",
                                                                          name="side"))
        self.api.add_nad("default", "side", None)
        self.add_pod({NETWORKS: "side"})
        self.write_k8s()
        self.assertOk(self.add())
        self.assertEqual(self.pod.addresses("net1"), ["198.51.100.30/24"])
        status = json.loads(self.status_annotation())
        self.assertEqual(status[1]["name"], "default/side")
        self.assertOk(self.delete())
        self.assertNothingLeft()

    def test_empty_config_nad_without_a_file_is_a_clear_error(self):
        self.api.add_nad("default", "nofile", None)
        self.add_pod({NETWORKS: "nofile"})
        self.write_k8s()
        add = self.add()
        self.assertCniError(add, 104)
        self.assertErrorMentions(add, "default/nofile", self.conf_dir)
        self.assertNothingLeft()

    def test_cluster_network_and_default_networks_by_nad_name_with_file_fallback(self):
        cluster = self.cluster_conf()
        cluster["name"] = "ignored-name"
        self.api.add_nad("kube-system", "cluster-nad", cluster)
        self.api.add_nad("kube-system", "extra-nad", self.macvlan_nad_conf("198.51.100.40/24"))
        self.write_conf_dir_file("50-filenet.conf", self.macvlan_nad_conf("198.51.100.41/24",
                                                                         name="filenet"))
        self.api.delete_nad("kube-system", "filenet")
        self.add_pod({NETWORKS: "pool@pool0"})
        self.api.add_nad("default", "pool", self.hostlocal_nad_conf())
        self.write_k8s(delegates=[], clusterNetwork="cluster-nad",
                       defaultNetworks=["extra-nad", "filenet"])
        self.assertOk(self.add())
        self.assertEqual(self.pod.link_names(), ["eth0", "lo", "net1", "net2", "pool0"])
        self.assertEqual(self.pod.addresses("net1"), ["198.51.100.40/24"])
        self.assertEqual(self.pod.addresses("net2"), ["198.51.100.41/24"])
        self.assertEqual(self.node.link(BRIDGE)["ifname"], BRIDGE)
        self.assertEqual(api_paths(self.requests()), [
            ("GET", pod_path("default", self.pod_name)),
            ("GET", nad_path("kube-system", "cluster-nad")),
            ("GET", nad_path("kube-system", "extra-nad")),
            ("GET", nad_path("kube-system", "filenet")),  # 404 → confDir
            ("GET", nad_path("default", "pool")),
            ("PUT", pod_path("default", self.pod_name) + "/status")])
        status = json.loads(self.status_annotation())
        self.assertEqual([(e["name"], e["interface"], e.get("default", False)) for e in status], [
            ("kube-system/cluster-nad", "eth0", True),
            ("kube-system/extra-nad", "net1", False),
            ("filenet", "net2", False),
            ("default/pool", "pool0", False)])
        self.assertOk(self.delete())
        self.assertNothingLeft()

    def test_default_networks_are_skipped_in_system_namespaces(self):
        self.api.add_nad("kube-system", "extra-nad", self.macvlan_nad_conf("198.51.100.40/24"))
        self.add_pod({}, ns="kube-system")
        self.write_k8s(defaultNetworks=["extra-nad"])
        self.assertOk(self.add(ns="kube-system"))
        self.assertEqual(self.pod.link_names(), ["eth0", "lo"])
        self.assertEqual(api_paths(self.requests()),
                         [("GET", pod_path("kube-system", self.pod_name))],
                         "no NAD and no network-status for a pod of a system namespace")
        self.assertIsNone(self.status_annotation(ns="kube-system"))
        self.assertOk(self.delete(ns="kube-system"))
        self.assertNothingLeft()

    def test_default_network_annotation_replaces_the_cluster_network(self):
        alt = self.cluster_conf(subnet="203.0.113.0/24", gateway="203.0.113.1")
        alt["name"] = "alt"
        alt["bridge"] = "mfbr1"
        self.api.add_nad("kube-system", "alt-cluster", alt)
        self.api.add_nad("default", "mac-a", self.macvlan_nad_conf())
        self.add_pod({DEFAULT_NETWORK: "alt-cluster", NETWORKS: "mac-a"})
        self.write_k8s()
        add = self.add()
        self.assertOk(add)
        self.assertEqual(self.pod.addresses("eth0"), ["203.0.113.2/24"])
        self.assertIsNotNone(self.node.link("mfbr1"))
        self.assertIn("203.0.113.2/24", [ip["address"] for ip in add.result["ips"]])
        self.assertEqual(api_paths(self.requests()), [
            ("GET", pod_path("default", self.pod_name)),
            ("GET", nad_path("kube-system", "alt-cluster")),
            ("GET", nad_path("default", "mac-a")),
            ("PUT", pod_path("default", self.pod_name) + "/status")])
        status = json.loads(self.status_annotation())
        self.assertEqual([(e["name"], e["interface"], e.get("default", False)) for e in status],
                         [("kube-system/alt-cluster", "eth0", True), ("default/mac-a", "net1", False)])
        self.assertOk(self.delete())
        self.assertEqual(self.tree.reservations(), [])
        self.node.ip("link", "del", "mfbr1")
        self.assertNothingLeft()

    def test_namespace_isolation_violation_creates_nothing(self):
        self.api.add_nad("team-a", "own", self.macvlan_nad_conf("198.51.100.50/24"))
        self.api.add_nad("team-b", "secret", self.macvlan_nad_conf("198.51.100.51/24"))
        self.api.add_nad("default", "shared", self.macvlan_nad_conf("198.51.100.52/24"))
        self.add_pod({NETWORKS: "own, team-b/secret"}, ns="team-a")
        self.write_k8s(namespaceIsolation=True)
        add = self.add(ns="team-a")
        self.assertCniError(add, 7)
        self.assertErrorMentions(add, "namespace isolation", "team-a", "team-b")
        self.assertNothingLeft()
        self.assertEqual(api_paths(self.requests()), [("GET", pod_path("team-a", self.pod_name))],
                         "isolation is checked before any NAD is read")
        # The pod's own namespace and the global "default" namespace stay allowed.
        self.api.modify_pod("team-a", self.pod_name, annotations={NETWORKS: "own, default/shared"})
        self.assertOk(self.add(ns="team-a"))
        self.assertEqual(self.pod.link_names(), ["eth0", "lo", "net1", "net2"])
        self.assertOk(self.delete(ns="team-a"))
        self.assertNothingLeft()

    def test_missing_nad_is_a_clear_error_and_leaves_nothing(self):
        self.api.add_nad("default", "present", self.hostlocal_nad_conf())
        self.api.delete_nad("default", "absent-net")
        self.add_pod({NETWORKS: "present, absent-net"})
        self.write_k8s()
        add = self.add()
        self.assertCniError(add, 104)
        self.assertErrorMentions(add, "default/absent-net", "does not exist")
        self.assertNothingLeft()
        self.assertEqual([p for m, p in api_paths(self.requests()) if m != "GET"], [])
        self.assertOk(self.delete())
        self.assertNothingLeft()


if __name__ == "__main__":
    main()
