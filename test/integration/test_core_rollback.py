#!/usr/bin/env python3
"""ADD failures: a failing middle delegate is rolled back so nothing is left (no link besides lo,
no host-local reservation, no cache file) and the delegate's own error code reaches the runtime;
an interface name already taken in the namespace fails with 102 before any delegate runs and
without deleting the link that was there.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import ManifoldTestCase, add_dummy, configs, main  # noqa: E402

CONTAINER = "ctr-rollback"
ERR_INTERFACE_EXISTS = 102
# Debian's macvlan reports a missing master as a plain error, which skel turns into code 999.
MACVLAN_MISSING_MASTER_CODE = 999


class CoreRollbackTest(ManifoldTestCase):
    """Every test fails an ADD and then checks that the failure left nothing behind."""

    def test_failing_middle_macvlan_leaves_nothing(self):
        broken = configs.macvlan("1.0.0", "mfnosuchdev", "198.51.100.10/24")
        self.write_manifold("1.0.0", [self.cluster_conf(), broken, self.tuning_list()])
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertCniError(add, MACVLAN_MISSING_MASTER_CODE)
        self.assertNothingLeft()
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertNothingLeft()

    def test_failing_middle_delegate_keeps_its_code_and_message(self):
        failing = self.fake_conf("fake-fail", failCode=11, failMsg="fake says try again later")
        self.write_manifold("1.0.0", [self.cluster_conf(), failing, self.tuning_list()])
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertCniError(add, 11)
        self.assertIn("fake says try again later", add.error["msg"] + add.error.get("details", ""))
        self.assertNothingLeft()

    def test_rollback_dels_the_failed_and_the_added_delegates_in_reverse(self):
        delegates = [self.fake_conf("fake-record", name="first"),
                     self.fake_conf("fake-record", name="second"),
                     self.fake_conf("fake-fail", name="third", failCode=7),
                     self.fake_conf("fake-record", name="fourth")]
        self.write_manifold("1.0.0", delegates)
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertCniError(add, 7)
        calls = [(r["command"], r["ifname"], r["config"]["name"]) for r in self.tree.records()]
        self.assertEqual(calls, [
            ("ADD", "eth0", "first"), ("ADD", "net1", "second"), ("ADD", "net2", "third"),
            ("DEL", "net2", "third"), ("DEL", "net1", "second"), ("DEL", "eth0", "first")])
        self.assertNothingLeft()

    def test_failing_conflist_plugin_rolls_back_the_chain(self):
        chain = {"cniVersion": "1.0.0", "name": "chain", "plugins": [
            {"type": "macvlan", "master": "mfmac0", "mode": "bridge",
             "ipam": {"type": "static", "addresses": [{"address": "198.51.100.20/24"}]}},
            {"type": "fake-fail", "recordFile": self.tree.record_file, "failCode": 5}]}
        self.write_manifold("1.0.0", [self.cluster_conf(), chain])
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertCniError(add, 5)
        self.assertNothingLeft()

    def test_existing_interface_name_fails_102_and_keeps_the_link(self):
        ifindex = add_dummy(self.pod, "net1", "198.18.0.1/24")
        self.write_manifold("1.0.0", self.standard_delegates())
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertCniError(add, ERR_INTERFACE_EXISTS)
        self.assertEqual(self.pod.link_names(), ["lo", "net1"])
        self.assertEqual(self.pod.link("net1")["ifindex"], ifindex, "net1 was replaced")
        self.assertEqual(self.pod.addresses("net1"), ["198.18.0.1/24"])
        self.assertEqual(self.tree.reservations(), [])
        self.assertEqual(self.tree.cache_files(), [])
        self.assertEqual(self.stray_node_links(), [])
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertEqual(self.pod.link("net1")["ifindex"], ifindex, "DEL removed a link manifold did not create")

    def test_existing_interface_name_is_never_given_to_the_delegate(self):
        add_dummy(self.pod, "net1")
        delegates = [self.fake_conf("fake-record", name="first"),
                     self.fake_conf("fake-record", name="second"),
                     self.fake_conf("fake-record", name="third")]
        self.write_manifold("1.0.0", delegates)
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertCniError(add, ERR_INTERFACE_EXISTS)
        self.assertEqual(self.tree.records(), [])  # every name is checked before the first delegate
        self.assertEqual(self.pod.link_names(), ["lo", "net1"])
        self.assertEqual(self.tree.cache_files(), [])

    def test_existing_first_interface_calls_no_delegate(self):
        add_dummy(self.pod, "eth0")
        self.write_manifold("1.0.0", [self.fake_conf("fake-record", name="first")])
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertCniError(add, ERR_INTERFACE_EXISTS)
        self.assertEqual(self.tree.records(), [])
        self.assertEqual(self.pod.link_names(), ["eth0", "lo"])


if __name__ == "__main__":
    main()
