#!/usr/bin/env python3
"""200 ADD/DEL cycles of the standard three attachments through libcni leave no host-local
reservation, no cache file, no link in the pod and no stray link on the node.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import ManifoldTestCase, main  # noqa: E402

CYCLES = 200


class CoreCyclesTest(ManifoldTestCase):
    """The leak test."""

    def test_200_add_del_cycles_leave_nothing(self):
        self.write_manifold("1.0.0", self.standard_delegates())
        for i in range(CYCLES):
            container = "ctr-cycle-%d" % (i % 7)
            add = self.driver("add", self.pod.path, container_id=container)
            self.assertOk(add, "ADD of cycle %d failed" % i)
            self.assertEqual(self.pod.link_names(), ["eth0", "lo", "net1", "net2"], "cycle %d" % i)
            delete = self.driver("del", self.pod.path, container_id=container)
            self.assertOk(delete, "DEL of cycle %d failed" % i)
            if i % 50 == 49:
                self.assertNothingLeft()
        self.assertNothingLeft()


if __name__ == "__main__":
    main()
