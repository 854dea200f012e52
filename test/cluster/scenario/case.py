"""The base of every scenario on the test node (Python unittest, standard library only).

Each test gets a namespace of its own with a unique name, in which it creates its pods and
NetworkAttachmentDefinitions; links it needs on the node (a veth pair as a macvlan master) come
from host_veth() and belong to the test. When the test ends, its namespace is deleted (every pod
in it stopped by the kubelet, so CNI DEL runs through manifold) and containerd must have removed
their sandboxes (the kubelet's later removal DELs each sandbox again), then the node must converge,
within a bounded wait, back to the state it had before the test: the same links, the same files
under /var/lib/cni (manifold's cache, host-local's reservations, libcni's results), the same pod
network namespaces and the same per-pod iptables rules. Only then are the test's own links
removed, and the links compared once more. A node that is not up skips the tests outside CI and
fails them under CI=true.
"""
import json
import os
import re
import sys
import unittest
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "integration"))

from harness import ci  # noqa: E402
from scenario.kube import NETWORKS, Cluster, NodeView  # noqa: E402
from node import layout  # noqa: E402

SLEEPER = ["/bin/sh", "-c", "trap 'exit 0' TERM; sleep 86400 & wait"]


class ClusterTestCase(unittest.TestCase):
    """A scenario: self.cluster (kubectl), self.view (the node's side), self.namespace."""

    cluster = None
    settle_timeout = 120

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cluster = Cluster()
        if not cluster.node.is_up():
            cls.cluster = None
            return
        cls.cluster = cluster
        cls.view = NodeView(cluster.node)

    def setUp(self):
        super().setUp()
        if self.cluster is None:
            ci.skip_or_fail(self, "the test node is not up (test/cluster/up.sh brings it up)")
        self._links = []
        self.namespace = self.unique("mf")
        self.cluster.kubectl("create", "namespace", self.namespace)
        self.addCleanup(self._finish)
        self.cluster.wait("the default ServiceAccount of " + self.namespace,
                          lambda: self.cluster.get("serviceaccount", "default", self.namespace,
                                                   check=False))
        self.baseline = self.view.state()

    @staticmethod
    def unique(prefix):
        """A name no other test uses (a DNS label, short enough for an interface name too)."""
        return "%s%s" % (prefix, uuid.uuid4().hex[:8])

    # -- objects --------------------------------------------------------------------------------

    def nad(self, name, config, namespace=None):
        """Creates a NetworkAttachmentDefinition whose spec.config is config (a dict)."""
        self.cluster.apply(json.dumps({
            "apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": name, "namespace": namespace or self.namespace},
            "spec": {"config": json.dumps(config)}}))

    def pod_manifest(self, name, annotations=None, image=layout.BUSYBOX_IMAGE, command=None):
        """A pod that runs until deleted (and stops at once on SIGTERM)."""
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": self.namespace,
                             "annotations": dict(annotations or {})},
                "spec": {"terminationGracePeriodSeconds": 5,
                         "containers": [{"name": "main", "image": image,
                                         "imagePullPolicy": "Never",
                                         "command": command or SLEEPER}]}}

    def create_pod(self, name, annotations=None, networks=None, wait=True, **kwargs):
        """Creates a pod (networks: the networks annotation's value) and waits until it is Ready."""
        annotations = dict(annotations or {})
        if networks is not None:
            annotations[NETWORKS] = networks if isinstance(networks, str) else json.dumps(networks)
        self.cluster.apply(json.dumps(self.pod_manifest(name, annotations, **kwargs)))
        if wait:
            self.cluster.wait_for("pod/" + name, "condition=Ready", self.namespace)
        return name

    def delete_pod(self, name):
        """Deletes a pod and waits until it is gone (the kubelet has stopped its sandbox)."""
        self.cluster.kubectl("delete", "pod", name, "-n", self.namespace, "--wait=true",
                             "--timeout=120s", timeout=150)

    def host_veth(self):
        """A veth pair in the node's network namespace, both ends up; returns the end to use
        (e.g. as a macvlan master). Removed after the test's leak check."""
        name = self.unique("mv")
        peer = name + "p"
        self.cluster.node.run(["ip", "link", "add", name, "type", "veth", "peer", "name", peer],
                              mount=False)
        self._links.append(name)
        for link in (name, peer):
            self.cluster.node.run(["ip", "link", "set", link, "up"], mount=False)
        self.baseline = dict(self.baseline, links=sorted(self.baseline["links"] + [name, peer]))
        return name

    # -- leak checks ----------------------------------------------------------------------------

    def assertNodeSettles(self, expected=None, what="the node's state"):
        """Waits (bounded) until the node's state is expected (default: the state before the
        test), then asserts it, so a leak fails with the difference."""
        expected = expected or self.baseline
        try:
            self.cluster.wait(what + " to return to its state before the test",
                              lambda: self.view.state() == expected, self.settle_timeout)
        except AssertionError:
            pass
        now = self.view.state()
        for key in expected:
            self.assertEqual(now[key], expected[key], "%s: %s differs%s" % (
                what, key, self._manifold_log(set(now[key]) ^ set(expected[key]))))

    def _manifold_log(self, items):
        """manifold.log's lines about the containers named in the differing items (for a leak's
        failure message)."""
        ids = {m[:12] for item in items for m in re.findall(r"[0-9a-f]{64}", item)}
        if not ids:
            return ""
        path = self.cluster.node.layout.inside("/var/log/manifold.log")
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = [line for line in f if any(i in line for i in ids)]
        except OSError:
            return ""
        return "; manifold.log about them:\n" + "".join(lines[-40:])

    def _finish(self):
        self.cluster.kubectl("delete", "namespace", self.namespace, "--wait=true",
                             "--timeout=180s", timeout=210)
        # The kubelet DELs a deleted pod's sandbox again when it removes it (its sandbox garbage
        # collection, tens of seconds later): wait for that too, so whatever those DELs leave is
        # this test's.
        self.cluster.wait("containerd to remove the sandboxes of " + self.namespace,
                          lambda: not self.view.containers(self.namespace), timeout=240,
                          interval=2)
        self.assertNodeSettles(what="after the namespace's deletion, the node")
        for link in self._links:
            self.cluster.node.run(["ip", "link", "delete", link], mount=False)
        owned = {l for name in self._links for l in (name, name + "p")}
        self.assertEqual(self.view.links(), sorted(set(self.baseline["links"]) - owned))


def main():
    """Runs the calling file's tests (unittest) and exits as the integration tests do."""
    ci.run_unittest()
