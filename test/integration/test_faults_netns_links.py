#!/usr/bin/env python3
"""The pod's namespace or interfaces changed behind manifold's back. The namespace deleted between
ADD and DEL: DEL succeeds and releases IPAM, handing the delegates no CNI_NETNS, and CHECK is a
clear error. An interface deleted or renamed before CHECK: 107 naming it. Interfaces deleted or
renamed before DEL: DEL succeeds and releases everything (IPAM, our ip rules and chains, the cache
entry); a renamed link is not provably ours and goes with the namespace.
(The plain namespace-gone DEL is also in test_core_lifecycle.py and test_scoping_lifecycle.py.)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from faults_case import ERR_CHECK_FAILED, FaultsTestCase  # noqa: E402
from harness import main  # noqa: E402

CONTAINER = "ctr-faults-netns"
ERR_INVALID_ENV = 4


class FaultsNetnsLinksTest(FaultsTestCase):
    """ADD [cluster (eth0), scoped (net1), fake-record (net2)], then change the pod."""

    def setUp(self):
        super().setUp()
        self.write_manifold("1.0.0", [self.cluster_conf(), self.scoped_conf(),
                                      self.fake_conf("fake-record", name="third")])
        self.assertOk(self.driver("add", self.pod.path, container_id=CONTAINER))
        self.assertEqual(self.pod.link_names(), ["eth0", "lo", "net1", "net2"])
        self.assertNotEqual(self.our_rules(), [])

    def check(self):
        return self.driver("check", self.pod.path, container_id=CONTAINER)

    def delete(self):
        return self.driver("del", self.pod.path, container_id=CONTAINER)

    def test_namespace_deleted_between_add_and_del(self):
        self.pod.delete()
        check = self.check()
        self.assertCniError(check, ERR_INVALID_ENV)
        self.assertErrorMentions(check, self.pod.path)
        self.assertOk(self.delete())
        self.assertEqual([(r["command"], r["netns"]) for r in self.tree.records()][-1], ("DEL", ""))
        self.assertNothingLeft()
        self.assertOk(self.delete())

    def test_interface_deleted_before_check(self):
        self.pod.ip("link", "del", "net2")
        check = self.check()
        self.assertCniError(check, ERR_CHECK_FAILED)
        self.assertErrorMentions(check, "net2", '"third"', "missing")
        self.assertOk(self.delete())
        self.assertAllReleased()

    def test_interface_renamed_before_check(self):
        self.pod.ip("link", "set", "net1", "down")
        self.pod.ip("link", "set", "net1", "name", "moved1")
        check = self.check()
        self.assertCniError(check, ERR_CHECK_FAILED)
        self.assertErrorMentions(check, "net1", '"scoped"', "missing")
        self.pod.ip("link", "set", "moved1", "name", "net1")
        self.pod.ip("link", "set", "net1", "up")
        self.assertOk(self.delete())
        self.assertAllReleased()

    def test_interfaces_deleted_before_del(self):
        for link in ("net2", "net1", "eth0"):
            self.pod.ip("link", "del", link)
        self.assertOk(self.delete())
        self.assertAllReleased()

    def test_interfaces_renamed_before_del(self):
        for link, new in (("eth0", "moved0"), ("net1", "moved1")):
            self.pod.ip("link", "set", link, "down")
            self.pod.ip("link", "set", link, "name", new)
        self.assertOk(self.delete())
        self.assertEqual(self.tree.reservations(), [])
        self.assertEqual(self.tree.cache_files(), [])
        self.assertNoScopingLeft()
        self.assertEqual(self.pod.link_names(), ["lo", "moved0", "moved1"])
        self.pod.delete()  # the runtime's teardown takes the renamed links with it
        self.assertNothingLeft()


if __name__ == "__main__":
    main()
