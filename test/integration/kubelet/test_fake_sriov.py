"""Tests of the fake-sriov delegate (test/integration/plugins/fake-sriov), run directly as CNI.

Each test builds a "node" namespace holding a veth pair (the stand-in for a VF) and a "pod"
namespace with the integration harness, then runs fake-sriov inside the node namespace with the
CNI environment variables and a config on stdin, as manifold would: ADD must move the link into
the pod renamed to CNI_IFNAME (netns given as /var/run/netns/<name> or /proc/<pid>/ns/net), CHECK
must find it, DEL must move it back under its original name and stay idempotent; the error codes,
the record lines (with deviceInfoAtAdd) and the state files are checked too. Needs root: it is
skipped otherwise, but fails under CI=true (harness/ci.py). CTest runs it with the double's own
tests ("integration: podresources_double"). Run: python3 -m unittest -v test_fake_sriov (in this
directory).
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from harness import ci  # noqa: E402
from harness.netns import Netns, add_veth, remove_stale_namespaces  # noqa: E402
from harness.runner import base_env  # noqa: E402

FAKE_SRIOV = os.path.join(os.path.dirname(HERE), "plugins", "fake-sriov")
VF, VF_PEER = "mfvf0", "mfvf0p"
CID = "c0ffee0123456789"
GUARD = 60  # seconds: only ever ends a broken test


class FakeSriovTest(unittest.TestCase):
    """A node namespace with the VF stand-in, a pod namespace, a temporary directory."""

    maxDiff = None

    @classmethod
    def setUpClass(cls):
        remove_stale_namespaces()

    def setUp(self):
        if os.geteuid() != 0:
            ci.skip_or_fail(self, "needs root (network namespaces)")
        tmp = tempfile.TemporaryDirectory(prefix="fake-sriov-")
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name
        self.node = Netns().__enter__()
        self.addCleanup(self.node.delete)
        self.pod = Netns().__enter__()
        self.addCleanup(self.pod.delete)
        add_veth(self.node, VF, VF_PEER)
        self.vf_mac = self.node.mac(VF)
        self.record_file = os.path.join(self.dir, "record.jsonl")

    def conf(self, **keys):
        """A fake-sriov config recording into this test's file, its state in this test's dir."""
        conf = {"cniVersion": "1.0.0", "name": "sriov-net", "type": "fake-sriov",
                "deviceID": VF, "pciBusID": VF, "stateDir": os.path.join(self.dir, "state"),
                "recordFile": self.record_file}
        conf.update(keys)
        return {k: v for k, v in conf.items() if v is not None}

    def cni(self, command, conf, netns=None, ifname="net1"):
        """Runs fake-sriov in the node namespace; returns (exit status, parsed stdout or None)."""
        env = {"PATH": base_env()["PATH"],
               "CNI_COMMAND": command, "CNI_CONTAINERID": CID, "CNI_IFNAME": ifname,
               "CNI_NETNS": self.pod.path if netns is None else netns,
               "CNI_PATH": os.path.dirname(FAKE_SRIOV)}
        proc = subprocess.run(["ip", "netns", "exec", self.node.name, FAKE_SRIOV],
                              input=json.dumps(conf).encode(), env=env, capture_output=True,
                              timeout=GUARD)
        out = proc.stdout.decode().strip()
        return proc.returncode, json.loads(out) if out else None

    def records(self):
        """The record lines of this test."""
        with open(self.record_file, encoding="utf-8") as f:
            return [json.loads(line) for line in f]

    def state_files(self):
        """The names of the state files."""
        state_dir = os.path.join(self.dir, "state")
        return sorted(os.listdir(state_dir)) if os.path.isdir(state_dir) else []

    def assert_moved_in(self, ifname="net1"):
        """The VF is in the pod as ifname, up, and gone from the node."""
        self.assertNotIn(VF, self.node.link_names())
        link = self.pod.link(ifname)
        self.assertIsNotNone(link)
        self.assertEqual(link["address"], self.vf_mac)
        self.assertIn("UP", link["flags"])

    def assert_moved_back(self, ifname="net1"):
        """The VF is back in the node under its own name, gone from the pod."""
        self.assertEqual(self.node.mac(VF), self.vf_mac)
        self.assertIsNone(self.pod.link(ifname))

    def start_holder(self):
        """A process inside the pod namespace; returns its /proc/<pid>/ns/net path."""
        holder = subprocess.Popen(["ip", "netns", "exec", self.pod.name, "sh", "-c",
                                   "echo ready; exec sleep %d" % GUARD], stdout=subprocess.PIPE)
        self.addCleanup(holder.wait)
        self.addCleanup(holder.kill)
        self.assertEqual(holder.stdout.readline(), b"ready\n")  # it has entered the namespace
        holder.stdout.close()
        return "/proc/%d/ns/net" % holder.pid


class LifecycleTest(FakeSriovTest):
    def test_add_check_del_moves_the_link_in_and_back(self):
        code, result = self.cni("ADD", self.conf(address="192.0.2.5/24"))
        self.assertEqual(code, 0, result)
        self.assertEqual(result, {
            "cniVersion": "1.0.0", "dns": {},
            "interfaces": [{"name": "net1", "mac": self.vf_mac, "sandbox": self.pod.path}],
            "ips": [{"address": "192.0.2.5/24", "interface": 0}]})
        self.assert_moved_in()
        self.assertEqual(self.pod.addresses("net1"), ["192.0.2.5/24"])
        self.assertEqual(self.state_files(), ["fake-sriov-%s-net1.json" % CID])
        self.assertEqual(self.cni("CHECK", self.conf()), (0, None))
        self.assertEqual(self.cni("DEL", self.conf()), (0, None))
        self.assert_moved_back()
        self.assertEqual(self.state_files(), [])
        self.assertEqual(self.cni("DEL", self.conf()), (0, None))  # idempotent
        self.assertEqual([r["command"] for r in self.records()], ["ADD", "CHECK", "DEL", "DEL"])

    def test_proc_pid_netns_and_runtime_config_device_id(self):
        netns = self.start_holder()
        conf = self.conf(deviceID=None, pciBusID=None, runtimeConfig={"deviceID": VF})
        code, result = self.cni("ADD", conf, netns=netns, ifname="eth1")
        self.assertEqual(code, 0, result)
        self.assert_moved_in("eth1")
        self.assertEqual(result["interfaces"][0]["sandbox"], netns)
        self.assertEqual(self.cni("CHECK", conf, netns=netns, ifname="eth1"), (0, None))
        self.assertEqual(self.cni("DEL", conf, netns=netns, ifname="eth1"), (0, None))
        self.assert_moved_back("eth1")

    def test_device_links_maps_a_pci_address(self):
        conf = self.conf(deviceID="0000:af:06.0", pciBusID="0000:af:06.0",
                         deviceLinks={"0000:af:06.0": VF})
        self.assertEqual(self.cni("ADD", conf)[0], 0)
        self.assert_moved_in()
        self.assertEqual(self.cni("DEL", conf), (0, None))
        self.assert_moved_back()

    def test_old_result_versions(self):
        code, result = self.cni("ADD", self.conf(cniVersion="0.3.1", address="192.0.2.6/24"))
        self.assertEqual((code, result["ips"]),
                         (0, [{"address": "192.0.2.6/24", "interface": 0, "version": "4"}]))
        self.assertEqual(self.cni("DEL", self.conf(cniVersion="0.3.1")), (0, None))

    def test_version_answers_every_spec_version(self):
        code, result = self.cni("VERSION", {"cniVersion": "1.1.0"})
        self.assertEqual(code, 0)
        self.assertIn("0.1.0", result["supportedVersions"])
        self.assertIn("1.1.0", result["supportedVersions"])


class FaultsTest(FakeSriovTest):
    def test_missing_device_id_is_error_7(self):
        code, result = self.cni("ADD", self.conf(deviceID=None, pciBusID=None))
        self.assertEqual((code, result["code"], result["msg"]), (1, 7, "deviceID missing"))
        self.assertEqual(self.node.mac(VF), self.vf_mac)

    def test_missing_host_link_is_error_11(self):
        code, result = self.cni("ADD", self.conf(deviceID="mfnolink0"))
        self.assertEqual((code, result["code"]), (1, 11))

    def test_check_of_a_missing_link_fails(self):
        code, result = self.cni("CHECK", self.conf())
        self.assertEqual((code, result["code"]), (1, 999))

    def test_del_without_state_or_netns_succeeds(self):
        self.assertEqual(self.cni("DEL", self.conf()), (0, None))
        self.assertEqual(self.cni("DEL", self.conf(), netns=""), (0, None))
        self.assertEqual(self.cni("ADD", self.conf())[0], 0)
        self.pod.delete()  # the veth dies with the namespace
        self.assertEqual(self.cni("DEL", self.conf(), netns=self.pod.path), (0, None))
        self.assertEqual(self.state_files(), [])

    def test_del_leaves_a_link_that_is_not_ours(self):
        self.assertEqual(self.cni("ADD", self.conf())[0], 0)
        self.pod.ip("link", "set", "net1", "address", "02:00:00:00:00:01")
        self.assertEqual(self.cni("DEL", self.conf()), (0, None))
        self.assertIsNotNone(self.pod.link("net1"))
        self.assertEqual(self.state_files(), [])


class RecordTest(FakeSriovTest):
    def test_record_has_the_config_and_device_info_at_add(self):
        info_path = os.path.join(self.dir, "devinfo", "sriov-net-%s_net1" % CID)
        os.makedirs(os.path.dirname(info_path))
        content = '{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:af:06.0"}}'
        with open(info_path, "w", encoding="utf-8") as f:
            f.write(content)
        os.chmod(info_path, 0o444)
        conf = self.conf(runtimeConfig={"CNIDeviceInfoFile": info_path})
        self.assertEqual(self.cni("ADD", conf)[0], 0)
        os.unlink(info_path)
        self.assertEqual(self.cni("DEL", conf), (0, None))
        add, delete = self.records()
        self.assertEqual((add["plugin"], add["command"], add["containerID"], add["ifname"]),
                         ("fake-sriov", "ADD", CID, "net1"))
        self.assertEqual(add["config"], conf)
        self.assertEqual(add["deviceInfoAtAdd"],
                         {"path": info_path, "exists": True, "content": content, "mode": "0444"})
        self.assertEqual(delete["deviceInfoAtDel"],
                         {"path": info_path, "exists": False, "content": None, "mode": None})
        self.assertNotIn("deviceInfoAtAdd", delete)

    def test_no_device_info_field_without_the_capability(self):
        self.cni("ADD", self.conf(deviceID=None))
        self.assertNotIn("deviceInfoAtAdd", self.records()[0])


if __name__ == "__main__":
    unittest.main()
