"""Integration tests of `manifold validate`: every example and deployment file must pass, broken
configs and manifests (including copies of the shipped RBAC and DaemonSet with what hot-plug needs
taken out) must be reported at the right JSON paths with exit code 1, and usage errors exit with 2.
No namespaces or root needed. MANIFOLD_BIN names the binary under test.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from harness import ci  # noqa: E402

MANIFOLD = os.environ.get("MANIFOLD_BIN", "")
SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONFIG_PATTERNS = ("*.yaml", "*.yml", "*.json", "*.conf", "*.conflist")


def example_files():
    files = []
    for base in ("examples", "conf"):
        for pattern in CONFIG_PATTERNS:
            files += glob.glob(os.path.join(SOURCE_DIR, base, "**", pattern), recursive=True)
    return sorted(files)


class ValidateTest(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        if not MANIFOLD:
            ci.skip_or_fail(self, "MANIFOLD_BIN is not set")
        self.dir = tempfile.mkdtemp(prefix="manifold-validate-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def validate(self, *args):
        env = dict(os.environ)
        env.pop("CNI_COMMAND", None)
        return subprocess.run([MANIFOLD, "validate"] + list(args), capture_output=True, text=True, env=env,
                              timeout=60)

    def file(self, name, content):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(content if isinstance(content, str) else json.dumps(content))
        return path

    def test_every_example_and_deployment_file_is_valid(self):
        files = example_files()
        names = {os.path.relpath(f, SOURCE_DIR) for f in files}
        for required in ("examples/nad-bridge.yaml", "examples/nad-macvlan.yaml", "examples/nad-ipvlan.yaml",
                         "examples/nad-host-device.yaml", "examples/nad-macvlan-tuning.yaml",
                         "examples/pod-comma-form.yaml", "examples/pod-json-form.yaml",
                         "examples/pod-meshed-data-network.yaml", "examples/standalone/10-manifold.conflist"):
            self.assertIn(required, names)
        for f in files:
            with self.subTest(file=os.path.relpath(f, SOURCE_DIR)):
                r = self.validate(f)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertNotIn("warning", r.stdout)
        nads = [f for f in files if os.path.basename(f).startswith("nad-")]
        r = self.validate("--nad", *nads)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_shipped_deployment_validates_clean(self):
        files = [os.path.join(SOURCE_DIR, "conf", name) for name in
                 ("rbac.yaml", "manifold-daemonset.yaml", "network-attachment-definition-crd.yaml")]
        r = self.validate(*files)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rbac, daemonset, crd = files
        self.assertEqual(r.stdout.splitlines(), [
            rbac + " [ServiceAccount kube-system/manifold]: skipped (kind not checked)",
            rbac + " [ClusterRole manifold]: ok",
            rbac + " [ClusterRoleBinding manifold]: skipped (kind not checked)",
            daemonset + " [DaemonSet kube-system/manifold]: ok",
            crd + " [CustomResourceDefinition network-attachment-definitions.k8s.cni.cncf.io]: "
                  "skipped (kind not checked)",
        ])

    def shipped_copy(self, name, old, new):
        """A copy of conf/<name> with `old` (which must occur) replaced by `new`."""
        with open(os.path.join(SOURCE_DIR, "conf", name)) as f:
            text = f.read()
        self.assertIn(old, text)
        return self.file(name, text.replace(old, new))

    def test_shipped_rbac_without_watch_is_reported(self):
        path = self.shipped_copy("rbac.yaml", 'resources: ["pods"]\n    verbs: ["get", "list", "watch"]',
                                 'resources: ["pods"]\n    verbs: ["get", "list"]')
        r = self.validate(path)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(path + " [ClusterRole manifold]: $.rules: pods watch: not granted; "
                      "needed for the node agent's pod watch (hot-plug)", r.stdout.splitlines())

    def test_shipped_rbac_without_nad_list_warns(self):
        # The CNI binary needs get only; the node agent's NAD cache lists (lookups from memory).
        path = self.shipped_copy("rbac.yaml",
                                 'resources: ["network-attachment-definitions"]\n    verbs: ["get", "list", "watch"]',
                                 'resources: ["network-attachment-definitions"]\n    verbs: ["get", "watch"]')
        r = self.validate(path)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(path + " [ClusterRole manifold]: warning: $.rules: network-attachment-definitions list: not "
                      "granted; needed for the node agent's NAD cache (CNI calls' lookups from memory)",
                      r.stdout.splitlines())

    def test_shipped_rbac_granting_pod_update_is_flagged(self):
        # Multus's role grants update on pods; every node holds the token, so that is any pod's spec.
        path = self.shipped_copy("rbac.yaml", 'resources: ["pods"]\n    verbs: ["get", "list", "watch"]',
                                 'resources: ["pods"]\n    verbs: ["get", "list", "watch", "update"]')
        r = self.validate(path)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(path + " [ClusterRole manifold]: warning: $.rules[0]: grants more than manifold needs: "
                      "write access to pods (only pods/status update is needed)", r.stdout.splitlines())

    def test_shipped_daemonset_without_propagation_is_reported(self):
        path = self.shipped_copy("manifold-daemonset.yaml", "mountPropagation: HostToContainer", "readOnly: false")
        r = self.validate(path)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        errors = [line for line in r.stdout.splitlines() if "mountPropagation" in line]
        self.assertTrue(errors, r.stdout)
        for line in errors:
            self.assertTrue(line.startswith(path + " [DaemonSet kube-system/manifold]: "
                                            "$.spec.template.spec.containers[0].volumeMounts["), line)
            self.assertTrue(line.endswith("].mountPropagation: must be HostToContainer (or Bidirectional): without "
                                          "it, network namespaces created after the agent started are invisible "
                                          "to it"), line)

    def test_broken_meta_config_reports_every_path(self):
        path = self.file("broken.conf", {
            "cniVersion": "0.4.0", "name": "broken", "type": "manifold", "logLevel": "chatty",
            "logOptions": {"maxBackups": "five"},
            "delegates": [{"name": "a", "type": "bridge"}, {"name": "b", "type": ""},
                          {"name": "c", "plugins": [{"type": "macvlan"}, {"ipam": {}}]}],
        })
        r = self.validate(path)
        self.assertEqual(r.returncode, 1, r.stdout)
        lines = r.stdout.splitlines()
        self.assertEqual(lines, [
            path + ": $.logLevel: must be one of panic, error, verbose, debug",
            path + ": $.logOptions.maxBackups: must be an integer",
            path + ": $.delegates[1].type: must be a non-empty string",
            path + ": $.delegates[2].plugins[1].type: is required",
        ])

    def test_broken_json_and_broken_nads(self):
        bad_json = self.file("bad.conflist", '{"cniVersion": "1.0.0", "plugins": [')
        r = self.validate(bad_json)
        self.assertEqual(r.returncode, 1)
        self.assertIn(bad_json + ": $: not valid JSON (syntax error at byte", r.stdout)

        nad = self.file("nads.yaml", """apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata:
  name: good
spec:
  config: '{"cniVersion":"1.0.0","name":"good","type":"macvlan","master":"eth1"}'
---
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata:
  name: bad
  namespace: default
spec:
  config: '{"cniVersion":"1.0.0","name":"bad","plugins":[{"type":"macvlan"},{"type":"../../bin/sh"}]}'
""")
        r = self.validate("--nad", nad)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout.splitlines(), [
            nad + " [NetworkAttachmentDefinition good]: ok",
            nad + " [NetworkAttachmentDefinition default/bad]: $.spec.config.plugins[1].type: "
                  "must be a plugin file name, not a path (no '/', '.' or '..')",
        ])

        pod = self.file("pod.yaml", """apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations:
    k8s.v1.cni.cncf.io/networks: 'a/b/c@net1'
""")
        r = self.validate(pod)
        self.assertEqual(r.returncode, 1)
        self.assertIn(pod + ' [Pod p]: $.metadata.annotations["k8s.v1.cni.cncf.io/networks"]: ', r.stdout)
        r = self.validate("--nad", pod)
        self.assertEqual(r.returncode, 1)
        self.assertIn('$.kind: must be "NetworkAttachmentDefinition" (got "Pod")', r.stdout)

    def test_mesh_keys_are_checked_one_by_one(self):
        nad = self.file("mesh.yaml", """apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata:
  name: data
spec:
  config: '{"cniVersion":"1.0.0","name":"data","type":"macvlan","mesh":{"enabled":true,"inboundPort":70000,"proxyUID":"root","colour":"red"}}'
""")
        r = self.validate(nad)
        self.assertEqual(r.returncode, 1)
        paths = [line.split(": ")[1] for line in r.stdout.splitlines()]
        self.assertEqual(paths, ["$.spec.config.mesh.inboundPort", "$.spec.config.mesh.proxyUID",
                                 "$.spec.config.mesh.colour"])
        conf = self.file("meta.conf", {"cniVersion": "1.0.0", "name": "meta", "type": "manifold",
                                       "mesh": {"lockWaitSeconds": 0},
                                       "delegates": [{"name": "n", "type": "bridge"}]})
        r = self.validate(conf)
        self.assertEqual(r.returncode, 1)
        self.assertTrue(r.stdout.startswith(conf + ": $.mesh.lockWaitSeconds: "), r.stdout)

    def test_a_meta_config_without_a_name_is_an_error(self):
        conf = self.file("nameless.conf", {"cniVersion": "1.0.0", "type": "manifold",
                                           "delegates": [{"name": "n", "type": "bridge"}]})
        r = self.validate(conf)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout.splitlines(),
                         [conf + ": $.name: must be a non-empty string (the network name; CNI requires it)"])

    def test_quiet_and_usage_errors(self):
        good = self.file("good.conf", {"cniVersion": "1.0.0", "name": "good", "type": "manifold",
                                       "delegates": [{"name": "n", "type": "bridge"}]})
        r = self.validate("-q", good)
        self.assertEqual((r.returncode, r.stdout), (0, ""))
        self.assertEqual(self.validate().returncode, 2)
        self.assertEqual(self.validate("--no-such-flag", good).returncode, 2)
        r = self.validate(os.path.join(self.dir, "missing.conf"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("missing.conf", r.stderr)
        r = self.validate("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--nad", r.stdout)


if __name__ == "__main__":
    ci.run_unittest()
