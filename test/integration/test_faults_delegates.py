#!/usr/bin/env python3
"""Delegates that misbehave in the middle of an ADD (or a DEL), after the cluster network and a
network with manifold's own source routing and mesh rules were attached: a delegate SIGKILLed
before and after creating its link, one that exits non-zero with garbage on stdout, one that hangs
past delegateTimeout inside a conflist (on ADD) or on DEL, one whose result is in an unsupported
version. Each ADD fails with 101 naming what happened and leaves nothing: no link, no host-local
reservation, no cache entry, no ip rule or iptables rule of ours. A DEL whose delegate hangs still
releases every other network. manifold itself SIGKILLed while a delegate runs: the networks after
it were recorded but never started, and the runtime's DEL skips them (also with retryDeleteOnError
and a host-device network, whose DEL would fail on an interface it never moved). (A plain garbage result and a hang as a whole delegate are covered
by test_core_bad_input.py, failing delegates with their own CNI error by test_core_rollback.py.)
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from faults_case import ERR_DELEGATE_FAILED, FaultsTestCase  # noqa: E402
from harness import main, process_gone  # noqa: E402

CONTAINER = "ctr-faults-delegates"


class FaultsDelegatesTest(FaultsTestCase):
    """[cluster (eth0), scoped macvlan (net1), misbehaving delegate (net2)]."""

    def add_with(self, faulty, timeout=5):
        """Writes [cluster, scoped, faulty] and runs the ADD, which must fail with 101."""
        self.write_manifold("1.0.0", [self.cluster_conf(), self.scoped_conf(), faulty],
                            delegateTimeout=timeout)
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertCniError(add, ERR_DELEGATE_FAILED)
        return add

    def wait_gone(self, pid_file):
        """The pid written to pid_file disappears (the hung delegate was killed)."""
        self.assertTrue(os.path.exists(pid_file), "the hanging delegate never ran")
        with open(pid_file, encoding="utf-8") as f:
            pid = int(f.read())
        deadline = time.monotonic() + 20
        while not process_gone(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(process_gone(pid), "the hung delegate (pid %d) is still running" % pid)

    def test_delegate_killed_before_creating_its_link(self):
        add = self.add_with(self.fake_conf("fake-record", name="crashing", crash="before-link"))
        self.assertErrorMentions(add, "fake-record", "killed by signal 9")
        self.assertEqual(self.calls(), [("ADD", "net2", "crashing"), ("DEL", "net2", "crashing")])
        self.assertAllReleased()

    def test_delegate_killed_after_creating_its_link(self):
        add = self.add_with(self.fake_conf("fake-record", name="crashing", crash="after-link"))
        self.assertErrorMentions(add, "killed by signal 9")
        # Its link existed when it died: the rollback's DEL of that delegate removed it.
        self.assertEqual(self.calls(), [("ADD", "net2", "crashing"), ("DEL", "net2", "crashing")])
        self.assertAllReleased()

    def test_nonzero_exit_with_garbage_on_stdout(self):
        add = self.add_with(self.fake_conf("fake-garbage", name="babbling", exitCode=3))
        self.assertErrorMentions(add, "fake-garbage", "exit status 3", "this is not a CNI result")
        self.assertAllReleased()

    def test_conflist_plugin_hanging_past_the_timeout_after_the_first_made_its_link(self):
        pid_file = self.tree.path("hang.pid")
        chain = {"cniVersion": "1.0.0", "name": "chain", "plugins": [
            {"type": "fake-record", "recordFile": self.tree.record_file},
            {"type": "fake-hang", "recordFile": self.tree.record_file, "pidFile": pid_file}]}
        # Each plugin of the chain gets add_with's bound (5 s) on its own: ample for fake-record
        # and for fake-hang to start and record its pid on a loaded machine.
        add = self.add_with(chain)
        self.assertErrorMentions(add, "fake-hang", "timed out")
        self.wait_gone(pid_file)
        plugins = [(r["plugin"], r["command"]) for r in self.tree.records()]
        self.assertEqual(plugins, [("fake-record", "ADD"), ("fake-hang", "ADD"),
                                   ("fake-hang", "DEL"), ("fake-record", "DEL")])
        self.assertAllReleased()

    def test_result_in_an_unsupported_version(self):
        add = self.add_with(self.fake_conf("fake-record", name="future", resultVersion="2.0.0"))
        self.assertErrorMentions(add, "future", "2.0.0")
        self.assertEqual(self.calls(), [("ADD", "net2", "future"), ("DEL", "net2", "future")])
        self.assertAllReleased()

    def test_manifold_killed_mid_add_leaves_later_networks_unstarted_and_del_skips_them(self):
        add, device = self.add_killed_before_host_device(CONTAINER)
        self.assertIn("signal", json.dumps(add.error or {}) + add.stderr)
        # Every network was recorded before the first delegate ran; net1's start is the file's
        # progress mark (an extended attribute), not a rewrite of its JSON.
        path = self.cache_path(CONTAINER)
        flags = [a["extra"].get("delegateStarted", True) for a in self.cache_record(CONTAINER)["attachments"]]
        self.assertEqual(flags, [True, False, False])
        self.assertEqual(os.getxattr(path, "user.manifold.started"), b"2")
        self.assertDelSkipsNeverStarted(CONTAINER, device)

    def test_a_del_without_a_cache_entry_killed_midway_leaves_no_lock_file(self):
        # The runtime's repeated DEL of a sandbox already deleted (nothing cached), killed by the
        # runtime while a delegate runs, as containerd does when it forcibly stops a sandbox.
        self.write_manifold("1.0.0", [self.fake_conf("fake-record", name="killer", crash="caller-del")])
        delete = self.driver("del", self.pod.path, container_id=CONTAINER)
        self.assertNotEqual(delete.rc, 0, "manifold was not killed")
        self.assertEqual(self.calls(), [("DEL", "eth0", "killer")])
        self.assertEqual(os.listdir(self.tree.cni_dir) if os.path.isdir(self.tree.cni_dir) else [], [])

    def test_delegate_hanging_on_del_fails_the_del_but_the_others_are_released(self):
        pid_file = self.tree.path("hang.pid")
        hang = self.fake_conf("fake-hang", name="sticky", hangOn=["DEL"], pidFile=pid_file)
        # 5 s per delegate: ample for every delegate's ADD and for the hanging one to record its pid
        # on a loaded machine.
        self.write_manifold("1.0.0", [self.cluster_conf(), self.scoped_conf(), hang], delegateTimeout=5)
        self.assertOk(self.driver("add", self.pod.path, container_id=CONTAINER))
        self.assertNotEqual(self.our_rules(), [])
        self.assertNotEqual(self.our_chains(), [])
        delete = self.driver("del", self.pod.path, container_id=CONTAINER)
        self.assertCniError(delete, ERR_DELEGATE_FAILED)
        self.assertErrorMentions(delete, "sticky", "timed out")
        self.wait_gone(pid_file)
        # Everything but the hung delegate's own (fake, resource-less) network is released.
        self.assertEqual(self.tree.reservations(), [])
        self.assertNoScopingLeft()
        self.assertNotIn("net1", self.pod.link_names())
        self.assertNotIn("eth0", self.pod.link_names())
        # retryDeleteOnError is off: the entry is gone and the next DEL has nothing to do.
        os.unlink(pid_file)
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertAllReleased()


if __name__ == "__main__":
    main()
