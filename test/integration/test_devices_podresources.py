#!/usr/bin/env python3
"""SR-IOV-style device networks fed by the kubelet's PodResources API (the gRPC double on the
test's socket), end to end through the libcni driver.

Three host devices exist on the node; the kubelet allocated two of them to the pod (and others to
another pod, which must not leak in). The pod's two networks name the resource: each gets the next
device in byte-wise order, its delegate (fake-sriov, like sriov-cni) gets deviceID and pciBusID
and, as it declares the capabilities, runtimeConfig.deviceID and CNIDeviceInfoFile, whose file
(the device plugin's device-info, copied, mode 0444) exists when the delegate runs and ends up in
the network-status. CHECK passes; DEL puts both devices back on the host under their own names
and removes the device-info files. A pod whose networks name no resource never asks the kubelet.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from devices_case import (PCI, RESOURCE, OTHER_RESOURCE, DevicesTestCase,  # noqa: E402
                          pci_info)
from harness import main  # noqa: E402


class PodResourcesDevicesTest(DevicesTestCase):
    """Devices from PodResources List, matched by pod name and namespace."""

    def setUp(self):
        super().setUp()
        self.add_devices(PCI[:3])  # 06.2 (mfvf0), 06.0 (mfvf1), 06.1 (mfvf2)
        self.allocated = ["0000:af:06.2", "0000:af:06.0"]  # the kubelet's order, not sorted
        self.spare = "0000:af:06.1"

    def kubelet_pods(self):
        """The pod's allocation, plus other pods' (same name elsewhere, other names here)."""
        return [
            self.kubelet_pod("other-pod", {RESOURCE: [self.spare]}),
            self.kubelet_pod(self.pod_name, {RESOURCE: [self.spare]}, ns="elsewhere"),
            self.kubelet_pod(self.pod_name, {RESOURCE: list(self.allocated),
                                             OTHER_RESOURCE: ["0000:00:00.9"]}),
        ]

    def test_two_networks_get_the_two_allocated_devices_in_order(self):
        self.start_kubelet(self.kubelet_pods())
        for device_id in PCI[:3]:
            self.write_dp_info(device_id)
        self.add_sriov_nad("sriov-a", address="198.51.100.31/24")
        self.add_sriov_nad("sriov-b")
        self.add_device_pod("sriov-a, sriov-b")
        self.write_devices_conf()

        add = self.add()
        self.assertOk(add)
        self.assertEqual(len(self.list_calls()), 1, self.kubelet.requests())
        call = self.list_calls()[0]
        self.assertEqual(call["request"], b"")
        self.assertIsNotNone(call["deadline"], "the List call carries no deadline")
        self.assertLessEqual(call["deadline"], 10.0)

        # The smaller ID goes to the first network; the spare stays on the host.
        self.assertDeviceIn("0000:af:06.0", "net1")
        self.assertDeviceIn("0000:af:06.2", "net2")
        self.assertDevicesHome(self.spare)
        self.assertEqual(self.pod.addresses("net1"), ["198.51.100.31/24"])

        adds = {r["ifname"]: r for r in self.sriov_records("ADD")}
        self.assertEqual(sorted(adds), ["net1", "net2"])
        for ifname, nad, device_id in (("net1", "sriov-a", "0000:af:06.0"),
                                       ("net2", "sriov-b", "0000:af:06.2")):
            conf = adds[ifname]["config"]
            self.assertEqual((conf["deviceID"], conf["pciBusID"]), (device_id, device_id))
            info_path = self.cni_info_path(nad, ifname)
            self.assertEqual(conf["runtimeConfig"]["deviceID"], device_id)
            self.assertEqual(conf["runtimeConfig"]["CNIDeviceInfoFile"], info_path)
            at_add = adds[ifname]["deviceInfoAtAdd"]
            self.assertEqual(at_add["path"], info_path)
            self.assertTrue(at_add["exists"], "%s did not exist when the delegate ran" % info_path)
            self.assertEqual(at_add["mode"], "0444")
            self.assertEqual(json.loads(at_add["content"]), pci_info(device_id))
            self.assertNotIn(" ", at_add["content"], "not written compact")
            self.assertFileMode(info_path, 0o444)

        status = self.status_entries()
        self.assertEqual(sorted(status), ["cluster", "default/sriov-a", "default/sriov-b"])
        self.assertNotIn("device-info", status["cluster"])
        self.assertEqual(status["default/sriov-a"]["device-info"], pci_info("0000:af:06.0"))
        self.assertEqual(status["default/sriov-b"]["device-info"], pci_info("0000:af:06.2"))
        self.assertEqual(status["default/sriov-a"]["interface"], "net1")
        self.assertEqual(status["default/sriov-a"]["mac"], self.devices["0000:af:06.0"][1])

        self.assertOk(self.check())
        self.assertEqual(len(self.sriov_records("CHECK")), 2)

        self.assertOk(self.delete())
        self.assertEqual(len(self.sriov_records("DEL")), 2)
        self.assertEqual(len(self.list_calls()), 1, "CHECK or DEL asked the kubelet again")
        self.assertNothingLeftBehind()
        # The device plugin's files are not manifold's to remove.
        self.assertEqual(sorted(os.listdir(os.path.join(self.devinfo_dir, "dp"))),
                         sorted(os.path.basename(self.dp_info_path(d)) for d in PCI[:3]))

    def test_conflist_gets_the_device_in_every_plugin(self):
        self.start_kubelet(self.kubelet_pods())
        conflist = {"cniVersion": "1.0.0", "name": "sriov-list", "plugins": [
            {k: v for k, v in self.sriov_conf("sriov-list").items()
             if k not in ("name", "cniVersion")},
            # A chained plugin that passes prevResult through (fake-fail failing on nothing).
            {"type": "fake-fail", "failOn": [], "recordFile": self.tree.record_file,
             "capabilities": {"deviceID": True}},
        ]}
        self.api.add_nad("default", "sriov-list", conflist,
                         annotations={"k8s.v1.cni.cncf.io/resourceName": RESOURCE})
        self.add_device_pod("sriov-list")
        self.write_devices_conf()
        self.assertOk(self.add())
        self.assertDeviceIn("0000:af:06.0", "net1")
        records = {r["plugin"]: r for r in self.tree.records() if r["command"] == "ADD"}
        for plugin in ("fake-sriov", "fake-fail"):
            conf = records[plugin]["config"]
            self.assertEqual((conf["deviceID"], conf["pciBusID"]), ("0000:af:06.0", "0000:af:06.0"))
            self.assertEqual(conf["runtimeConfig"]["deviceID"], "0000:af:06.0")
        # Only the plugin declaring CNIDeviceInfoFile gets it (libcni's capability injection).
        self.assertIn("CNIDeviceInfoFile", records["fake-sriov"]["config"]["runtimeConfig"])
        self.assertNotIn("CNIDeviceInfoFile", records["fake-fail"]["config"]["runtimeConfig"])
        self.assertOk(self.delete())
        self.assertNothingLeftBehind()

    def test_networks_without_a_resource_never_ask_the_kubelet(self):
        self.start_kubelet(self.kubelet_pods())
        self.write_checkpoint(raw="this is not a checkpoint")  # would fail if it were read
        self.add_sriov_nad("plain-a", resource=None, deviceID=self.spare)
        self.api.add_nad("default", "plain-b", self.macvlan_nad_conf("198.51.100.12/24"))
        self.add_device_pod("plain-a, plain-b")
        self.write_devices_conf()
        self.assertOk(self.add())
        self.assertEqual(self.kubelet.requests(), [])
        self.assertEqual(self.list_calls(), [])
        self.assertEqual(self.requests(path="resource.k8s.io"), [])
        self.assertDeviceIn(self.spare, "net1")  # its own static deviceID
        conf = self.sriov_records("ADD")[0]["config"]
        self.assertNotIn("CNIDeviceInfoFile", conf.get("runtimeConfig", {}))
        self.assertEqual(self.cni_info_files(), [])
        self.assertNotIn("device-info", self.status_entries()["default/plain-a"])
        self.assertOk(self.check())
        self.assertOk(self.delete())
        self.assertEqual(self.kubelet.requests(), [])
        self.assertNothingLeftBehind()


if __name__ == "__main__":
    main()
