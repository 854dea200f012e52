#!/usr/bin/env python3
"""GC and STATUS (CNI 1.1.0) through the driver's pkg/invoke path: GC with
cni.dev/valid-attachments removes the cache of every attachment not in the list and DELs it
(releasing its IPs) while leaving valid attachments alone; STATUS succeeds, and passes the cluster
network's STATUS error through.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import ManifoldTestCase, main  # noqa: E402


class CoreGcStatusTest(ManifoldTestCase):
    """GC and STATUS on a 1.1.0 manifold config."""

    def add(self, ns, container, slot):
        """ADDs container in ns with the standard delegates of slot; returns the result."""
        self.write_manifold("1.1.0", self.standard_delegates(slot=slot))
        add = self.driver("add", ns.path, container_id=container)
        self.assertOk(add)
        return add.result

    def test_gc_removes_attachments_not_in_the_valid_list(self):
        other = self.new_netns()
        self.add(self.pod, "ctr-a", 0)
        cache_a = set(self.tree.cache_files())
        reservations_a = set(self.tree.reservations())
        self.add(other, "ctr-b", 1)
        self.assertTrue(cache_a < set(self.tree.cache_files()))
        self.assertEqual(len(self.tree.reservations()), 2)

        # ctr-b's sandbox is gone and the runtime no longer knows it: only ctr-a is valid.
        other.delete()
        valid = [{"containerID": "ctr-a", "ifname": "eth0"}]
        self.assertOk(self.driver("gc", "", valid_attachments=valid))
        self.assertEqual(set(self.tree.cache_files()), cache_a)
        self.assertEqual(set(self.tree.reservations()), reservations_a)
        self.assertEqual(self.pod.link_names(), ["eth0", "lo", "net1", "net2"])
        self.write_manifold("1.1.0", self.standard_delegates(slot=0))
        self.assertOk(self.driver("check", self.pod.path, container_id="ctr-a"))

        # An empty valid list collects ctr-a too.
        self.pod.delete()
        self.assertOk(self.driver("gc", "", valid_attachments=[]))
        self.assertEqual(self.tree.cache_files(), [])
        self.assertEqual(self.tree.reservations(), [])

    def test_gc_of_unreadable_entries_keeps_the_live_one_and_releases_the_collected_one(self):
        other = self.new_netns()
        self.add(self.pod, "ctr-a", 0)
        reservations_a = set(self.tree.reservations())
        self.add(other, "ctr-b", 1)
        self.assertEqual(len(self.tree.reservations()), 2)
        for name in self.tree.cache_files():
            with open(os.path.join(self.tree.cni_dir, name), "wb") as f:
                f.write(b'{"containerID": "trunc')
        cache = self.tree.cache_files()

        # ctr-b is gone; its entry cannot be read, so GC DELs the configured networks under its
        # container ID without a namespace (host-local releases ctr-b's address) and removes it.
        # ctr-a's unreadable entry is kept for ctr-a's own DEL.
        other.delete()
        valid = [{"containerID": "ctr-a", "ifname": "eth0"}]
        self.assertOk(self.driver("gc", "", valid_attachments=valid))
        self.assertEqual(set(self.tree.reservations()), reservations_a)
        self.assertEqual(self.tree.cache_files(), [n for n in cache if "ctr-a" in n])
        self.assertIn("releasing the configured networks best-effort", self.tree.log_tail(10**7))

        self.assertOk(self.driver("del", self.pod.path, container_id="ctr-a"))
        self.assertEqual(self.tree.reservations(), [])
        self.assertEqual(self.tree.cache_files(), [])
        self.pod.delete()

    def test_gc_keeps_valid_attachments(self):
        other = self.new_netns()
        self.add(self.pod, "ctr-a", 0)
        self.add(other, "ctr-b", 1)
        cache = self.tree.cache_files()
        reservations = self.tree.reservations()
        valid = [{"containerID": "ctr-a", "ifname": "eth0"}, {"containerID": "ctr-b", "ifname": "eth0"}]
        self.assertOk(self.driver("gc", "", valid_attachments=valid))
        self.assertEqual(self.tree.cache_files(), cache)
        self.assertEqual(self.tree.reservations(), reservations)
        self.assertOk(self.driver("del", other.path, container_id="ctr-b"))
        self.write_manifold("1.1.0", self.standard_delegates(slot=0))
        self.assertOk(self.driver("del", self.pod.path, container_id="ctr-a"))
        self.assertNothingLeft(self.pod, other)

    def test_gc_without_valid_attachments_is_refused_and_collects_nothing(self):
        self.add(self.pod, "ctr-a", 0)
        cache, reservations = self.tree.cache_files(), self.tree.reservations()
        conf = self.manifold_conf("1.1.0", self.standard_delegates(slot=0))
        for valid in (None, "missing"):
            if valid is None:
                conf["cni.dev/valid-attachments"] = None
            else:
                conf.pop("cni.dev/valid-attachments", None)
            gc = self.run_manifold("GC", conf, drop=("CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"))
            self.assertCniError(gc, 7)
            self.assertIn("cni.dev/valid-attachments", gc.error["msg"])
        self.assertEqual(self.tree.cache_files(), cache)
        self.assertEqual(self.tree.reservations(), reservations)
        self.assertOk(self.driver("del", self.pod.path, container_id="ctr-a"))
        self.assertNothingLeft()

    def test_auxiliary_chain_runs_after_the_networks_with_the_built_in_passthru(self):
        cluster_path = self.tree.path("cluster.conf")
        with open(cluster_path, "w", encoding="utf-8") as f:
            json.dump(self.cluster_conf(), f)
        os.makedirs(self.tree.path("aux"))
        with open(self.tree.path("aux/10-after.conf"), "w", encoding="utf-8") as f:
            json.dump({"type": "fake-fail", "failOn": [], "recordFile": self.tree.record_file}, f)
        conf = self.manifold_conf("1.0.0", [], clusterNetwork=cluster_path, auxiliaryCNIChainName="aux")
        del conf["delegates"]
        self.tree.write_conf(conf)
        self.assertOk(self.driver("add", self.pod.path, container_id="ctr-aux"))
        calls = self.tree.records()
        self.assertEqual([(c["command"], c["ifname"], c["config"]["name"]) for c in calls], [("ADD", "net1", "aux")])
        self.assertEqual(calls[0]["config"]["prevResult"], {"cniVersion": "1.0.0"})  # passthru's empty result
        self.assertOk(self.driver("del", self.pod.path, container_id="ctr-aux"))
        self.assertEqual([c["command"] for c in self.tree.records()], ["ADD", "DEL"])
        self.assertNothingLeft()

    def test_status_succeeds(self):
        self.write_manifold("1.1.0", self.standard_delegates())
        self.assertOk(self.driver("status", ""))
        self.assertNothingLeft()

    def test_status_asks_a_1_1_0_cluster_network(self):
        cluster = self.fake_conf("fake-record", "1.1.0", name="cluster")
        self.write_manifold("1.1.0", [cluster, self.macvlan_conf()])
        self.assertOk(self.driver("status", ""))
        self.assertEqual([r["command"] for r in self.tree.records()], ["STATUS"])

    def test_status_passes_the_cluster_network_error_through(self):
        cluster = self.fake_conf("fake-fail", "1.1.0", name="cluster", failOn=["STATUS"],
                                 failCode=50, failMsg="cluster network not ready")
        self.write_manifold("1.1.0", [cluster])
        status = self.driver("status", "")
        self.assertCniError(status, 50)
        self.assertIn("cluster network not ready", status.error["msg"] + status.error.get("details", ""))


if __name__ == "__main__":
    main()
