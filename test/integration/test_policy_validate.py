"""`manifold validate` knows the `multiNetworkPolicy` key: a config enabling enforcement passes, every
bad field is reported at its JSON path (exit 1), and a config without the key is unchanged. No
namespaces or root needed. MANIFOLD_BIN names the binary under test.
"""
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
BASE = {"cniVersion": "1.0.0", "name": "multus-cni-network", "type": "manifold",
        "delegates": [{"cniVersion": "1.0.0", "name": "cluster", "type": "bridge"}]}


class PolicyValidate(unittest.TestCase):
    def setUp(self):
        if not MANIFOLD:
            ci.skip_or_fail(self, "MANIFOLD_BIN is not set")
        self.dir = tempfile.mkdtemp(prefix="manifold-policy-validate-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def validate(self, key):
        conf = dict(BASE)
        if key is not None:
            conf["multiNetworkPolicy"] = key
        path = os.path.join(self.dir, "00-manifold.conf")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(conf, f)
        env = {k: v for k, v in os.environ.items() if k != "CNI_COMMAND"}
        r = subprocess.run([MANIFOLD, "validate", path], capture_output=True, text=True, env=env, timeout=60)
        return r.returncode, [line.split(": ", 1)[1] for line in r.stdout.splitlines()]

    def test_good_configs_pass(self):
        for key in (None, {"enabled": True}, {"enabled": True, "iptablesMode": "legacy", "lockWaitSeconds": 10,
                                              "denyAction": "reject"}, {"enabled": False}):
            with self.subTest(key=key):
                self.assertEqual(self.validate(key), (0, ["ok"]))

    def test_every_bad_field_is_reported(self):
        rc, lines = self.validate({"enabled": "yes", "iptablesMode": "iptables", "lockWaitSeconds": 0,
                                   "denyAction": "DROP", "enable": True})
        self.assertEqual(rc, 1)
        self.assertEqual(lines, [
            "$.multiNetworkPolicy.enable: unknown key",
            '$.multiNetworkPolicy.enabled: "yes" is not a boolean',
            '$.multiNetworkPolicy.iptablesMode: "iptables" is not one of "auto", "legacy", "nft"',
            "$.multiNetworkPolicy.lockWaitSeconds: 0 is out of range (1-600)",
            '$.multiNetworkPolicy.denyAction: "DROP" is not one of "drop", "reject"'])
        self.assertEqual(self.validate(["enabled"]), (1, ["$.multiNetworkPolicy: must be an object"]))


if __name__ == "__main__":
    ci.run_unittest()
