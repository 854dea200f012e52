#!/usr/bin/env python3
"""Corrupt cache entries: a truncated file, an empty one, garbage, a record whose cached cniArgs is
not a string, one whose cached delegate config is not JSON. DEL handles each best-effort and
succeeds: from the record where it can (links, IPAM, our rules released), else from the config's
delegates without CNI_NETNS (IPAM released; the links go with the namespace) — and logs that the
entry was unreadable. CHECK answers 6 naming the file or the network; ADD of a container whose
entry is unreadable refuses with 6 before running anything, and works again after the DEL.
(DEL without any cache entry is covered by test_core_lifecycle.py and test_k8s_api.py.)
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from faults_case import ERR_DECODING, FaultsTestCase  # noqa: E402
from harness import main  # noqa: E402

CONTAINER = "ctr-faults-corrupt"


class FaultsCacheCorruptTest(FaultsTestCase):
    """ADD [cluster, scoped, fake-record], corrupt the entry, then DEL / CHECK / ADD."""

    def add(self, ns=None):
        self.write_manifold("1.0.0", [self.cluster_conf(), self.scoped_conf(),
                                      self.fake_conf("fake-record", name="third")])
        self.assertOk(self.driver("add", (ns or self.pod).path, container_id=CONTAINER))
        self.assertEqual(len(self.tree.reservations()), 1)

    def write_entry(self, data):
        with open(self.cache_path(CONTAINER), "wb") as f:
            f.write(data)

    def edit_entry(self, edit):
        record = self.cache_record(CONTAINER)
        edit(record)
        self.write_entry(json.dumps(record).encode())

    def truncate_entry(self):
        with open(self.cache_path(CONTAINER), "rb") as f:
            data = f.read()
        self.write_entry(data[:len(data) // 2])

    def assertBestEffortDel(self):
        """DEL succeeds from the config's delegates: IPAM and our rules released, entry gone; the
        links (nothing proves they are ours) go with the namespace."""
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertLogMentions("is unreadable", "deleting the configured networks best-effort")
        self.assertEqual(self.tree.reservations(), [])
        self.assertEqual(self.tree.cache_files(), [])
        self.assertNoScopingLeft()
        dels = [r["netns"] for r in self.tree.records() if r["command"] == "DEL"]
        self.assertEqual(dels, [""], "the best-effort DEL entered the namespace")
        self.pod.delete()  # the runtime's teardown
        self.assertNothingLeft()

    def test_truncated_entry(self):
        self.add()
        self.truncate_entry()
        self.assertBestEffortDel()

    def test_empty_entry(self):
        self.add()
        self.write_entry(b"")
        self.assertBestEffortDel()

    def test_garbage_entry(self):
        self.add()
        self.write_entry(b"\x00\xff garbage {[")
        self.assertBestEffortDel()

    def test_cached_config_that_is_not_json(self):
        self.add()
        self.edit_entry(lambda r: r["attachments"][1].update(config='{"cniVersion": "1.0.0", "ty'))
        self.assertBestEffortDel()

    def test_cached_cni_args_that_are_not_a_string(self):
        self.add()
        self.edit_entry(lambda r: r["attachments"][2]["extra"].update(cniArgs={"IP": "10.1.2.3"}))
        check = self.driver("check", self.pod.path, container_id=CONTAINER)
        self.assertCniError(check, ERR_DECODING)
        self.assertErrorMentions(check, "cniArgs", '"third" (net2)')
        # DEL uses the record (so the links go too), with the runtime's CNI_ARGS for net2.
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertLogMentions("cannot be decoded", "runtime's CNI_ARGS")
        self.assertEqual([(r["command"], r["netns"]) for r in self.tree.records()],
                         [("ADD", self.pod.path), ("DEL", self.pod.path)])
        self.assertAllReleased()

    def test_check_of_an_unreadable_entry_is_a_clear_decoding_error(self):
        self.add()
        self.truncate_entry()
        check = self.driver("check", self.pod.path, container_id=CONTAINER)
        self.assertCniError(check, ERR_DECODING)
        self.assertErrorMentions(check, "corrupt cache file", self.cache_path(CONTAINER))
        self.assertBestEffortDel()

    def test_check_of_an_unusable_cached_config_names_the_network(self):
        self.add()
        self.edit_entry(lambda r: r["attachments"][0].update(config="[]"))
        check = self.driver("check", self.pod.path, container_id=CONTAINER)
        self.assertCniError(check, ERR_DECODING)
        self.assertErrorMentions(check, '"cluster" (eth0)')
        self.assertBestEffortDel()

    def test_add_over_an_unreadable_entry_refuses_until_the_del(self):
        self.add()
        self.truncate_entry()
        fresh = self.new_netns()
        add = self.driver("add", fresh.path, container_id=CONTAINER)
        self.assertCniError(add, ERR_DECODING)
        self.assertErrorMentions(add, "container " + CONTAINER, "unreadable", "DEL")
        self.assertEqual(fresh.link_names(), ["lo"])
        self.assertEqual(len(self.tree.reservations()), 1, "the refused ADD allocated an address")
        self.assertBestEffortDel()
        self.assertOk(self.driver("add", fresh.path, container_id=CONTAINER))
        self.assertOk(self.driver("del", fresh.path, container_id=CONTAINER))
        self.assertNothingLeft(fresh)
        self.assertNoScopingLeft(fresh)


if __name__ == "__main__":
    main()
