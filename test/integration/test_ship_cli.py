#!/usr/bin/env python3
"""Integration tests of the operator side after real CNI calls: `manifold inspect` and `manifold gc`
on the cache a real ADD wrote, log rotation at the configured logOptions.maxSize across CNI
processes (with gzip), an unwritable logFile that must not break ADD, and no secret in a debug log.
They run in real namespaces through the libcni driver, like the core tests.
"""
import gzip
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import ManifoldTestCase, main  # noqa: E402

CONTAINER = "ship0123456789abcdef0123456789abcdef"
TOKEN = "eyJhbGciOiJSUzI1NiJ9.c2hpcC1jbGktdG9rZW4tOTk5OQ.c2ln"


class CliAfterAddTest(ManifoldTestCase):

    def cli(self, *args, expect=0):
        """Runs a manifold command in the node namespace, where the delegates' links live (as on a node)."""
        env = dict(os.environ)
        env.pop("CNI_COMMAND", None)
        argv = ["ip", "netns", "exec", self.node.name, self.manifold_bin] + list(args)
        r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(r.returncode, expect, "%s: stdout=%r stderr=%r" % (args, r.stdout, r.stderr))
        return r

    def add(self, container_id=CONTAINER, pod=None):
        run = self.driver("add", (pod or self.pod).path, container_id=container_id)
        self.assertOk(run)
        return run.result

    def test_inspect_shows_what_add_cached(self):
        self.write_manifold("1.0.0", self.standard_delegates())
        self.add()
        table = self.cli("inspect", "--cni-dir", self.tree.cni_dir).stdout
        self.assertIn(CONTAINER[:12], table)
        self.assertIn("netns present", table)
        self.assertIn("eth0,net1,net2", table)

        view = json.loads(self.cli("inspect", CONTAINER, "--cni-dir", self.tree.cni_dir, "--json").stdout)
        self.assertEqual(view["containerId"], CONTAINER)
        self.assertEqual(view["netns"], self.pod.path)
        self.assertTrue(view["netnsExists"])
        self.assertEqual([a["ifname"] for a in view["attachments"]], ["eth0", "net1", "net2"])
        self.assertTrue(view["attachments"][0]["clusterNetwork"])
        for a in view["attachments"]:
            self.assertEqual([ip.split("/")[0] for ip in a["ips"]],
                             [ip.split("/")[0] for ip in self.pod.addresses(a["ifname"])], a)
            self.assertIsInstance(a["config"], dict)
            self.assertIsInstance(a["result"], dict)

        text = self.cli("inspect", CONTAINER[:10], "--cni-dir", self.tree.cni_dir).stdout
        self.assertIn("container:  " + CONTAINER, text)
        self.assertIn("IFNAME", text)
        self.cli("inspect", "nosuchcontainer", "--cni-dir", self.tree.cni_dir, expect=1)

        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertIn("no containers in", self.cli("inspect", "--cni-dir", self.tree.cni_dir).stdout)

    def test_gc_releases_then_removes_entries_whose_netns_is_gone(self):
        self.write_manifold("1.0.0", [self.cluster_conf(), self.macvlan_conf()])
        other = self.new_netns()
        self.add()
        self.add("keep" + CONTAINER, pod=other)
        self.pod.delete()
        self.assertEqual(len(self.tree.reservations()), 2)

        # The plan, and nothing changes.
        r = self.cli("gc", "--dry-run", "--cni-dir", self.tree.cni_dir)
        self.assertIn("would DEL cluster (eth0), macnet (net1) of %s/manifold-net/eth0 without a namespace and "
                      "remove it" % CONTAINER, r.stdout)
        self.assertIn("would collect 1, kept 1 cache entry", r.stdout)
        self.assertEqual(len(self.tree.cache_files()), 2)
        self.assertEqual(len(self.tree.reservations()), 2)

        # The DEL releases the gone container's IP reservation before its entry goes.
        r = self.cli("gc", "--cni-dir", self.tree.cni_dir, "--bin-dir", self.tree.bin_dir)
        self.assertIn("removed %s/manifold-net/eth0" % CONTAINER, r.stdout)
        self.assertIn("released cluster (eth0), macnet (net1)", r.stdout)
        self.assertNotIn("keep" + CONTAINER + "/", r.stdout)
        self.assertEqual(len(self.tree.reservations()), 1)
        ids = json.loads(self.cli("inspect", "--json", "--cni-dir", self.tree.cni_dir).stdout)
        self.assertEqual([e["containerId"] for e in ids], ["keep" + CONTAINER])
        self.assertOk(self.driver("del", other.path, container_id="keep" + CONTAINER))
        # (libcni keeps its own result of the gone container: only the runtime's DEL removes that.)
        self.assertEqual(self.tree.reservations(), [])
        self.assertEqual(self.tree.cache_files(), [])
        self.assertPodEmpty(other)

    def test_gc_keeps_an_entry_whose_del_failed(self):
        self.write_manifold("1.0.0", [self.cluster_conf(), self.fake_conf("fake-fail", failOn=["DEL"])])
        self.add()
        self.pod.delete()
        r = self.cli("gc", "--cni-dir", self.tree.cni_dir, expect=1)
        self.assertIn("kept %s/manifold-net/eth0: DEL of fake-fail (net1) failed" % CONTAINER, r.stdout)
        # The cluster network's DEL went through (its address is free); the failed one stays cached.
        self.assertEqual(self.tree.reservations(), [])
        view = json.loads(self.cli("inspect", CONTAINER, "--json", "--cni-dir", self.tree.cni_dir).stdout)
        self.assertEqual([a["ifname"] for a in view["attachments"]], ["net1"])

    def test_log_rotates_at_max_size_across_cni_calls(self):
        filler = "x" * 1023 + "\n"
        with open(self.tree.log_file, "w") as f:
            f.write(filler * 1024)  # exactly 1 MiB: the next line crosses maxSize
        self.write_manifold("1.0.0", [self.cluster_conf()],
                            logOptions={"maxSize": 1, "maxBackups": 1, "maxAge": 0, "compress": True})
        self.add()
        # The backup is compressed by a detached process after the call (not inside it).
        log_dir = os.path.dirname(self.tree.log_file)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            names = os.listdir(log_dir)
            backups = sorted(n for n in names if n.startswith("manifold-") and n.endswith(".log.gz"))
            if backups and not any(n.startswith("manifold-") and n.endswith((".log", ".tmp")) for n in names):
                break
            time.sleep(0.05)
        self.assertEqual(len(backups), 1, os.listdir(log_dir))
        with gzip.open(os.path.join(log_dir, backups[0]), "rt") as f:
            self.assertEqual(f.read(), filler * 1024)
        self.assertLess(os.path.getsize(self.tree.log_file), 1 << 20)
        with open(self.tree.log_file) as f:
            self.assertRegex(f.readline(), r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[\w+\] ")
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))

    def test_unwritable_log_file_does_not_break_add(self):
        self.write_manifold("1.0.0", [self.cluster_conf()], logFile="/nonexistent-dir/manifold.log")
        self.add()
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        self.assertNothingLeft()

    def test_debug_log_holds_no_secret(self):
        cluster = self.cluster_conf()
        cluster["token"] = TOKEN
        cluster["auth"] = {"password": TOKEN, "client-key-data": TOKEN}
        self.write_manifold("1.0.0", [cluster])
        self.add()
        self.assertOk(self.driver("del", self.pod.path, container_id=CONTAINER))
        with open(self.tree.log_file) as f:
            log = f.read()
        self.assertIn("[debug]", log)
        self.assertIn("<redacted>", log)  # the delegate's config is shown, with its secrets redacted
        self.assertNotIn(TOKEN, log)


if __name__ == "__main__":
    main()
