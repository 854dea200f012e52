"""Shared base of the device-network tests (test_devices_*.py): SR-IOV-style NADs whose devices
come from the kubelet (the PodResources double or a checkpoint file) and from DRA (the API server
double's ResourceClaims and ResourceSlices), handed to the fake-sriov delegate.

The "devices" are veth ends in the test's node namespace (their peers stay there too), each with a
PCI-address-like device ID that fake-sriov maps to the link through its `deviceLinks` config. A
device that fake-sriov moves into the pod keeps its MAC address, so where a device went is proven
by MAC: into the pod as the attachment's interface, and back to the node under its own name.

Everything manifold touches lives in the test's TempTree: the PodResources socket
(`podResourcesSocket`), the checkpoint file (`kubeletCheckpointFile`; missing unless a test writes
it), the device-info directory (`deviceInfoDir`, with the device plugin's `dp/` files that a test
writes and manifold's `cni/` files), and fake-sriov's state directory. Nothing outside the tree
and the test's namespaces is read or written, and every test removes all of it (the tree, the
namespaces, the socket through the double's stop()).
"""
import json
import os
import stat
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
sys.path.insert(0, os.path.join(_HERE, "kubelet"))
sys.dont_write_bytecode = True

from harness import add_veth  # noqa: E402
from k8s_case import NETWORK_STATUS, NETWORKS, K8sTestCase  # noqa: E402
from podresources_double import LIST_METHOD, PodResourcesDouble  # noqa: E402

RESOURCE_ANNOTATION = "k8s.v1.cni.cncf.io/resourceName"
RESOURCE = "example.com/sriov"
OTHER_RESOURCE = "example.com/other"
DRA_DRIVER = "sriov.example.com"
DRA_ID_ATTR = "k8s.cni.cncf.io/deviceID"
DRA_RESOURCE_ATTR = "k8s.cni.cncf.io/resourceName"
NODE = "node-1"
DEVICE_UNAVAILABLE = 108
DECODING = 6
# Device IDs, deliberately not in byte-wise order as created: a test hands them to the kubelet in
# another order still and checks that the first NAD gets the smallest.
PCI = ["0000:af:06.2", "0000:af:06.0", "0000:af:06.1", "0000:af:06.3"]

__all__ = ["DevicesTestCase", "RESOURCE_ANNOTATION", "RESOURCE", "OTHER_RESOURCE", "DRA_DRIVER",
           "DRA_ID_ATTR", "DRA_RESOURCE_ATTR", "NODE", "DEVICE_UNAVAILABLE", "DECODING", "PCI",
           "LIST_METHOD", "NETWORKS", "NETWORK_STATUS"]


def pci_info(device_id):
    """The device plugin's NPWG device-info (1.1.0) of a VF."""
    return {"type": "pci", "version": "1.1.0", "pci": {"pci-address": device_id}}


class DevicesTestCase(K8sTestCase):
    """K8sTestCase plus host devices, fake-sriov NADs, the kubelet sources and device-info files."""

    def setUp(self):
        super().setUp()
        self.work = self.tree.path("devices")
        self.socket_path = os.path.join(self.work, "pod-resources", "kubelet.sock")
        self.checkpoint_path = os.path.join(self.work, "device-plugins",
                                            "kubelet_internal_checkpoint")
        self.devinfo_dir = os.path.join(self.work, "devinfo")
        self.sriov_state = os.path.join(self.work, "sriov-state")
        for d in (os.path.dirname(self.socket_path), os.path.dirname(self.checkpoint_path),
                  os.path.join(self.devinfo_dir, "dp")):
            os.makedirs(d)
        self.devices = {}  # device ID -> (host link name, MAC)
        self.kubelet = None

    # ---- the node's devices ----------------------------------------------------------------------

    def add_devices(self, ids):
        """One veth end per device ID in the node namespace (mfvf<i>, peer mfvf<i>p)."""
        for device_id in ids:
            link = "mfvf%d" % len(self.devices)
            add_veth(self.node, link, link + "p")
            self.devices[device_id] = (link, self.node.mac(link))
        self.node_baseline = set(self.node.link_names())

    def device_links(self):
        """fake-sriov's deviceLinks: device ID -> host link."""
        return {device_id: link for device_id, (link, _) in self.devices.items()}

    def assertDeviceIn(self, device_id, ifname, pod=None):
        """The device is in the pod as ifname (by MAC) and gone from the node."""
        pod = pod or self.pod
        link, mac = self.devices[device_id]
        self.assertIsNone(self.node.link(link), "%s (%s) is still on the node" % (device_id, link))
        self.assertEqual(pod.mac(ifname), mac, "%s is not %s in the pod" % (ifname, device_id))

    def assertDevicesHome(self, *device_ids):
        """The devices (default: all) are on the node under their own names with their MACs."""
        for device_id in device_ids or self.devices:
            link, mac = self.devices[device_id]
            self.assertIsNotNone(self.node.link(link),
                                 "%s (%s) is not on the node" % (device_id, link))
            self.assertEqual(self.node.mac(link), mac, "%s is not %s" % (link, device_id))

    # ---- NADs and pods ---------------------------------------------------------------------------

    def sriov_conf(self, name, **extra):
        """A fake-sriov NAD config declaring the deviceID and CNIDeviceInfoFile capabilities."""
        conf = self.fake_conf("fake-sriov", name=name, deviceLinks=self.device_links(),
                              stateDir=self.sriov_state,
                              capabilities={"deviceID": True, "CNIDeviceInfoFile": True})
        conf.update(extra)
        return conf

    def add_sriov_nad(self, name, resource=RESOURCE, ns="default", **extra):
        """A NAD in ns whose annotation asks for one device of resource (None: no annotation)."""
        annotations = {} if resource is None else {RESOURCE_ANNOTATION: resource}
        self.api.add_nad(ns, name, self.sriov_conf(name, **extra), annotations=annotations)

    def add_device_pod(self, networks, **kw):
        """The test's pod on NODE with the networks annotation."""
        kw.setdefault("node_name", NODE)
        return self.add_pod({NETWORKS: networks}, **kw)

    # ---- configs ---------------------------------------------------------------------------------

    def write_devices_conf(self, **extra):
        """The k8s config with every device path in the test's tree (and any extra keys)."""
        keys = {"podResourcesSocket": self.socket_path,
                "kubeletCheckpointFile": self.checkpoint_path, "deviceInfoDir": self.devinfo_dir}
        keys.update(extra)
        return self.write_k8s(**keys)

    # ---- kubelet sources -------------------------------------------------------------------------

    def start_kubelet(self, pods, mode="ok", **mode_options):
        """The PodResources double on the test's socket, answering with pods (PodResources
        dicts)."""
        self.kubelet = PodResourcesDouble(self.socket_path)
        self.kubelet.set_pods(pods)
        if mode != "ok" or mode_options:
            self.kubelet.set_mode(mode, **mode_options)
        self.kubelet.start()
        self.addCleanup(self.kubelet.stop)
        return self.kubelet

    def list_calls(self):
        """The PodResources List calls the double received."""
        calls = self.kubelet.requests() if self.kubelet else []
        return [r for r in calls if r["method"] == LIST_METHOD]

    @staticmethod
    def kubelet_pod(name, devices, ns="default", container="app"):
        """A PodResources entry: devices maps resource -> device IDs (in the kubelet's order)."""
        return {"name": name, "namespace": ns, "containers": [{"name": container, "devices": [
            {"resource_name": r, "device_ids": ids} for r, ids in devices.items()]}]}

    @staticmethod
    def checkpoint_entry(uid, resource, ids, numa=True, container="app"):
        """One PodDeviceEntries element; numa: DeviceIDs as {"-1": ids}, else a flat list."""
        return {"PodUID": uid, "ContainerName": container, "ResourceName": resource,
                "DeviceIDs": {"-1": ids} if numa else ids, "AllocResp": "CgA="}

    def write_checkpoint(self, entries=None, raw=None):
        """The checkpoint file: entries (a list) in the kubelet's shape, or raw (str/bytes/JSON)."""
        if raw is None:
            raw = {"Data": {"PodDeviceEntries": entries or [], "RegisteredDevices": {
                RESOURCE: sorted(self.devices)}}, "Checksum": 1234567890}
        if not isinstance(raw, (str, bytes)):
            raw = json.dumps(raw)
        with open(self.checkpoint_path, "wb") as f:
            f.write(raw.encode() if isinstance(raw, str) else raw)

    # ---- device-info files -----------------------------------------------------------------------

    def dp_info_path(self, device_id, resource=RESOURCE):
        """The device plugin's device-info file of a device ('/' -> '-' in the name)."""
        name = ("%s-%s-device.json" % (resource, device_id)).replace("/", "-")
        return os.path.join(self.devinfo_dir, "dp", name)

    def write_dp_info(self, device_id, content=None, resource=RESOURCE):
        """Writes the dp file: content is a dict (JSON), str or bytes; default pci_info."""
        content = pci_info(device_id) if content is None else content
        if isinstance(content, (dict, list)):
            content = json.dumps(content)
        with open(self.dp_info_path(device_id, resource), "wb") as f:
            f.write(content.encode() if isinstance(content, str) else content)

    def cni_info_path(self, nad, ifname, ns="default", container_id=None):
        """manifold's device-info file of an attachment: cni/<ns>-<nad>-<containerID>_<ifname>."""
        name = "%s/%s-%s_%s" % (ns, nad, container_id or self.container_id, ifname)
        return os.path.join(self.devinfo_dir, "cni", name.replace("/", "-"))

    def cni_info_files(self):
        """The files in deviceInfoDir/cni (none when the directory does not exist)."""
        d = os.path.join(self.devinfo_dir, "cni")
        return sorted(os.listdir(d)) if os.path.isdir(d) else []

    # ---- records, status, log --------------------------------------------------------------------

    def sriov_records(self, command=None):
        """fake-sriov's recorded calls (of one command)."""
        return [r for r in self.tree.records()
                if r["plugin"] == "fake-sriov" and (command is None or r["command"] == command)]

    def status_entries(self):
        """The pod's network-status, parsed, by network name."""
        text = self.status_annotation()
        self.assertIsNotNone(text, "no network-status written")
        return {e["name"]: e for e in json.loads(text)}

    def log_text(self):
        """The whole of manifold's log."""
        return self.tree.log_tail(1 << 30)

    def assertWarned(self, *words):
        """Some warning line of manifold's log contains every word."""
        lines = [line for line in self.log_text().splitlines() if "warning: " in line]
        if not any(all(w in line for w in words) for line in lines):
            self.fail("no warning mentions %s; warnings:\n%s" % (words, "\n".join(lines)))

    def assertFileMode(self, path, mode):
        """path is a regular file with exactly these permission bits."""
        st = os.stat(path)
        self.assertTrue(stat.S_ISREG(st.st_mode), path)
        self.assertEqual(oct(st.st_mode & 0o7777), oct(mode), path)

    def assertNothingLeftBehind(self, pods=None):
        """assertNothingLeft, every device home, no device-info file and no fake-sriov state."""
        self.assertNothingLeft(*(pods or ()))
        self.assertDevicesHome()
        self.assertEqual(self.cni_info_files(), [], "device-info files left")
        state = sorted(os.listdir(self.sriov_state)) if os.path.isdir(self.sriov_state) else []
        self.assertEqual(state, [], "fake-sriov still holds devices")

    def assertDeviceError(self, run, code, *words):
        """The ADD failed with code, naming every word, and left nothing behind."""
        self.assertCniError(run, code)
        self.assertErrorMentions(run, *words)
        self.assertEqual(self.sriov_records("ADD"), [], "a device delegate ran")
        self.assertNothingLeftBehind()
