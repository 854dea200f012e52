#!/usr/bin/env python3
"""manifold's attachment lifecycle through libcni: ADD → CHECK → DEL → DEL, delegate order and
interface names, conflist chaining, CHECK detecting a lost interface or address, the private cache
under cniDir, and DEL succeeding when the namespace, the cache or the attachment is already gone.
"""
import os
import stat
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import ManifoldTestCase, main  # noqa: E402

CONTAINER = "ctr-lifecycle"


class CoreLifecycleTest(ManifoldTestCase):
    """Lifecycle tests on the standard delegates or on recording fakes."""

    def add_standard(self, version="1.0.0"):
        self.write_manifold(version, self.standard_delegates())
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertOk(add)
        return add

    def test_add_check_del_del(self):
        self.add_standard()
        self.assertEqual(self.pod.link_names(), ["eth0", "lo", "net1", "net2"])
        self.assertOk(self.driver("check", self.pod.path, container_id=CONTAINER))
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertNothingLeft()
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertNothingLeft()

    def test_log_goes_to_log_file_and_never_to_stdout(self):
        self.add_standard()
        self.assertGreater(os.path.getsize(self.tree.log_file), 0, "logFile is empty at logLevel debug")
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        # With logToStderr the result on stdout must still parse (libcni would reject it otherwise).
        self.write_manifold("1.0.0", self.standard_delegates(), logToStderr=True)
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertOk(add)
        self.assertEqual(add.result["cniVersion"], "1.0.0")
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertNothingLeft()

    def test_cache_is_private(self):
        self.add_standard()
        files = self.tree.cache_files()
        self.assertNotEqual(files, [])
        for dirpath, dirnames, filenames in os.walk(self.tree.cni_dir):
            for name in dirnames:
                mode = stat.S_IMODE(os.stat(os.path.join(dirpath, name)).st_mode)
                self.assertEqual(mode, 0o700, "directory %s has mode %o" % (name, mode))
            for name in filenames:
                mode = stat.S_IMODE(os.stat(os.path.join(dirpath, name)).st_mode)
                self.assertEqual(mode, 0o600, "file %s has mode %o" % (name, mode))
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertNothingLeft()

    def test_delegates_run_in_order_with_their_ifnames_and_del_in_reverse(self):
        delegates = [self.fake_conf("fake-record", "1.0.0", name="first", address="192.0.2.10/24"),
                     self.fake_conf("fake-record", "0.4.0", name="second", address="192.0.2.11/24"),
                     self.fake_conf("fake-record", "1.1.0", name="third")]
        self.write_manifold("1.1.0", delegates)
        self.assertOk(self.driver("add", self.pod.path, container_id=CONTAINER))
        self.assertOk(self.driver("check", self.pod.path, container_id=CONTAINER))
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        calls = [(r["command"], r["ifname"], r["config"]["name"]) for r in self.tree.records()]
        self.assertEqual(calls, [
            ("ADD", "eth0", "first"), ("ADD", "net1", "second"), ("ADD", "net2", "third"),
            ("CHECK", "eth0", "first"), ("CHECK", "net1", "second"), ("CHECK", "net2", "third"),
            ("DEL", "net2", "third"), ("DEL", "net1", "second"), ("DEL", "eth0", "first")])
        for record in self.tree.records():
            self.assertEqual(record["containerID"], CONTAINER)
            self.assertEqual(record["netns"], self.pod.path)
        versions = [r["config"]["cniVersion"] for r in self.tree.records()[:3]]
        self.assertEqual(versions, ["1.0.0", "0.4.0", "1.1.0"], "delegates keep their own cniVersion")
        checks = [r for r in self.tree.records() if r["command"] == "CHECK"]
        self.assertEqual(checks[0]["config"]["prevResult"]["ips"][0]["address"], "192.0.2.10/24")
        self.assertEqual(checks[1]["config"]["prevResult"]["ips"][0]["address"], "192.0.2.11/24")
        self.assertNothingLeft()

    def test_runtime_ifname_names_the_first_attachment(self):
        delegates = [self.fake_conf("fake-record", name="first"),
                     self.fake_conf("fake-record", name="second")]
        self.write_manifold("1.0.0", delegates)
        add = self.driver("add", self.pod.path, container_id=CONTAINER, ifname="ens0")
        self.assertOk(add)
        # Under a CNI_IFNAME other than eth0 the secondaries are named after it (no clash with
        # another manifold network of the same container, whose secondaries are net1, …).
        self.assertEqual(self.pod.link_names(), ["ens0", "ens0-1", "lo"])
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER, ifname="ens0"))
        self.assertNothingLeft()

    def test_conflist_delegate_is_chained_like_libcni(self):
        chain = {"cniVersion": "0.4.0", "name": "chain", "plugins": [
            {"type": "fake-record", "recordFile": self.tree.record_file, "address": "192.0.2.30/24"},
            {"type": "fake-fail", "recordFile": self.tree.record_file, "failOn": []}]}
        self.write_manifold("1.0.0", [self.fake_conf("fake-record", name="first"), chain])
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertOk(add)
        adds = [r for r in self.tree.records() if r["command"] == "ADD"]
        self.assertEqual([(r["plugin"], r["ifname"]) for r in adds],
                         [("fake-record", "eth0"), ("fake-record", "net1"), ("fake-fail", "net1")])
        for record in adds[1:]:
            self.assertEqual(record["config"]["name"], "chain")
            self.assertEqual(record["config"]["cniVersion"], "0.4.0")
        self.assertNotIn("prevResult", adds[1]["config"])
        prev = adds[2]["config"]["prevResult"]
        self.assertEqual(prev["ips"][0]["address"], "192.0.2.30/24")
        self.assertEqual(prev["interfaces"][0]["name"], "net1")
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        dels = [(r["plugin"], r["ifname"]) for r in self.tree.records() if r["command"] == "DEL"]
        self.assertEqual(dels, [("fake-fail", "net1"), ("fake-record", "net1"), ("fake-record", "eth0")])
        self.assertNothingLeft()

    def test_check_fails_when_an_interface_is_gone(self):
        self.add_standard()
        self.pod.ip("link", "del", "net1")
        check = self.driver("check", self.pod.path, container_id=CONTAINER)
        self.assertNotEqual(check.rc, 0, "CHECK passed although net1 is gone")
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertNothingLeft()

    def test_check_fails_when_an_address_is_gone(self):
        self.add_standard()
        self.pod.ip("addr", "del", "198.51.100.20/24", "dev", "net2")
        check = self.driver("check", self.pod.path, container_id=CONTAINER)
        self.assertNotEqual(check.rc, 0, "CHECK passed although net2 lost its address")
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertNothingLeft()

    def test_check_is_refused_below_0_4_0(self):
        delegates = [self.fake_conf("fake-record", "0.3.1", name="first")]
        self.write_manifold("0.3.1", delegates)
        self.assertOk(self.driver("add", self.pod.path, container_id=CONTAINER))
        # libcni refuses CHECK for 0.3.1 itself, so run manifold directly.
        conf = self.manifold_conf("0.3.1", delegates)
        check = self.run_manifold("CHECK", conf, {"CNI_CONTAINERID": CONTAINER})
        self.assertNotEqual(check.rc, 0, "manifold accepted CHECK for a 0.3.1 config")
        self.assertIsInstance(check.error, dict, check.describe())
        self.assertIn("code", check.error)
        self.assertNotIn("CHECK", [r["command"] for r in self.tree.records()])
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertNothingLeft()

    def test_del_with_missing_netns_succeeds_and_releases_everything(self):
        self.add_standard()
        self.assertEqual(len(self.tree.reservations()), 1)
        self.pod.delete()
        self.assertFalse(self.pod.exists())
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertNothingLeft()
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))

    def test_del_without_add_succeeds(self):
        self.write_manifold("1.0.0", self.standard_delegates())
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertOk(self.driver("del", "/var/run/netns/mf-never-existed", container_id="ctr-none"))
        self.assertNothingLeft()

    def test_two_containers_are_independent(self):
        self.write_manifold("1.0.0", [self.cluster_conf()])
        other = self.new_netns()
        self.assertOk(self.driver("add", self.pod.path, container_id="ctr-one"))
        self.assertOk(self.driver("add", other.path, container_id="ctr-two"))
        self.assertEqual(len(self.tree.reservations()), 2)
        self.assertOk(self.driver("del", self.pod.path, container_id="ctr-one"))
        self.assertEqual(len(self.tree.reservations()), 1)
        self.assertEqual(other.link_names(), ["eth0", "lo"])
        self.assertOk(self.driver("check", other.path, container_id="ctr-two"))
        self.assertOk(self.driver("del", other.path, container_id="ctr-two"))
        self.assertNothingLeft(self.pod, other)


if __name__ == "__main__":
    main()
