#!/usr/bin/env python3
"""What real runtimes do with manifold, through libcni: several manifold networks in one container
(podman `--network a,b` calls manifold once per network with CNI_IFNAME eth0, eth1), each with its
own cache entry, its own secondary interface names and its own DEL; the runtime's IP=/MAC= and
runtimeConfig ips/mac reaching the cluster network only (podman `--ip`, `--mac-address`, `network
reload`); a cache entry of the first layout (one file per container) still DELed; the meta config's
required `name`; and refused calls that leave no lock file behind.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import ManifoldTestCase, configs, main  # noqa: E402
from harness.testcase import ips_on  # noqa: E402

CONTAINER = "ctr-multi"
SECOND_BRIDGE = "mfbr1"
SECOND_SUBNET = "192.0.2.128/25"


class MultiNetworkTest(ManifoldTestCase):
    """Several manifold networks per container, and the runtime's per-interface requests."""

    def network(self, name, delegates, **extra):
        """A manifold network called `name` written beside the others into NETCONFPATH."""
        conf = configs.manifold("1.0.0", delegates, self.tree.cni_dir, self.tree.log_file, name=name, **extra)
        self.tree.add_conf(conf, "10-%s.conf" % name)
        return conf

    def two_networks(self):
        """net-a: bridge+host-local and a macvlan; net-b: a second bridge+host-local and a macvlan."""
        self.network("net-a", [self.cluster_conf(), self.macvlan_conf(address="198.51.100.10/24")])
        second = configs.bridge("1.0.0", self.tree.ipam_dir, name="cluster-b", bridge_name=SECOND_BRIDGE,
                                subnet=SECOND_SUBNET, gateway="192.0.2.129")
        second["ipam"]["routes"] = []
        self.network("net-b", [second, self.macvlan_conf(address="198.51.100.11/24", name="macnet-b")])

    def stray_node_links(self):
        return sorted(set(super().stray_node_links()) - {SECOND_BRIDGE})

    def test_two_manifold_networks_share_a_container_and_leave_one_by_one(self):
        self.two_networks()
        a = self.driver("add", self.pod.path, netname="net-a", ifname="eth0", container_id=CONTAINER)
        self.assertOk(a)
        b = self.driver("add", self.pod.path, netname="net-b", ifname="eth1", container_id=CONTAINER)
        self.assertOk(b, "the second multi-delegate network must not clash with the first's names")
        # Secondaries of the eth0 network are net<i>; of the eth1 network eth1-<i>.
        self.assertEqual(self.pod.link_names(), ["eth0", "eth1", "eth1-1", "lo", "net1"])
        self.assertEqual(sorted(self.tree.cache_files()),
                         [CONTAINER + "/net-a@eth0.json", CONTAINER + "/net-b@eth1.json"])
        self.assertEqual(len(self.tree.reservations()), 2)
        self.assertOk(self.driver("check", self.pod.path, netname="net-b", ifname="eth1", container_id=CONTAINER))

        # `podman network disconnect net-a`: only net-a's interfaces and address go.
        self.assertOk(self.driver("del", self.pod.path, netname="net-a", ifname="eth0", container_id=CONTAINER))
        self.assertEqual(self.pod.link_names(), ["eth1", "eth1-1", "lo"])
        self.assertEqual(self.tree.cache_files(), [CONTAINER + "/net-b@eth1.json"])
        self.assertEqual(len(self.tree.reservations()), 1)
        self.assertOk(self.driver("check", self.pod.path, netname="net-b", ifname="eth1", container_id=CONTAINER))

        # `podman rm`: the rest goes, and nothing of the container is left in cniDir.
        self.assertOk(self.driver("del", self.pod.path, netname="net-b", ifname="eth1", container_id=CONTAINER))
        self.assertNothingLeft()
        self.assertEqual(os.listdir(self.tree.cni_dir), [".tmp"])

    def test_a_del_of_one_network_never_touches_another_networks_entry(self):
        self.two_networks()
        self.assertOk(self.driver("add", self.pod.path, netname="net-a", ifname="eth0", container_id=CONTAINER))
        # A DEL of net-b (never added) under eth0 must leave net-a's eth0 and reservation alone.
        self.assertOk(self.driver("del", self.pod.path, netname="net-b", ifname="eth0", container_id=CONTAINER))
        self.assertEqual(self.pod.link_names(), ["eth0", "lo", "net1"])
        self.assertEqual(self.tree.cache_files(), [CONTAINER + "/net-a@eth0.json"])
        self.assertEqual(len(self.tree.reservations()), 1)
        self.assertOk(self.driver("del", self.pod.path, netname="net-a", ifname="eth0", container_id=CONTAINER))
        self.assertNothingLeft()

    def test_secondary_names_that_would_be_too_long_are_refused_before_anything_runs(self):
        self.network("net-a", [self.cluster_conf(), self.macvlan_conf()])
        add = self.driver("add", self.pod.path, netname="net-a", ifname="abcdefghijklmn", container_id=CONTAINER)
        self.assertCniError(add, 7)
        self.assertIn("longer than 15 characters", add.error["msg"])
        self.assertNothingLeft()
        self.assertEqual(os.listdir(self.tree.cni_dir) if os.path.isdir(self.tree.cni_dir) else [], [])

    def test_the_runtimes_ip_and_mac_reach_the_cluster_network_only(self):
        cluster = self.cluster_conf()
        cluster["capabilities"] = {"ips": True, "mac": True}
        cluster["ipam"]["capabilities"] = {"ips": True}
        self.write_manifold("1.0.0", [cluster, self.macvlan_conf(address="198.51.100.10/24")],
                            capabilities={"ips": True, "mac": True})
        mac = "02:00:00:aa:bb:01"
        # podman `--ip 192.0.2.77 --mac-address ...`: CNI_ARGS IP=/MAC= and runtimeConfig ips/mac.
        add = self.driver("add", self.pod.path, container_id=CONTAINER,
                          cni_args="IP=192.0.2.77;MAC=%s" % mac, cap_args={"ips": ["192.0.2.77/24"], "mac": mac})
        self.assertOk(add)
        self.assertEqual(ips_on(add.result, "eth0"), ["192.0.2.77/24"])
        self.assertEqual(self.pod.addresses("net1"), ["198.51.100.10/24"])
        self.assertEqual(self.pod.mac("eth0"), mac)
        self.assertNotEqual(self.pod.mac("net1"), mac)
        # `podman network reload`: DEL, then ADD again with the same IP= and MAC=.
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        again = self.driver("add", self.pod.path, container_id=CONTAINER,
                            cni_args="IP=192.0.2.77;MAC=%s" % mac, cap_args={"ips": ["192.0.2.77/24"], "mac": mac})
        self.assertOk(again)
        self.assertEqual(self.pod.link_names(), ["eth0", "lo", "net1"])
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertNothingLeft()

    def test_an_entry_of_the_first_layout_is_still_deleted(self):
        self.write_manifold("1.0.0", self.standard_delegates())
        self.assertOk(self.driver("add", self.pod.path, container_id=CONTAINER))
        # Rewrite the entry as the first layout wrote it: <cniDir>/<id>.json, version 1, no network.
        path = self.tree.cache_entry_path(CONTAINER)
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
        os.unlink(path)
        os.rmdir(os.path.dirname(path))
        record["version"] = 1
        for key in ("network", "cniPath"):
            del record[key]
        legacy = os.path.join(self.tree.cni_dir, CONTAINER + ".json")
        with open(legacy, "w", encoding="utf-8") as f:
            json.dump(record, f)
        os.chmod(legacy, 0o600)
        self.assertOk(self.driver("check", self.pod.path, container_id=CONTAINER))
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertNothingLeft()
        self.assertEqual(os.listdir(self.tree.cni_dir), [".tmp"])

    def test_a_config_without_a_name_is_invalid(self):
        conf = self.manifold_conf("1.0.0", self.standard_delegates())
        del conf["name"]
        run = self.run_manifold("ADD", conf)
        self.assertCniError(run, 7)
        self.assertIn('"name"', run.error["msg"])
        self.assertNothingLeft()

    def test_refused_calls_leave_no_lock_file(self):
        self.write_manifold("1.0.0", self.standard_delegates())
        add = self.driver("add", "/var/run/netns/mf-missing-netns", container_id=CONTAINER)
        self.assertNotEqual(add.rc, 0)
        check = self.driver("check", self.pod.path, container_id=CONTAINER)
        self.assertCniError(check, 3)
        self.assertEqual(sorted(os.listdir(self.tree.cni_dir)), [".tmp"] if os.path.isdir(
            os.path.join(self.tree.cni_dir, ".tmp")) else [])
        self.assertNothingLeft()


if __name__ == "__main__":
    main()
