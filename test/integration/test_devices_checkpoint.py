#!/usr/bin/env python3
"""Device networks fed by the kubelet's device-plugin checkpoint (no PodResources socket).

Both shapes of DeviceIDs the kubelet ever wrote (a NUMA map {"-1": [...]} and the pre-topology
flat list) allocate the pod's devices, matched by pod UID (other pods' entries and other resources
ignored, several NUMA nodes and entries concatenated, then sorted). A missing checkpoint means no
device: the ADD fails naming the network and the resource. Every malformed checkpoint fails the ADD
with CNI error 6 naming the file (108 when it cannot be read), before any delegate runs, and leaves
nothing behind: no device moved, no cache entry, no device-info file, every host device in place.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from devices_case import (DECODING, DEVICE_UNAVAILABLE, OTHER_RESOURCE, PCI, RESOURCE,  # noqa: E402
                          DevicesTestCase, pci_info)
from harness import main  # noqa: E402

MIB = 1 << 20


class CheckpointDevicesTest(DevicesTestCase):
    """Devices from the checkpoint file at kubeletCheckpointFile; the socket path does not exist."""

    def setUp(self):
        super().setUp()
        self.add_devices(PCI)
        self.add_sriov_nad("sriov-a")
        self.add_sriov_nad("sriov-b")
        self.add_device_pod("sriov-a, sriov-b")
        self.write_devices_conf()

    def other_entries(self, numa):
        """Entries of other pods and of another resource, which must never be handed out."""
        return [self.checkpoint_entry("uid-someone-else", RESOURCE, ["0000:af:06.1"], numa),
                self.checkpoint_entry(self.pod_uid, OTHER_RESOURCE, ["0000:af:06.1"], numa)]

    def attach_and_detach(self, expected):
        """ADD: the networks get expected (device IDs in order); CHECK; DEL: all back."""
        for device_id in expected:
            self.write_dp_info(device_id)
        self.assertOk(self.add())
        for ifname, device_id in zip(("net1", "net2"), expected):
            self.assertDeviceIn(device_id, ifname)
        self.assertDevicesHome(*(d for d in PCI if d not in expected))
        status = self.status_entries()
        self.assertEqual(status["default/sriov-a"]["device-info"], pci_info(expected[0]))
        self.assertEqual(status["default/sriov-b"]["device-info"], pci_info(expected[1]))
        self.assertEqual(len(self.cni_info_files()), 2)
        self.assertOk(self.check())
        self.assertOk(self.delete())
        self.assertNothingLeftBehind()

    def test_numa_map_form(self):
        # Two NUMA nodes and two containers of the pod: concatenated, then sorted byte-wise.
        self.write_checkpoint(self.other_entries(True) + [
            {"PodUID": self.pod_uid, "ContainerName": "app", "ResourceName": RESOURCE,
             "DeviceIDs": {"1": ["0000:af:06.3"], "0": ["0000:af:06.2"]}, "AllocResp": "CgA="},
            self.checkpoint_entry(self.pod_uid, RESOURCE, [], True, container="sidecar"),
        ])
        self.attach_and_detach(["0000:af:06.2", "0000:af:06.3"])

    def test_flat_list_form(self):
        self.write_checkpoint(self.other_entries(False) + [
            self.checkpoint_entry(self.pod_uid, RESOURCE, ["0000:af:06.3", "0000:af:06.0"], False)])
        self.attach_and_detach(["0000:af:06.0", "0000:af:06.3"])

    def test_uid_match_not_name(self):
        # An entry for another UID is another pod, even one of the same name.
        self.write_checkpoint([self.checkpoint_entry("uid-" + self.pod_name + "-old", RESOURCE,
                                                     ["0000:af:06.0", "0000:af:06.2"])])
        run = self.add()
        self.assertDeviceError(run, DEVICE_UNAVAILABLE, "default/sriov-a", RESOURCE)

    def test_missing_checkpoint_means_no_device(self):
        self.assertFalse(os.path.exists(self.checkpoint_path))
        run = self.add()
        self.assertDeviceError(run, DEVICE_UNAVAILABLE, "default/sriov-a", RESOURCE)

    # ---- malformed checkpoints -------------------------------------------------------------------

    def assertBadCheckpoint(self, code, raw=None):
        """With this checkpoint content the ADD fails with code naming the file; nothing left."""
        if raw is not None:
            self.write_checkpoint(raw=raw)
        self.assertDeviceError(self.add(), code, self.checkpoint_path)

    def good(self):
        """A valid checkpoint document of the pod (to break in one place)."""
        return {"Data": {"PodDeviceEntries": [
            self.checkpoint_entry(self.pod_uid, RESOURCE, ["0000:af:06.0", "0000:af:06.2"])],
            "RegisteredDevices": {RESOURCE: PCI}}, "Checksum": 1}

    def test_unreadable(self):
        os.makedirs(self.checkpoint_path)  # exists, but reading it fails (root reads any file)
        self.assertBadCheckpoint(DEVICE_UNAVAILABLE)

    def test_oversized(self):
        # Exactly 16 MiB is still read; one byte more is refused.
        text = json.dumps(self.good())
        self.write_checkpoint(raw=text + " " * (16 * MIB - len(text)))
        self.attach_and_detach(["0000:af:06.0", "0000:af:06.2"])
        self.tree.clear_records()  # the refused ADD below must run no device delegate of its own
        self.assertBadCheckpoint(DECODING, text + " " * (16 * MIB + 1 - len(text)))

    def test_not_json(self):
        self.assertBadCheckpoint(DECODING, "this is not a kubelet checkpoint\n")

    def test_truncated(self):
        text = json.dumps(self.good())
        self.assertBadCheckpoint(DECODING, text[:len(text) // 2])

    def test_not_an_object(self):
        self.assertBadCheckpoint(DECODING, [self.good()])

    def test_data_not_an_object(self):
        self.assertBadCheckpoint(DECODING, {"Data": ["PodDeviceEntries"], "Checksum": 1})

    def test_entries_not_a_list(self):
        doc = self.good()
        doc["Data"]["PodDeviceEntries"] = {"0": doc["Data"]["PodDeviceEntries"][0]}
        self.assertBadCheckpoint(DECODING, doc)

    def test_entry_without_pod_uid(self):
        doc = self.good()
        del doc["Data"]["PodDeviceEntries"][0]["PodUID"]
        self.assertBadCheckpoint(DECODING, doc)

    def test_entry_without_resource_name(self):
        doc = self.good()
        del doc["Data"]["PodDeviceEntries"][0]["ResourceName"]
        self.assertBadCheckpoint(DECODING, doc)

    def test_ids_not_strings(self):
        for ids in ({"-1": [6, 7]}, [6, 7], {"-1": "0000:af:06.0"}, "0000:af:06.0"):
            with self.subTest(ids=ids):
                doc = self.good()
                doc["Data"]["PodDeviceEntries"][0]["DeviceIDs"] = ids
                self.assertBadCheckpoint(DECODING, doc)


if __name__ == "__main__":
    main()
