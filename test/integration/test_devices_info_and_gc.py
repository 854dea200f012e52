#!/usr/bin/env python3
"""The device-info files around device networks, and what happens when attachments go away
other than by a plain DEL.

A device plugin's device-info file that is not JSON, not an object, of the wrong shape or over
64 KiB is not passed on: the ADD still succeeds, with a warning, no file for the delegate and no
"device-info" in the network-status. A valid one is decoded (unknown keys dropped) and written
compact. More device networks than devices fail the ADD with 108 naming the network and the
resource; a delegate failing after device networks were attached rolls them back (devices back on
the host, their device-info files removed). CNI GC of a container the runtime no longer lists
DELs its device networks with their deviceID and removes their device-info files, keeping those
of the containers still listed.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from devices_case import (DEVICE_UNAVAILABLE, PCI, RESOURCE, DevicesTestCase,  # noqa: E402
                          pci_info)
from harness import main  # noqa: E402
from k8s_case import pod_cni_args  # noqa: E402

KIB = 1024


class DeviceInfoTest(DevicesTestCase):
    """Devices from the checkpoint; device-info files written by the test as the device plugin."""

    def setUp(self):
        super().setUp()
        self.add_devices(PCI)
        self.write_checkpoint([self.checkpoint_entry(self.pod_uid, RESOURCE, PCI[:2])])
        for name in ("sriov-a", "sriov-b", "sriov-c"):
            self.add_sriov_nad(name)
        self.write_devices_conf()

    def test_unusable_device_info_is_skipped_with_a_warning(self):
        first = "0000:af:06.0"  # the sorted first of the pod's 06.2 and 06.0
        valid = json.dumps(pci_info(first))
        variants = {
            "not JSON": "{\"type\": \"pci\", ",
            "a list": json.dumps([pci_info(first)]),
            "a string": json.dumps("pci"),
            "null": "null",
            "a wrong shape": json.dumps({"type": "pci", "version": "1.1.0", "pci": first}),
            "over 64 KiB": valid + " " * (64 * KIB + 1 - len(valid)),
        }
        self.add_device_pod("sriov-a")
        for what, content in variants.items():
            with self.subTest(what):
                self.write_dp_info(first, content)
                open(self.tree.log_file, "w").close()
                self.tree.clear_records()
                self.assertOk(self.add())
                self.assertDeviceIn(first, "net1")
                self.assertWarned("default/sriov-a", "device-info")
                at_add = self.sriov_records("ADD")[0]["deviceInfoAtAdd"]
                self.assertEqual(at_add["path"], self.cni_info_path("sriov-a", "net1"))
                self.assertFalse(at_add["exists"], at_add)
                self.assertEqual(self.cni_info_files(), [])
                self.assertNotIn("device-info", self.status_entries()["default/sriov-a"])
                self.assertOk(self.delete())
                self.assertNothingLeftBehind()

    def test_device_info_is_decoded_and_written_compact(self):
        # Unknown keys are dropped (as Go's decoding into DeviceInfo does), up to 64 KiB is read.
        info = {"type": "pci", "version": "1.1.0", "vendor": "example",
                "pci": {"pci-address": "0000:af:06.0", "rdma-device": "mlx5_3", "extra": "x"}}
        text = json.dumps(info, indent=4)
        self.write_dp_info("0000:af:06.0", text + " " * (64 * KIB - len(text)))
        self.add_device_pod("sriov-a")
        self.assertOk(self.add())
        expected = {"type": "pci", "version": "1.1.0",
                    "pci": {"pci-address": "0000:af:06.0", "rdma-device": "mlx5_3"}}
        path = self.cni_info_path("sriov-a", "net1")
        with open(path, encoding="utf-8") as f:
            content = f.read()
        self.assertEqual(json.loads(content), expected)
        self.assertEqual(content, json.dumps(json.loads(content), separators=(",", ":"),
                                             sort_keys=False), "not compact")
        self.assertFileMode(path, 0o444)
        self.assertEqual(self.sriov_records("ADD")[0]["deviceInfoAtAdd"]["content"], content)
        self.assertEqual(self.status_entries()["default/sriov-a"]["device-info"], expected)
        self.assertOk(self.delete())
        self.assertNothingLeftBehind()

    def test_stale_device_info_file_is_replaced(self):
        # A file left at the attachment's path (an earlier ADD killed before it cleaned up) does
        # not survive into the new attachment, as it does in Multus (which refuses to overwrite it).
        self.write_dp_info("0000:af:06.0")
        path = self.cni_info_path("sriov-a", "net1")
        os.makedirs(os.path.dirname(path))
        with open(path, "w", encoding="utf-8") as f:
            f.write('{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:ff:00.0"}}')
        os.chmod(path, 0o444)
        self.add_device_pod("sriov-a")
        self.assertOk(self.add())
        with open(path, encoding="utf-8") as f:
            self.assertEqual(json.loads(f.read()), pci_info("0000:af:06.0"))
        self.assertFileMode(path, 0o444)
        self.assertEqual(self.status_entries()["default/sriov-a"]["device-info"],
                         pci_info("0000:af:06.0"))
        self.assertOk(self.delete())
        self.assertNothingLeftBehind()

    def test_more_networks_than_devices(self):
        for device_id in PCI:
            self.write_dp_info(device_id)
        self.add_device_pod("sriov-a, sriov-b, sriov-c")  # the pod has two devices
        run = self.add()
        self.assertCniError(run, DEVICE_UNAVAILABLE)
        self.assertErrorMentions(run, "default/sriov-c", RESOURCE)
        # Whatever ran was rolled back: every ADD of a device delegate has its DEL.
        adds = [r["ifname"] for r in self.sriov_records("ADD")]
        self.assertEqual(sorted(r["ifname"] for r in self.sriov_records("DEL")), sorted(adds))
        self.assertNotIn("net3", adds)
        self.assertNothingLeftBehind()

    def test_rollback_returns_devices_and_removes_their_device_info(self):
        for device_id in PCI:
            self.write_dp_info(device_id)
        self.api.add_nad("default", "breaker", self.fake_conf("fake-fail", name="breaker",
                                                              failCode=11, failMsg="broken"))
        self.add_device_pod("sriov-a, sriov-b, breaker")
        run = self.add()
        self.assertCniError(run, 11)
        adds = {r["ifname"]: r for r in self.sriov_records("ADD")}
        self.assertEqual(sorted(adds), ["net1", "net2"])
        for ifname, nad in (("net1", "sriov-a"), ("net2", "sriov-b")):
            self.assertTrue(adds[ifname]["deviceInfoAtAdd"]["exists"])
            self.assertEqual(adds[ifname]["deviceInfoAtAdd"]["path"],
                             self.cni_info_path(nad, ifname))
        self.assertEqual(sorted(r["ifname"] for r in self.sriov_records("DEL")), ["net1", "net2"])
        self.assertNothingLeftBehind()


class DeviceGcTest(DevicesTestCase):
    """Two pods with devices; the runtime forgets one (its sandbox is gone), then runs GC."""

    def setUp(self):
        super().setUp()
        self.add_devices(PCI)
        self.other = self.new_netns()
        self.other_name = "gc-survivor"
        self.other_uid, self.other_cid = "uid-gc-survivor", "ctr-gc-survivor"
        self.write_checkpoint([self.checkpoint_entry(self.pod_uid, RESOURCE, PCI[:2]),
                               self.checkpoint_entry(self.other_uid, RESOURCE, [PCI[2]])])
        for device_id in PCI:
            self.write_dp_info(device_id)
        self.add_sriov_nad("sriov-a")
        self.add_sriov_nad("sriov-b")
        self.add_device_pod("sriov-a, sriov-b")
        self.add_device_pod("sriov-a", name=self.other_name, uid=self.other_uid)
        self.write_devices_conf(version="1.1.0")  # GC needs 1.1.0

    def other_run(self, verb):
        """ADD/DEL of the surviving pod's container."""
        args = pod_cni_args("default", self.other_name, self.other_uid, self.other_cid)
        return self.driver(verb, self.other.path, container_id=self.other_cid, cni_args=args)

    def sandbox_gone(self, pod, links):
        """The pod's sandbox is destroyed. The kernel gives a physical VF back to the host when
        its namespace dies; veths die with it instead, so the test plays the kernel and moves the
        device links (pod ifname -> host name) back before deleting the namespace."""
        for ifname, device_id in links.items():
            pod.ip("link", "set", "dev", ifname, "netns", self.node.name,
                   "name", self.devices[device_id][0])
        pod.delete()

    def test_gc_removes_the_device_info_of_forgotten_containers(self):
        self.assertOk(self.add())
        self.assertOk(self.other_run("add"))
        mine = [self.cni_info_path("sriov-a", "net1"), self.cni_info_path("sriov-b", "net2")]
        theirs = self.cni_info_path("sriov-a", "net1", container_id=self.other_cid)
        self.assertEqual(self.cni_info_files(),
                         sorted(os.path.basename(p) for p in mine + [theirs]))
        self.assertDeviceIn(PCI[2], "net1", pod=self.other)

        self.sandbox_gone(self.pod, {"net1": "0000:af:06.0", "net2": "0000:af:06.2"})
        valid = [{"containerID": self.other_cid, "ifname": "eth0"}]
        gc = self.driver("gc", "", valid_attachments=valid)
        self.assertOk(gc)
        self.assertEqual(self.cni_info_files(), [os.path.basename(theirs)])
        dels = {r["config"]["deviceID"]: r for r in self.sriov_records("DEL")}
        self.assertEqual(sorted(dels), ["0000:af:06.0", "0000:af:06.2"])
        for record in dels.values():
            self.assertEqual(record["containerID"], self.container_id)
            self.assertEqual(record["netns"], "")  # the runtime no longer knows the sandbox
            self.assertEqual(record["config"]["pciBusID"], record["config"]["deviceID"])
        self.assertEqual([f for f in self.tree.cache_files() if self.container_id in f], [])
        self.assertTrue([f for f in self.tree.cache_files() if self.other_cid in f])
        self.assertDevicesHome("0000:af:06.0", "0000:af:06.2", "0000:af:06.3")

        # The runtime forgets its own (libcni) record of the container; the driver's GC, like
        # libcni's before 1.2, leaves that to its caller.
        for name in self.tree.libcni_cache_files():
            if self.container_id in name:
                os.unlink(os.path.join(self.tree.libcni_cache, name))

        # The surviving pod is untouched, and its own DEL cleans up the rest.
        self.assertDeviceIn(PCI[2], "net1", pod=self.other)
        self.assertOk(self.other_run("del"))
        self.assertNothingLeftBehind(pods=[self.other])


if __name__ == "__main__":
    main()
