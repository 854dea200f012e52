#!/usr/bin/env python3
"""A cniDir that cannot be written: read-only from the start, turning read-only in the middle of an
ADD, full (ENOSPC) in the middle of an ADD, and read-only or full at DEL. An ADD fails with I/O
error 5 naming the cause and rolls back every delegate (links, host-local reservations, our ip
rules and iptables chains); a DEL still releases everything and succeeds, logging that it could
not remove the cache entry, which the next DEL (once the disk is back) removes. A cniDir on a file
system without user extended attributes (ramfs) records each delegate's start by rewriting the
entry instead of the in-place progress mark.

The process runs in a private mount namespace (faults_case.enter_private_mount_namespace), where
the tests put a tmpfs or a bind mount on their cniDir. A fault in the middle of an ADD is injected
by a fake delegate's afterAdd command; it runs in the mount namespace `ip netns exec` made for the
runtime (a slave copy of ours), so a mount there never reaches this process or the host.
"""
import errno
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from faults_case import ERR_IO, FaultsTestCase, enter_private_mount_namespace  # noqa: E402
from harness import main  # noqa: E402

CONTAINER = "ctr-faults-cachedir"


class FaultsCacheDirTest(FaultsTestCase):
    """Each test breaks the cniDir in one way."""

    def setUp(self):
        super().setUp()
        os.makedirs(self.tree.cni_dir, mode=0o700)

    def delegates(self, *more):
        return [self.cluster_conf(), self.scoped_conf(), *more]

    def bind_cni_dir(self, read_only):
        """Bind-mounts the cniDir onto itself (read-only if asked); undone when the test ends."""
        self.mount("--bind", self.tree.cni_dir, self.tree.cni_dir)
        self.unmount_later(self.tree.cni_dir)
        if read_only:
            self.mount("-o", "remount,bind,ro", self.tree.cni_dir)

    def tmpfs_cni_dir(self, size="256k"):
        """A small tmpfs on the cniDir; undone when the test ends."""
        self.mount("-t", "tmpfs", "-o", "size=%s,mode=0700" % size, "tmpfs", self.tree.cni_dir)
        self.unmount_later(self.tree.cni_dir)

    def fill_cni_dir(self):
        """A shell command filling the cniDir's filesystem (ENOSPC for every later write)."""
        return "dd if=/dev/zero of=%s/filler bs=16k >/dev/null 2>&1; true" % self.tree.cni_dir

    def remove_filler(self):
        filler = os.path.join(self.tree.cni_dir, "filler")
        if os.path.exists(filler):
            os.unlink(filler)

    def ramfs_cni_dir(self):
        """A ramfs on the cniDir: a file system without user extended attributes; undone when the
        test ends."""
        self.mount("-t", "ramfs", "-o", "mode=0700", "ramfs", self.tree.cni_dir)
        self.unmount_later(self.tree.cni_dir)

    # ---- ADD ---------------------------------------------------------------------------------------

    def test_without_extended_attributes_each_delegate_start_is_written_into_the_entry(self):
        # No progress mark possible (ENOTSUP): net1's start is a save of the whole entry, which
        # also writes eth0's result; a kill during net1 still leaves net2 never started.
        self.ramfs_cni_dir()
        add, device = self.add_killed_before_host_device(CONTAINER)
        path = self.cache_path(CONTAINER)
        entry = self.cache_record(CONTAINER)
        self.assertEqual([a["extra"].get("delegateStarted", True) for a in entry["attachments"]],
                         [True, True, False])
        self.assertNotEqual(entry["attachments"][0]["result"], "")
        with self.assertRaises(OSError) as raised:
            os.getxattr(path, "user.manifold.started")
        self.assertEqual(raised.exception.errno, errno.EOPNOTSUPP)
        self.assertDelSkipsNeverStarted(CONTAINER, device)

    def test_read_only_cni_dir_fails_the_add_before_any_delegate_runs(self):
        self.bind_cni_dir(read_only=True)
        self.write_manifold("1.0.0", self.delegates(self.fake_conf("fake-record", name="third")))
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertCniError(add, ERR_IO)
        self.assertErrorMentions(add, "Read-only file system", self.tree.cni_dir)
        self.assertEqual(self.tree.records(), [], "a delegate ran although nothing could be cached")
        self.assertAllReleased()

    def test_cni_dir_turning_read_only_mid_add_rolls_back_every_delegate(self):
        # A read-only bind mount stacked on the cniDir: manifold's open lock file stays on the
        # writable mount below (a remount to read-only would fail while it is open for writing),
        # every later open, write, rename or unlink meets the read-only one.
        saboteur = self.fake_conf("fake-record", name="saboteur",
                                  afterAdd="mount --bind -o ro %s %s" % (self.tree.cni_dir, self.tree.cni_dir))
        self.write_manifold("1.0.0", self.delegates(saboteur, self.fake_conf("fake-record", name="fourth")))
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertCniError(add, ERR_IO)
        self.assertErrorMentions(add, "Read-only file system")
        # Every network was recorded before the first delegate ran; the next write, the mark that
        # "fourth" started (EROFS, and so does the whole save it falls back to), fails: "fourth"
        # never runs, as a crash could not be cleaned up after it.
        self.assertEqual(self.calls(), [("ADD", "net2", "saboteur"), ("DEL", "net2", "saboteur")])
        self.assertEqual(self.tree.reservations(), [])
        self.assertNoScopingLeft()
        self.assertPodEmpty()
        self.assertEqual(self.stray_node_links(), [])
        # The entry could not be removed on the read-only disk; it is stale, and the runtime's DEL
        # after the failed ADD removes it (DELs of released networks are no-ops).
        self.assertLogMentions("cannot remove the cache entry of container " + CONTAINER)
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertAllReleased()

    def test_full_cni_dir_mid_add_rolls_back_every_delegate(self):
        # tmpfs keeps the mark that "fourth" started in memory, so the full disk is met by the
        # write of the results after it.
        self.tmpfs_cni_dir()
        filler = self.fake_conf("fake-record", name="filler", afterAdd=self.fill_cni_dir())
        self.write_manifold("1.0.0", self.delegates(filler, self.fake_conf("fake-record", name="fourth")))
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertCniError(add, ERR_IO)
        self.assertErrorMentions(add, "No space left on device")
        self.assertEqual(self.calls(), [("ADD", "net2", "filler"), ("ADD", "net3", "fourth"),
                                        ("DEL", "net3", "fourth"), ("DEL", "net2", "filler")])
        self.assertEqual(self.tree.cache_files(), ["filler"], "only the filler may be left")
        self.remove_filler()
        self.assertAllReleased()

    # ---- DEL ---------------------------------------------------------------------------------------

    def test_del_on_a_read_only_cni_dir_releases_everything(self):
        self.write_manifold("1.0.0", self.delegates(self.fake_conf("fake-record", name="third")))
        self.assertOk(self.driver("add", self.pod.path, container_id=CONTAINER))
        self.assertEqual(len(self.tree.reservations()), 1)
        self.bind_cni_dir(read_only=True)
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertEqual(self.tree.reservations(), [])
        self.assertNoScopingLeft()
        self.assertPodEmpty()
        self.assertEqual(self.stray_node_links(), [])
        self.assertLogMentions("cannot remove the cache entry of container " + CONTAINER)
        self.assertEqual(self.tree.cache_files(), [CONTAINER + "/manifold-net@eth0.json"])
        # Once the disk is writable again, the next DEL removes the stale entry.
        self.assertEqual(os.system("umount %s" % self.tree.cni_dir), 0)
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertAllReleased()

    def test_del_on_a_full_cni_dir_releases_everything(self):
        self.tmpfs_cni_dir()
        self.write_manifold("1.0.0", self.delegates(self.fake_conf("fake-record", name="third")))
        self.assertOk(self.driver("add", self.pod.path, container_id=CONTAINER))
        self.assertEqual(os.system(self.fill_cni_dir()), 0)
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertEqual(self.tree.cache_files(), ["filler"])
        self.remove_filler()
        self.assertAllReleased()


if __name__ == "__main__":
    if os.geteuid() == 0:
        enter_private_mount_namespace()
    main()
