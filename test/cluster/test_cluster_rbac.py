#!/usr/bin/env python3
"""manifold's account under the real RBAC authorizer: the token the installer gave the node (the
kubeconfig in /etc/cni/net.d/manifold.d/, as every CNI call on the node uses it) can read a pod,
write its status, read NADs and list MultiNetworkPolicies, and nothing that would let root on a node
take over other pods: updating or patching a pod, reading a secret, creating a NAD. Pods started
through manifold with that role get their networks, network-status and events (the reduced role is
enough), and `kubectl auth can-i` for the ServiceAccount agrees.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from scenario.case import ClusterTestCase, main  # noqa: E402

ACCOUNT = "system:serviceaccount:kube-system:manifold"
# The kubeconfig `manifold install` writes on the node (it references the token file and the CA).
NODE_KUBECONFIG = "/etc/cni/net.d/manifold.d/manifold.kubeconfig"


class ManifoldAccount(ClusterTestCase):
    """What the node's token may and may not do, asked of the real API server."""

    def as_manifold(self, *args, input=None):
        """kubectl with the node's manifold kubeconfig, inside the node (its token file path)."""
        kubectl = os.path.join(self.cluster.node.state["bins"], "kubectl")
        return self.cluster.node.run([kubectl, "--kubeconfig", NODE_KUBECONFIG, *args],
                                     check=False, input=input)

    def assertForbidden(self, proc, verb, resource):
        self.assertNotEqual(proc.returncode, 0, proc.stdout)
        self.assertIn("Forbidden", proc.stderr)
        self.assertIn('User "%s" cannot %s resource "%s"' % (ACCOUNT, verb, resource), proc.stderr)

    def test_the_node_token_writes_status_only(self):
        network = "mv-" + self.namespace
        master = self.host_veth()
        self.nad("macvlan", {"cniVersion": "1.0.0", "name": network, "type": "macvlan",
                             "master": master, "mode": "bridge",
                             "ipam": {"type": "static", "addresses": [{"address": "192.0.2.40/24"}]}})
        pod = self.create_pod("rbac", networks="macvlan")
        # Everything manifold did for the pod, it did with this role: the status and the event.
        status = self.cluster.network_status(self.namespace, pod)
        self.assertEqual([s["interface"] for s in status], ["eth0", "net1"])
        self.assertIn("AddedInterface", [e["reason"] for e in self.cluster.events(self.namespace, pod)])

        got = self.as_manifold("get", "pod", pod, "-n", self.namespace, "-o", "json")
        self.assertEqual(got.returncode, 0, got.stderr)
        obj = json.loads(got.stdout)
        self.assertEqual(self.as_manifold("get", "network-attachment-definitions", "macvlan", "-n",
                                          self.namespace).returncode, 0)
        self.assertEqual(self.as_manifold("get", "multi-networkpolicies", "-n", self.namespace).returncode, 0)

        # The status subresource: allowed (the same object written back).
        obj["metadata"]["annotations"]["k8s.v1.cni.cncf.io/network-status"] = json.dumps(status)
        put = self.as_manifold("replace", "--subresource=status", "-f", "-", input=json.dumps(obj))
        self.assertEqual(put.returncode, 0, put.stderr)

        # The pod itself: refused, by PUT and by PATCH, so its spec cannot be changed with this token.
        obj["metadata"]["labels"] = {"taken-over": "yes"}
        self.assertForbidden(self.as_manifold("replace", "-f", "-", input=json.dumps(obj)), "update", "pods")
        self.assertForbidden(self.as_manifold("label", "pod", pod, "-n", self.namespace, "taken-over=yes"),
                             "patch", "pods")
        self.assertNotIn("taken-over", self.cluster.get("pod", pod, self.namespace)["metadata"].get("labels", {}))
        self.assertForbidden(self.as_manifold("delete", "pod", pod, "-n", self.namespace, "--wait=false"),
                             "delete", "pods")
        self.assertForbidden(self.as_manifold("get", "secrets", "-n", "kube-system"), "list", "secrets")
        nad = {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
               "metadata": {"name": "planted", "namespace": self.namespace}, "spec": {"config": "{}"}}
        self.assertForbidden(self.as_manifold("create", "-f", "-", input=json.dumps(nad)), "create",
                             "network-attachment-definitions")

        # The authorizer's own answer for the ServiceAccount, asked by the admin.
        def can(verb, resource):
            kind, _, sub = resource.partition("/")
            proc = self.cluster.kubectl("auth", "can-i", verb, kind, "-n", self.namespace, "--as", ACCOUNT,
                                        *(["--subresource", sub] if sub else []), check=False)
            return proc.stdout.strip()
        self.assertEqual([can(v, r) for v, r in (("get", "pods"), ("watch", "pods"), ("update", "pods/status"),
                                                  ("create", "events"), ("update", "pods"), ("patch", "pods"),
                                                  ("patch", "pods/status"), ("get", "secrets"))],
                         ["yes", "yes", "yes", "yes", "no", "no", "no", "no"])
        self.delete_pod(pod)
        self.assertNodeSettles(what="after the pod's deletion, the node")


if __name__ == "__main__":
    main()
