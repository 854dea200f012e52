#!/usr/bin/env python3
"""Devices through the real kubelet: a device plugin of ours (modules/deviceplugin, the kubelet's
deviceplugin v1beta1 API) registers manifold.test/veth backed by veth ends of the node; a NAD
annotated with that resourceName runs host-device; two pods each request one device. Each gets
exactly the device the kubelet allocated to it — manifold asks the kubelet's real PodResources API
which one, and host-device moves that veth end into the pod as net1 — with the device plugin's
device-info in its network-status; on delete every device is back on the node under its own name.

host-device finds a device by the ID manifold gives it as `pciBusID`, through
/sys/bus/pci/devices/<ID>/net/: the node has no spare NICs, so its mount namespace gets a copy of
that directory (a tmpfs holding the machine's entries, links to the same devices) with one entry
per veth end under a PCI-style address. Nothing else about the path is faked: the kubelet, its
device manager and PodResources, manifold and host-device are the real ones.
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from node import layout  # noqa: E402
from scenario.case import ClusterTestCase, main  # noqa: E402

RESOURCE = "manifold.test/veth"
PCI = "/sys/bus/pci/devices"
HERE = os.path.dirname(os.path.abspath(__file__))


def plugin_binary():
    run = subprocess.run(["bash", os.path.join(HERE, "build-module.sh"), "deviceplugin"],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=1800)
    if run.returncode != 0:
        raise AssertionError("build-module.sh deviceplugin failed:\n" + run.stderr)
    return os.path.join(run.stdout.strip(), "manifold-test-device-plugin")


class DevicesThroughTheKubelet(ClusterTestCase):
    """Each pod gets exactly its device, found through PodResources, and gives it back."""

    def test_each_pod_gets_its_allocated_device(self):
        devices = {"0000:fe:00.%d" % i: self.host_veth() for i in (1, 2)}
        macs = {address: self._mac(link) for address, link in devices.items()}
        self._fake_pci(devices)
        self._start_plugin(plugin_binary(), sorted(devices))
        self.cluster.wait("the node to advertise %s" % RESOURCE, lambda: self.cluster.get(
            "node", layout.NODE_NAME)["status"].get("allocatable", {}).get(RESOURCE) == "2",
            timeout=60)
        self.cluster.apply(json.dumps({
            "apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": "hostdev", "namespace": self.namespace,
                         "annotations": {"k8s.v1.cni.cncf.io/resourceName": RESOURCE}},
            "spec": {"config": json.dumps({
                "cniVersion": "1.0.0", "name": "hostdev-" + self.namespace, "type": "host-device",
                "ipam": {"type": "host-local", "ranges": [[{
                    "subnet": "203.0.113.0/24", "rangeStart": "203.0.113.10",
                    "rangeEnd": "203.0.113.19"}]]}})}}))
        for pod in ("left", "right"):
            self._create_device_pod(pod)
        allocated = {}
        for pod in ("left", "right"):
            self.cluster.wait_for("pod/" + pod, "condition=Ready", self.namespace)
            allocated[pod] = self._check_device(pod, devices, macs)
        self.assertEqual(sorted(allocated.values()), sorted(devices))
        links = self.view.links()
        for address, link in devices.items():
            self.assertNotIn(link, links, "%s (%s) is still on the node" % (link, address))

        for pod in ("left", "right"):
            self.delete_pod(pod)
            link = devices[allocated[pod]]
            self.cluster.wait("%s back on the node" % link, lambda: link in self.view.links(),
                              timeout=120)
            self.assertEqual(self._mac(link), macs[allocated[pod]])
        devinfo = self.cluster.node.layout.inside("/run/k8s.cni.cncf.io/devinfo/cni")
        self.assertEqual(os.listdir(devinfo) if os.path.isdir(devinfo) else [], [])

    # -- the node's side ------------------------------------------------------------------------

    def _mac(self, link):
        out = self.cluster.node.run(["ip", "-o", "link", "show", "dev", link], mount=False).stdout
        return re.search(r"link/ether (\S+)", out).group(1)

    def _fake_pci(self, devices):
        """The node's /sys/bus/pci/devices: the machine's entries plus one per veth end."""
        script = ["set -e", "tmp=$(mktemp -d)", "cp -a %s/. $tmp/" % PCI,
                  "mount -t tmpfs -o mode=0755 manifold-test-pci %s" % PCI,
                  "cp -a $tmp/. %s/" % PCI, "rm -rf $tmp", "mkdir -p %s/.drivers/veth" % PCI]
        for address, link in devices.items():
            script += ["mkdir -p %s/%s/net/%s" % (PCI, address, link),
                       "ln -s ../.drivers/veth %s/%s/driver" % (PCI, address)]
        self.cluster.node.run(["sh", "-c", "\n".join(script)])
        self.addCleanup(self.cluster.node.run, ["umount", PCI])
        # Before the entries go (cleanups run last first): host-device's DEL needs them too.
        self.addCleanup(self.cluster.kubectl, "delete", "pods", "--all", "-n", self.namespace,
                        "--wait=true", "--timeout=120s", timeout=150)

    def _start_plugin(self, binary, ids):
        log = open(self.cluster.node.layout.path("logs", "device-plugin-%s.log" % self.namespace),
                   "w", encoding="utf-8")
        self.addCleanup(log.close)
        proc = subprocess.Popen(self.cluster.node.argv([binary, "-resource", RESOURCE,
                                                        "-devices", ",".join(ids)]),
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(self._stop_plugin, proc, ids)

    def _stop_plugin(self, proc, ids):
        proc.terminate()
        proc.wait(timeout=30)
        dp = self.cluster.node.layout.inside("/run/k8s.cni.cncf.io/devinfo/dp")
        for name in os.listdir(dp) if os.path.isdir(dp) else []:
            os.unlink(os.path.join(dp, name))

    # -- the pods -------------------------------------------------------------------------------

    def _create_device_pod(self, name):
        manifest = self.pod_manifest(name, {"k8s.v1.cni.cncf.io/networks": "hostdev"})
        manifest["spec"]["containers"][0]["resources"] = {"limits": {RESOURCE: "1"},
                                                          "requests": {RESOURCE: "1"}}
        self.cluster.apply(json.dumps(manifest))

    def _check_device(self, pod, devices, macs):
        """The pod's net1 is the device the kubelet allocated to it; returns that device's ID."""
        address = self.cluster.exec(self.namespace, pod, "sh", "-c",
                                    "echo $MANIFOLD_TEST_DEVICES").stdout.strip()
        self.assertIn(address, devices, "the kubelet allocated %r" % address)
        link = self.cluster.exec(self.namespace, pod, "ip", "-o", "link", "show", "net1").stdout
        self.assertIn("link/ether " + macs[address], link, "net1 is not %s" % devices[address])
        status = self.cluster.network_status(self.namespace, pod)
        self.assertEqual([s["interface"] for s in status], ["eth0", "net1"], status)
        self.assertEqual(status[1]["mac"], macs[address], status[1])
        self.assertEqual(status[1]["device-info"], {"type": "pci", "version": "1.1.0",
                                                    "pci": {"pci-address": address}}, status[1])
        path = self.cluster.node.layout.inside("/var/log/manifold.log")
        with open(path, encoding="utf-8", errors="replace") as f:
            found = [line for line in f if "devices of pod %s/%s from the kubelet's PodResources: "
                     "%s [%s]" % (self.namespace, pod, RESOURCE, address) in line]
        self.assertTrue(found, "manifold did not take %s's device from PodResources" % pod)
        return address


if __name__ == "__main__":
    main()
