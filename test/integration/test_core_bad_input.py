#!/usr/bin/env python3
"""Bad input gets the right CNI error code and creates nothing: invalid JSON (6), an unknown
cniVersion (1), a missing environment variable (4), wrong or empty config (7), a NUL byte in a
path (7), a delegate type that is a path (7), a delegate binary that does not exist (101), a
delegate that prints garbage (101) or hangs (101, killed after delegateTimeout). Also VERSION
lists all seven spec versions. Where no runtime can produce the input (invalid JSON, missing
variables, VERSION) the manifold binary is run directly; everything else goes through the libcni
driver.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import ALL_VERSIONS, ManifoldTestCase, main, process_gone  # noqa: E402

CONTAINER = "ctr-bad-input"
ERR_INCOMPATIBLE_VERSION = 1
ERR_INVALID_ENV = 4
ERR_DECODING = 6
ERR_INVALID_CONFIG = 7
ERR_DELEGATE_FAILED = 101


class CoreBadInputTest(ManifoldTestCase):
    """Each test feeds one kind of bad input and checks the code and that nothing was created."""

    def assertErrorJson(self, run, code):
        """A direct run printed a CNI error object with cniVersion, code and msg on stdout."""
        self.assertCniError(run, code)
        for key in ("cniVersion", "code", "msg"):
            self.assertIn(key, run.error, run.describe())
        self.assertIsInstance(run.error["msg"], str)
        self.assertNotEqual(run.error["msg"], "")

    def add_with_key(self, key, value):
        """An ADD through the driver with the standard config, `key` set to `value`."""
        conf = self.manifold_conf("1.0.0", self.standard_delegates())
        conf[key] = value
        self.tree.write_conf(conf)
        return self.driver("add", self.pod.path, container_id=CONTAINER)

    def test_invalid_json_is_error_6(self):
        for stdin in ('{"cniVersion": "1.0.0", "name": ', "not json at all", "\x00\xff"):
            with self.subTest(stdin=stdin):
                run = self.run_manifold("ADD", stdin, {"CNI_CONTAINERID": CONTAINER})
                self.assertErrorJson(run, ERR_DECODING)
                self.assertNothingLeft()

    def test_unknown_cni_version_is_error_1(self):
        self.write_manifold("9.9.9", self.standard_delegates())
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertCniError(add, ERR_INCOMPATIBLE_VERSION)
        self.assertNothingLeft()

    def test_missing_env_var_is_error_4(self):
        conf = self.manifold_conf("1.0.0", self.standard_delegates())
        for var in ("CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"):
            with self.subTest(missing=var):
                run = self.run_manifold("ADD", conf, {"CNI_CONTAINERID": CONTAINER}, drop=(var,))
                self.assertErrorJson(run, ERR_INVALID_ENV)
                self.assertNothingLeft()

    def test_empty_delegates_is_error_7(self):
        self.write_manifold("1.0.0", [])
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertCniError(add, ERR_INVALID_CONFIG)
        self.assertNothingLeft()

    def test_wrong_type_for_a_known_key_is_error_7_naming_the_key(self):
        for key, value in (("delegates", "bridge"), ("cniDir", 42), ("logLevel", ["debug"])):
            with self.subTest(key=key):
                add = self.add_with_key(key, value)
                self.assertCniError(add, ERR_INVALID_CONFIG)
                self.assertIn(key, add.error["msg"] + add.error.get("details", ""))
                self.assertNothingLeft()

    def test_nul_byte_in_a_path_is_error_7(self):
        # A NUL byte ("\\u0000" in the JSON) in cniDir or logFile would cut the path short where it
        # reaches the kernel: the cache or the log would go to the path before it, not the one named.
        for key, value in (("cniDir", self.tree.cni_dir + "\0/elsewhere"),
                           ("logFile", self.tree.log_file + "\0.other")):
            with self.subTest(key=key):
                add = self.add_with_key(key, value)
                self.assertCniError(add, ERR_INVALID_CONFIG)
                self.assertIn(key, add.error["msg"])
                self.assertIn("NUL", add.error["msg"])
                self.assertNothingLeft()

    def test_delegate_type_that_is_a_path_is_error_7(self):
        for bad_type in ("../x", "/usr/lib/cni/macvlan", "sub/macvlan", ".."):
            with self.subTest(type=bad_type):
                bad = self.macvlan_conf()
                bad["type"] = bad_type
                self.write_manifold("1.0.0", [self.cluster_conf(), bad])
                add = self.driver("add", self.pod.path, container_id=CONTAINER)
                self.assertCniError(add, ERR_INVALID_CONFIG)
                self.assertNothingLeft()

    def test_missing_delegate_binary_is_error_101(self):
        missing = self.fake_conf("mf-no-such-plugin")
        self.write_manifold("1.0.0", [self.cluster_conf(), missing, self.tuning_list()])
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertCniError(add, ERR_DELEGATE_FAILED)
        self.assertNothingLeft()

    def test_delegate_printing_garbage_is_error_101(self):
        self.write_manifold("1.0.0", [self.cluster_conf(), self.fake_conf("fake-garbage"),
                                      self.tuning_list()])
        add = self.driver("add", self.pod.path, container_id=CONTAINER)
        self.assertCniError(add, ERR_DELEGATE_FAILED)
        self.assertNothingLeft()

    def test_hanging_delegate_times_out_with_101_and_is_killed(self):
        pid_file = self.tree.path("hang.pid")
        hang = self.fake_conf("fake-hang", pidFile=pid_file)
        # The bound applies to each delegate on its own; 5 s leave the bridge before the hanging
        # delegate, and the hanging delegate's own start, ample time on a loaded machine.
        self.write_manifold("1.0.0", [self.cluster_conf(), hang, self.tuning_list()],
                            delegateTimeout=5)
        add = self.driver("add", self.pod.path, container_id=CONTAINER, timeout=90)
        self.assertCniError(add, ERR_DELEGATE_FAILED)
        self.assertTrue(os.path.exists(pid_file), "the hanging delegate never ran")
        with open(pid_file, encoding="utf-8") as f:
            pid = int(f.read())
        deadline = time.monotonic() + 10
        while not process_gone(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertTrue(process_gone(pid), "the hung delegate (pid %d) is still running" % pid)
        self.assertNothingLeft()

    def test_version_lists_all_seven_versions(self):
        for conf_version in ("0.1.0", "1.0.0", "1.1.0"):
            with self.subTest(cniVersion=conf_version):
                run = self.run_manifold("VERSION", {"cniVersion": conf_version})
                self.assertOk(run)
                self.assertIsInstance(run.result, dict, run.describe())
                self.assertEqual(sorted(run.result["supportedVersions"]), sorted(ALL_VERSIONS))
                self.assertIn("cniVersion", run.result)


if __name__ == "__main__":
    main()
