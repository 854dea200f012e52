#!/usr/bin/env python3
"""Device networks fed by DRA (resource.k8s.io/v1 through the API server double, with the shipped
RBAC enforced), alone and merged with the kubelet's devices.

A pod's claims (status.resourceClaimStatuses, spec.resourceClaims with a pre-created claim, and
status.extendedResourceClaimStatus) are each read once; the node's ResourceSlices are listed per
driver with the field selector spec.nodeName=<node>,spec.driver=<driver>; results map to
resources and device IDs through the k8s.cni.cncf.io/resourceName and k8s.cni.cncf.io/deviceID
attributes. A claim without an allocation fails the ADD (108); a result whose device is in no
slice is a warning (the network then lacks its device: 108), but an error for the extended
resource claim. DRA devices merge with the checkpoint's and are handed out sorted. A cluster
without resource.k8s.io fails only pods that have claims.
"""
import os
import sys
from urllib.parse import unquote

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from devices_case import (DEVICE_UNAVAILABLE, DRA_DRIVER, DRA_ID_ATTR,  # noqa: E402
                          DRA_RESOURCE_ATTR, NETWORKS, NODE, OTHER_RESOURCE, PCI, RESOURCE,
                          DevicesTestCase, pci_info)
from harness import main  # noqa: E402

CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
EXT_REQUEST = "container-0-request-0"
KUBERNETES = 103


def result(device, request="nic", pool=NODE, driver=DRA_DRIVER):
    """An allocation result of a claim."""
    return {"request": request, "driver": driver, "pool": pool, "device": device}


def extended(claim):
    """A pod's extendedResourceClaimStatus: RESOURCE of container app is claim's EXT_REQUEST."""
    return {"resourceClaimName": claim, "requestMappings": [
        {"containerName": "app", "resourceName": RESOURCE, "requestName": EXT_REQUEST}]}


class DraDevicesTest(DevicesTestCase):
    """Claims and slices in the API double; no PodResources socket, a checkpoint only if written."""

    def setUp(self):
        super().setUp()
        self.add_devices(PCI)
        self.api.set_options(disabled_groups=[])
        self.addCleanup(self.api.set_options, disabled_groups=[])
        # The node's slice: vf-0..vf-3 are the four devices; vf-9 is no network device (no
        # deviceID), vf-8 counts as another resource. A slice of another node has the same names.
        devices = {"vf-%d" % i: {DRA_ID_ATTR: d, DRA_RESOURCE_ATTR: RESOURCE, "numa": 0}
                   for i, d in enumerate(PCI)}
        devices["vf-8"] = {DRA_ID_ATTR: "0000:00:00.8", DRA_RESOURCE_ATTR: OTHER_RESOURCE}
        devices["vf-9"] = {DRA_RESOURCE_ATTR: RESOURCE}
        self.api.add_resource_slice(self.id_name("local"), driver=DRA_DRIVER, node_name=NODE,
                                    devices=devices)
        self.api.add_resource_slice(self.id_name("remote"), driver=DRA_DRIVER, node_name="node-2",
                                    pool=NODE, devices={"vf-7": {DRA_ID_ATTR: PCI[0],
                                                                 DRA_RESOURCE_ATTR: RESOURCE}})
        self.add_sriov_nad("sriov-a")
        self.add_sriov_nad("sriov-b")
        self.write_devices_conf()

    def id_name(self, what):
        """A per-test object name (the double is shared by the class)."""
        return "%s-%s" % (self.pod_name[:40], what)

    def claim_pod(self, networks, claims=(), spec_claims=(), extended=None):
        """The test's pod on NODE with claims in status, pre-created claims in spec, and an
        extendedResourceClaimStatus."""
        spec = {"containers": [{"name": "app", "image": "busybox"}], "nodeName": NODE}
        if spec_claims:
            spec["resourceClaims"] = [{"name": "c%d" % i, "resourceClaimName": c}
                                      for i, c in enumerate(spec_claims)]
        status = {"phase": "Pending"}
        if claims:
            status["resourceClaimStatuses"] = [{"name": "c%d" % i, "resourceClaimName": c}
                                               for i, c in enumerate(claims)]
        if extended:
            status["extendedResourceClaimStatus"] = extended
        return self.add_pod({NETWORKS: networks}, spec=spec, status=status)

    def dra_requests(self):
        """(method, path, decoded query) of manifold's resource.k8s.io requests."""
        return [(e["method"], e["path"], unquote(e["query"]))
                for e in self.requests(path="^/apis/resource.k8s.io")]

    def attached(self, expected):
        """The ADD gave the networks expected (device IDs in order); DEL puts all back."""
        self.assertOk(self.add())
        for ifname, device_id in zip(("net1", "net2"), expected):
            self.assertDeviceIn(device_id, ifname)
            self.assertEqual(self.sriov_records("ADD")[int(ifname[-1]) - 1]["config"]["deviceID"],
                             device_id)
        self.assertOk(self.check())
        self.assertOk(self.delete())
        self.assertNothingLeftBehind()

    def test_claim_and_slice_attach_the_device(self):
        claim = self.id_name("nic")
        self.api.add_resource_claim("default", claim, results=[result("vf-3"), result("vf-1")])
        self.write_dp_info(PCI[3])
        self.claim_pod("sriov-a, sriov-b", claims=[claim])
        self.assertOk(self.add())
        self.assertDeviceIn(PCI[1], "net1")  # 0000:af:06.0 < 0000:af:06.3
        self.assertDeviceIn(PCI[3], "net2")
        self.assertEqual(self.status_entries()["default/sriov-b"]["device-info"], pci_info(PCI[3]))
        self.assertNotIn("device-info", self.status_entries()["default/sriov-a"])  # no dp file
        self.assertEqual(self.dra_requests(), [
            ("GET", CLAIMS + claim, ""),
            ("GET", SLICES, "fieldSelector=spec.nodeName=%s,spec.driver=%s" % (NODE, DRA_DRIVER))])
        self.assertOk(self.check())
        self.assertOk(self.delete())
        self.assertEqual(len(self.dra_requests()), 2, "CHECK or DEL read DRA again")
        self.assertNothingLeftBehind()

    def test_pre_created_claim_in_spec(self):
        claim = self.id_name("shared")
        self.api.add_resource_claim("default", claim, results=[result("vf-2"), result("vf-0")])
        self.claim_pod("sriov-a, sriov-b", spec_claims=[claim])
        self.attached(["0000:af:06.1", "0000:af:06.2"])
        self.assertEqual([p for _, p, _ in self.dra_requests()], [CLAIMS + claim, SLICES])

    def test_extended_resource_claim_status(self):
        claim = self.id_name("ext")
        self.api.add_resource_claim("default", claim, results=[
            result("vf-2", EXT_REQUEST), result("vf-3", EXT_REQUEST), result("vf-8", "unmapped")])
        self.claim_pod("sriov-a, sriov-b", extended=extended(claim))
        self.attached(["0000:af:06.1", "0000:af:06.3"])

    def test_extended_resource_device_in_no_slice_is_an_error(self):
        claim = self.id_name("ext")
        self.api.add_resource_claim("default", claim, results=[
            result("vf-2", EXT_REQUEST), result("vf-7", EXT_REQUEST)])  # vf-7: node-2's only
        self.claim_pod("sriov-a", extended=extended(claim))
        self.assertDeviceError(self.add(), DEVICE_UNAVAILABLE, "vf-7", claim)

    def test_claim_without_allocation(self):
        claim = self.id_name("pending")
        self.api.add_resource_claim("default", claim)  # status {}
        self.claim_pod("sriov-a", claims=[claim])
        self.assertDeviceError(self.add(), DEVICE_UNAVAILABLE, claim, "has no device allocation")

    def test_device_in_no_slice_is_skipped_with_a_warning(self):
        claim = self.id_name("stray")
        self.api.add_resource_claim("default", claim, results=[result("vf-7"), result("vf-9")])
        self.claim_pod("sriov-a", claims=[claim])
        run = self.add()
        self.assertWarned(claim, "vf-7")
        self.assertDeviceError(run, DEVICE_UNAVAILABLE, "default/sriov-a", RESOURCE)

    def test_kubelet_and_dra_devices_merge_sorted(self):
        # The checkpoint has 06.2, DRA has 06.0: the first network gets DRA's, the second the
        # kubelet's (merged, then sorted; not kubelet first).
        self.write_checkpoint([self.checkpoint_entry(self.pod_uid, RESOURCE, ["0000:af:06.2"])])
        claim = self.id_name("nic")
        self.api.add_resource_claim("default", claim, results=[result("vf-1")])
        self.claim_pod("sriov-a, sriov-b", claims=[claim])
        self.attached(["0000:af:06.0", "0000:af:06.2"])

    def test_disabled_group_fails_only_pods_with_claims(self):
        self.api.set_options(disabled_groups=["resource.k8s.io"])
        self.write_checkpoint([self.checkpoint_entry(self.pod_uid, RESOURCE, ["0000:af:06.2"])])
        claim = self.id_name("nic")
        self.api.add_resource_claim("default", claim, results=[result("vf-1")])
        self.claim_pod("sriov-a", claims=[claim])
        run = self.add()
        self.assertCniError(run, KUBERNETES)  # the API answered 404 for the claim
        self.assertErrorMentions(run, claim)
        self.assertEqual(self.sriov_records("ADD"), [])
        self.assertNothingLeftBehind()
        self.assertEqual([s for _, s, _ in self.dra_requests()], [CLAIMS + claim])

        # The same pod without claims gets its kubelet device and never asks DRA.
        self.api.clear_requests()
        self.add_device_pod("sriov-a")
        self.assertOk(self.add())
        self.assertDeviceIn("0000:af:06.2", "net1")
        self.assertEqual(self.dra_requests(), [])
        self.assertOk(self.delete())
        self.assertNothingLeftBehind()

    def test_claims_are_not_read_without_a_device_network(self):
        claim = self.id_name("nic")
        self.api.add_resource_claim("default", claim, results=[result("vf-1")])
        self.add_sriov_nad("plain", resource=None, deviceID=PCI[0])
        self.claim_pod("plain", claims=[claim])
        self.assertOk(self.add())
        self.assertDeviceIn(PCI[0], "net1")
        self.assertEqual(self.dra_requests(), [])
        self.assertOk(self.delete())
        self.assertNothingLeftBehind()


if __name__ == "__main__":
    main()
