#!/usr/bin/env python3
"""Faults of the node's iptables during a scoped ADD, driven through the libcni driver with
Debian's plugins: the restore binary is missing, or ip6tables-restore fails after the IPv4 rules
went in. Each ADD must fail with error 106 naming the binary and leave nothing behind: no CNIMESH
line in any nat table, no rule at our priority, no route in our tables, no link, no IPAM
reservation, no cache entry (manifold's or the runtime's); a DEL afterwards succeeds. Likewise a
later delegate's failure undoes the scoping already applied to an earlier attachment.

manifold looks its iptables binaries up only in /usr/sbin, /sbin and /usr/bin (never PATH), so the
faults are made where it looks, without touching the host: the driver runs through a wrapper that,
in a private mount namespace, binds the real /usr/sbin to a side directory and then binds over
/usr/sbin a directory of symlinks to it in which one restore binary is missing or replaced by a
failing script. (On Debian /sbin is a symlink to /usr/sbin and /usr/bin holds no iptables binary.)
The failing ip6tables-restore also saves the IPv4 nat table it sees, proving IPv4 had succeeded.
"""
import os
import stat
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import ci, main  # noqa: E402
from scoping_world import ScopingTestCase, cluster_conf, mesh, net1_conf  # noqa: E402

CONTAINER = "ctr-scoping-faults"
SBIN = "/usr/sbin"
FAILURE_TEXT = "ip6tables-restore v1.8.9: line 5 failed (injected by the test)"


class ScopingFaultTest(ScopingTestCase):
    """A missing or failing restore binary fails the ADD with 106 and leaves nothing; a later
    delegate's failure undoes the scoping already applied."""

    def faulty_sbin(self, missing=(), failing=()):
        """Makes the driver see a /usr/sbin without `missing` and with `failing` replaced by a
        script that fails (after saving the IPv4 nat table it sees into the tree)."""
        real = self.tree.path("sbin-real")
        fake = self.tree.path("sbin-fake")
        os.makedirs(real)
        os.makedirs(fake)
        self.ipv4_seen = self.tree.path("ipv4-nat-at-ipv6-restore")
        for name in os.listdir(SBIN):
            if name in missing:
                continue
            path = os.path.join(fake, name)
            if name in failing:
                with open(path, "w", encoding="utf-8") as f:
                    f.write("#!/bin/sh\n"
                            "cat >/dev/null\n"
                            '%s/%s -t nat > "%s" 2>&1\n'
                            'echo "%s" >&2\n'
                            "exit 1\n" % (real, name.replace("ip6tables", "iptables").replace("restore", "save"),
                                          self.ipv4_seen, FAILURE_TEXT))
                os.chmod(path, stat.S_IRWXU)
            else:
                os.symlink(os.path.join(real, name), path)
        wrapper = self.tree.path("driver-with-faulty-sbin")
        with open(wrapper, "w", encoding="utf-8") as f:
            f.write("#!/bin/sh\n"
                    "exec unshare --mount --propagation private /bin/sh -c '"
                    'mount --bind %s %s && mount --bind %s %s && exec %s "$@"'
                    "' driver \"$@\"\n" % (SBIN, real, fake, SBIN, self.driver.driver_bin))
        os.chmod(wrapper, stat.S_IRWXU)
        self.real_driver = self.driver.driver_bin
        self.driver.driver_bin = wrapper

    def assert_failed_add_left_nothing(self, add, binary):
        self.assertCniError(add, 106)
        self.assertIn(binary, add.error.get("msg", ""))
        self.driver.driver_bin = self.real_driver
        for mode in ("nft", "legacy"):
            for family in ([4, 6] if self.v6 else [4]):
                self.assertNotIn("CNIMESH", self.nat_save(mode, family), "%s IPv%d" % (mode, family))
        self.assertEqual(self.our_rules(), [])
        self.assertEqual(self.table(1000), [])
        self.assertEqual(self.table(1001), [])
        self.assertNothingLeft()
        # The runtime's DEL after a failed ADD finds nothing to do and succeeds.
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertNothingLeft()

    def test_missing_iptables_restore(self):
        self.faulty_sbin(missing=("iptables-nft-restore",))
        self.write_scoped("nft")
        self.assert_failed_add_left_nothing(self.driver("add", self.pod.path, container_id=CONTAINER),
                                            "iptables-nft-restore not found")

    def test_missing_ip6tables_restore(self):
        if not self.v6:
            ci.skip_or_fail(self, "the kernel has no IPv6", feature="ipv6")
        self.faulty_sbin(missing=("ip6tables-legacy-restore",))
        self.write_scoped("legacy")
        self.assert_failed_add_left_nothing(self.driver("add", self.pod.path, container_id=CONTAINER),
                                            "ip6tables-legacy-restore not found")

    def test_ip6tables_restore_failing_after_ipv4_succeeded(self):
        if not self.v6:
            ci.skip_or_fail(self, "the kernel has no IPv6", feature="ipv6")
        self.faulty_sbin(failing=("ip6tables-nft-restore",))
        self.write_scoped("nft")
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertIn(FAILURE_TEXT, add.error.get("msg", "") if add.error else add.describe())
        with open(self.ipv4_seen, encoding="utf-8") as f:
            self.assertIn("-j CNIMESH-IN-net1", f.read(), "IPv4 was not applied before IPv6")
        self.assert_failed_add_left_nothing(add, "ip6tables-nft-restore failed")

    def failing_delegate(self, name, snapshot):
        """A delegate `name` that fails every ADD with error 11 after saving what the pod's
        namespace holds at that moment (legacy nat tables, ip rules) into `snapshot`."""
        script = os.path.join(self.tree.bin_dir, name)
        with open(script, "w", encoding="utf-8") as f:
            f.write("#!/bin/sh\n"
                    'case "$CNI_COMMAND" in\n'
                    "VERSION) echo '{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"0.4.0\",\"1.0.0\"]}'; exit 0;;\n"
                    "ADD) ;;\n"
                    "*) exit 0;;\n"
                    "esac\n"
                    "cat >/dev/null\n"
                    '{ nsenter --net="$CNI_NETNS" iptables-legacy-save -t nat; '
                    'nsenter --net="$CNI_NETNS" ip -4 rule show; } > "%s" 2>&1\n'
                    "echo '{\"cniVersion\":\"1.0.0\",\"code\":11,\"msg\":\"late network refused\"}'\n"
                    "exit 1\n" % snapshot)
        os.chmod(script, stat.S_IRWXU)

    def test_a_later_delegate_failing_rolls_back_the_applied_scoping(self):
        snapshot = self.tree.path("at-late-add")
        self.failing_delegate("late-fail", snapshot)
        late = {"cniVersion": "1.0.0", "name": "late", "type": "late-fail"}
        self.write_manifold("1.0.0", [cluster_conf(self.tree.ipam_dir, self.v6),
                                      net1_conf(self.v6, mesh("legacy"), {"enabled": True}), late])
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertCniError(add, 11)
        with open(snapshot, encoding="utf-8") as f:
            seen = f.read()
        self.assertIn("-j CNIMESH-IN-net1", seen, "net1's scoping was not applied before the failure")
        self.assertIn("30000:", seen)
        for family in ([4, 6] if self.v6 else [4]):
            self.assertNotIn("CNIMESH", self.nat_save("legacy", family))
        self.assertEqual(self.our_rules(), [])
        self.assertEqual(self.table(1000), [])
        self.assertEqual(self.table(1001), [])
        self.assertNothingLeft()

if __name__ == "__main__":
    main()
