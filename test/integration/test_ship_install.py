"""Integration tests of `manifold install`, run against temporary directories (no namespaces).

They cover what the node installer must do on a real node: wrap a bridge conflist and a calico-like
conf (cniVersion and capabilities kept), ignore manifold's own file, write a kubeconfig that
references the token file and never contains the token, replace the binary atomically while another
process holds the old one open and is executing it, keep everything current with --watch (primary
change, token rotation, deleted output) and stop cleanly on SIGTERM, the --check readiness probe,
and the error exits. MANIFOLD_BIN names the binary under test.
"""
import errno
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import ci  # noqa: E402

MANIFOLD = os.environ.get("MANIFOLD_BIN", "")
SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOKEN = "eyJhbGciOiJSUzI1NiJ9.c2hpcC10ZXN0LXRva2VuLTQyNDI0Mg.c2lnbmF0dXJl"

BRIDGE_CONFLIST = {
    "cniVersion": "1.0.0", "name": "cbr0",
    "plugins": [
        {"type": "bridge", "bridge": "cni0", "isGateway": True,
         "ipam": {"type": "host-local", "subnet": "10.244.1.0/24"}},
        {"type": "portmap", "capabilities": {"portMappings": True}},
    ],
}

CALICO_CONF = {
    "cniVersion": "0.3.1", "name": "k8s-pod-network", "type": "calico",
    "datastore_type": "kubernetes", "mtu": 1440,
    "ipam": {"type": "calico-ipam"}, "policy": {"type": "k8s"},
    "capabilities": {"bandwidth": True},
    "kubernetes": {"kubeconfig": "/etc/cni/net.d/calico-kubeconfig"},
}


def wait_for(predicate, timeout=10.0, what="condition"):
    """Polls `predicate` until it is true; fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


class InstallTest(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        if not MANIFOLD:
            ci.skip_or_fail(self, "MANIFOLD_BIN is not set")
        self.root = tempfile.mkdtemp(prefix="manifold-install-")
        self.addCleanup(shutil.rmtree, self.root, True)
        self.bin_dir = os.path.join(self.root, "opt/cni/bin")
        self.conf_dir = os.path.join(self.root, "etc/cni/net.d")
        self.sa_dir = os.path.join(self.root, "sa")
        os.makedirs(self.conf_dir)
        os.makedirs(self.sa_dir)
        self.write(os.path.join(self.sa_dir, "token"), TOKEN)
        self.write(os.path.join(self.sa_dir, "ca.crt"), "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
        self.kube_dir = os.path.join(self.conf_dir, "manifold.d")
        self.procs = []
        self.addCleanup(self.stop_procs)

    def stop_procs(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()

    # ---- helpers ---------------------------------------------------------------------------------

    @staticmethod
    def write(path, text):
        with open(path, "w") as f:
            f.write(text)

    @staticmethod
    def read(path):
        with open(path) as f:
            return f.read()

    def env(self):
        env = dict(os.environ)
        env.pop("CNI_COMMAND", None)
        env["KUBERNETES_SERVICE_HOST"] = "10.96.0.1"
        env["KUBERNETES_SERVICE_PORT"] = "443"
        return env

    def args(self, *extra):
        return [MANIFOLD, "install", "--bin-dir", self.bin_dir, "--conf-dir", self.conf_dir,
                "--service-account-dir", self.sa_dir] + list(extra)

    def install(self, *extra, expect=0):
        r = subprocess.run(self.args(*extra), env=self.env(), capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, expect, "install %s: stdout=%r stderr=%r" % (extra, r.stdout, r.stderr))
        return r

    def put_primary(self, name, conf):
        self.write(os.path.join(self.conf_dir, name), json.dumps(conf, indent=2))

    def generated(self, name):
        return json.loads(self.read(os.path.join(self.conf_dir, name)))

    def assert_no_token_anywhere(self, *paths):
        for path in paths:
            self.assertNotIn(TOKEN, self.read(path), path)

    # ---- tests -----------------------------------------------------------------------------------

    def test_wraps_bridge_conflist_and_writes_kubeconfig(self):
        self.put_primary("10-bridge.conflist", BRIDGE_CONFLIST)
        self.put_primary("99-loopback.conf", {"cniVersion": "1.0.0", "name": "lo", "type": "loopback"})
        self.install()

        binary = os.path.join(self.bin_dir, "manifold")
        with open(binary, "rb") as a, open(MANIFOLD, "rb") as b:
            self.assertEqual(a.read(), b.read())
        self.assertEqual(stat.S_IMODE(os.stat(binary).st_mode), 0o755)

        conf = self.generated("00-manifold.conflist")
        self.assertFalse(os.path.exists(os.path.join(self.conf_dir, "00-manifold.conf")))
        self.assertEqual(conf["cniVersion"], "1.0.0")
        self.assertEqual(conf["name"], "manifold-cni-network")
        plugin = conf["plugins"][0]
        self.assertEqual(plugin["type"], "manifold")
        self.assertEqual(plugin["delegates"], [BRIDGE_CONFLIST])
        self.assertEqual(plugin["capabilities"], {"portMappings": True})
        kubeconfig = os.path.join(self.kube_dir, "manifold.kubeconfig")
        self.assertEqual(plugin["kubeconfig"], kubeconfig)

        # JSON (YAML's subset: kubectl reads it as any kubeconfig; manifold without a YAML scanner).
        config = json.loads(self.read(kubeconfig))
        self.assertEqual(config["current-context"], "manifold-context")
        self.assertEqual(config["clusters"][0]["cluster"],
                         {"server": "https://10.96.0.1:443",
                          "certificate-authority": os.path.join(self.kube_dir, "ca.crt")})
        self.assertEqual(config["users"][0]["user"], {"tokenFile": os.path.join(self.kube_dir, "token")})
        self.assert_no_token_anywhere(kubeconfig, os.path.join(self.conf_dir, "00-manifold.conflist"))
        self.assertEqual(self.read(os.path.join(self.kube_dir, "token")), TOKEN)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.kube_dir, "token")).st_mode), 0o600)
        self.assertEqual(stat.S_IMODE(os.stat(kubeconfig).st_mode), 0o600)
        self.assertEqual(stat.S_IMODE(os.stat(self.kube_dir).st_mode), 0o700)

        r = subprocess.run([MANIFOLD, "validate", os.path.join(self.conf_dir, "00-manifold.conflist")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout)

    def test_wraps_calico_like_conf_keeping_version_and_capabilities(self):
        self.put_primary("10-calico.conf", CALICO_CONF)
        self.install("--name", "", "--reference-service-account")
        conf = self.generated("00-manifold.conf")
        self.assertEqual(conf["cniVersion"], "0.3.1")
        self.assertEqual(conf["name"], "k8s-pod-network")
        self.assertEqual(conf["type"], "manifold")
        self.assertEqual(conf["capabilities"], {"bandwidth": True})
        self.assertEqual(conf["delegates"], [CALICO_CONF])
        config = json.loads(self.read(os.path.join(self.kube_dir, "manifold.kubeconfig")))
        self.assertEqual(config["users"][0]["user"], {"tokenFile": os.path.join(self.sa_dir, "token")})
        self.assertFalse(os.path.exists(os.path.join(self.kube_dir, "token")))
        self.assert_no_token_anywhere(os.path.join(self.kube_dir, "manifold.kubeconfig"))

    def test_ignores_its_own_files_and_is_idempotent(self):
        self.put_primary("00-manifold.conf", {"cniVersion": "0.3.1", "name": "stale", "type": "manifold",
                                              "delegates": [{"type": "stale"}]})
        self.put_primary("00-multus.conf", {"cniVersion": "0.3.1", "name": "multus", "type": "multus",
                                            "delegates": [{"type": "old"}]})
        self.put_primary("10-calico.conf", CALICO_CONF)
        self.install()
        conf = self.generated("00-manifold.conf")
        self.assertEqual(conf["delegates"], [CALICO_CONF])
        path = os.path.join(self.conf_dir, "00-manifold.conf")
        before = os.stat(path)
        bin_before = os.stat(os.path.join(self.bin_dir, "manifold"))
        self.install()
        after = os.stat(path)
        self.assertEqual((before.st_ino, before.st_mtime_ns), (after.st_ino, after.st_mtime_ns))
        self.assertEqual(bin_before.st_ino, os.stat(os.path.join(self.bin_dir, "manifold")).st_ino)
        # Switching the primary to a 1.0.0 conflist replaces the .conf with a .conflist.
        os.unlink(os.path.join(self.conf_dir, "10-calico.conf"))
        self.put_primary("10-bridge.conflist", BRIDGE_CONFLIST)
        self.install()
        self.assertFalse(os.path.exists(path))
        self.assertEqual(self.generated("00-manifold.conflist")["plugins"][0]["delegates"], [BRIDGE_CONFLIST])

    def test_keeps_the_network_name_of_a_replaced_multus_config(self):
        """A node moving from Multus: the generated config takes Multus's network name (the
        runtime's result cache and manifold's cache key attachments by it) and keeps it after
        Multus's config is gone; an explicit --name still wins."""
        self.put_primary("00-multus.conflist", {"cniVersion": "1.0.0", "name": "multus-cni-network",
                                                "plugins": [{"type": "multus", "delegates": [
                                                    BRIDGE_CONFLIST]}]})
        self.put_primary("10-bridge.conflist", BRIDGE_CONFLIST)
        self.install()
        conf = self.generated("00-manifold.conflist")
        self.assertEqual(conf["name"], "multus-cni-network")
        self.assertEqual(conf["plugins"][0]["delegates"], [BRIDGE_CONFLIST])
        os.unlink(os.path.join(self.conf_dir, "00-multus.conflist"))
        self.install()
        self.assertEqual(self.generated("00-manifold.conflist")["name"], "multus-cni-network")
        self.install("--name", "chosen")
        self.assertEqual(self.generated("00-manifold.conflist")["name"], "chosen")
        os.unlink(os.path.join(self.conf_dir, "00-manifold.conflist"))
        self.install()
        self.assertEqual(self.generated("00-manifold.conflist")["name"], "manifold-cni-network")

    def test_binary_is_replaced_while_open_and_executing(self):
        os.makedirs(self.bin_dir)
        target = os.path.join(self.bin_dir, "manifold")
        shutil.copy2("/bin/sleep", target)
        old_ino = os.stat(target).st_ino
        runner = subprocess.Popen([target, "60"])
        self.procs.append(runner)
        holder = open(target, "rb")
        self.addCleanup(holder.close)
        wait_for(lambda: os.path.exists("/proc/%d/exe" % runner.pid), what="the old binary to run")
        # Writing into the running file is impossible: this is what the atomic rename avoids.
        with self.assertRaises(OSError) as ctx:
            open(target, "r+b")
        self.assertEqual(ctx.exception.errno, errno.ETXTBSY)

        self.put_primary("10-bridge.conflist", BRIDGE_CONFLIST)
        self.install("--bin-source", MANIFOLD)

        self.assertNotEqual(os.stat(target).st_ino, old_ino)
        with open(target, "rb") as new, open(MANIFOLD, "rb") as src:
            self.assertEqual(new.read(), src.read())
        with open("/bin/sleep", "rb") as sleep_bin:
            self.assertEqual(holder.read(), sleep_bin.read())  # the holder still sees the old file
        self.assertIsNone(runner.poll())  # and the old process is still running
        out = subprocess.run([target, "version"], capture_output=True, text=True, env=self.env())
        self.assertEqual(out.returncode, 0)
        self.assertTrue(out.stdout.startswith("manifold "))
        leftovers = [n for n in os.listdir(self.bin_dir) if n != "manifold"]
        self.assertEqual(leftovers, [])

    def test_watch_rewrites_on_change_and_stops_on_sigterm(self):
        self.put_primary("10-bridge.conflist", BRIDGE_CONFLIST)
        proc = subprocess.Popen(self.args("--watch", "--poll-interval", "100", "--cleanup-on-exit"),
                                env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(proc)
        out_path = os.path.join(self.conf_dir, "00-manifold.conflist")
        wait_for(lambda: os.path.exists(out_path), what="the first config")

        changed = dict(BRIDGE_CONFLIST, name="cbr1")
        self.put_primary("10-bridge.conflist", changed)
        wait_for(lambda: self.generated("00-manifold.conflist")["plugins"][0]["delegates"] == [changed],
                 what="the rewrite after a primary change")

        rotated = TOKEN + "-rotated"
        self.write(os.path.join(self.sa_dir, "token"), rotated)
        token_copy = os.path.join(self.kube_dir, "token")
        wait_for(lambda: self.read(token_copy) == rotated, what="the token copy to follow a rotation")

        os.unlink(out_path)
        wait_for(lambda: os.path.exists(out_path), what="the deleted config to be rewritten")

        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 0, err)
        self.assertFalse(os.path.exists(out_path))  # --cleanup-on-exit
        self.assertNotIn(TOKEN, err)

    def test_watch_is_bounded_by_iterations_and_waits_for_a_primary(self):
        proc = subprocess.Popen(self.args("--watch", "--poll-interval", "100", "--watch-iterations", "100"),
                                env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(proc)
        time.sleep(0.3)
        self.assertFalse(os.path.exists(os.path.join(self.conf_dir, "00-manifold.conf")))
        self.put_primary("10-calico.conf", CALICO_CONF)
        wait_for(lambda: os.path.exists(os.path.join(self.conf_dir, "00-manifold.conf")),
                 what="the config once a primary appears")
        _, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 0, err)
        self.assertTrue(os.path.exists(os.path.join(self.conf_dir, "00-manifold.conf")))

    def test_check_probe(self):
        r = self.install("--check", expect=1)
        self.assertIn("not ready", r.stdout)
        self.put_primary("10-bridge.conflist", BRIDGE_CONFLIST)
        self.install()
        r = self.install("--check")
        self.assertIn("ready: ", r.stdout)
        os.unlink(os.path.join(self.bin_dir, "manifold"))
        r = self.install("--check", expect=1)
        self.assertIn("missing or not executable", r.stdout)

    def test_errors_and_standalone_mode(self):
        r = self.install(expect=1)
        self.assertIn("no primary CNI config", r.stderr)
        self.put_primary("10-calico.conf", CALICO_CONF)
        r = self.install("--cni-version", "1.0.0", expect=1)
        self.assertIn("--force-cni-version", r.stderr)
        self.install("--cni-version", "1.0.0", "--force-cni-version")
        self.assertEqual(self.generated("00-manifold.conflist")["cniVersion"], "1.0.0")
        os.unlink(os.path.join(self.sa_dir, "token"))
        r = self.install(expect=1)
        self.assertIn("no service-account token", r.stderr)
        self.install("--no-kubeconfig", "--skip-binary")
        self.assertNotIn("kubeconfig", self.generated("00-manifold.conf"))
        self.assertFalse(os.path.exists(os.path.join(self.conf_dir, "00-manifold.conflist")))
        r = subprocess.run(self.args("--poll-interval", "1"), env=self.env(), capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        r = subprocess.run(self.args("--no-such-flag"), env=self.env(), capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)

    def test_template_file_matches_the_built_in_template(self):
        self.put_primary("10-bridge.conflist", BRIDGE_CONFLIST)
        self.install()
        built_in = self.read(os.path.join(self.conf_dir, "00-manifold.conflist"))
        os.unlink(os.path.join(self.conf_dir, "00-manifold.conflist"))
        self.install("--config-template", os.path.join(SOURCE_DIR, "conf", "00-manifold.conf.template"))
        self.assertEqual(self.read(os.path.join(self.conf_dir, "00-manifold.conflist")), built_in)


if __name__ == "__main__":
    ci.run_unittest()
