"""kubectl, as the scenarios use it, against the running test node, and what the node itself holds.

Everything goes through the node's own kubectl (v1.34) with the admin kubeconfig, in the node's
network namespace: apply YAML, read objects as JSON, wait for a condition (kubectl wait, or a
bounded poll of any predicate: a test never sleeps and hopes), exec into a pod, read a pod's
network-status and its Events. NodeView reads the node's side (its links, its iptables rules, the
files under its /var/lib/cni) for the leak checks.
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from node.control import Node, wait_until  # noqa: E402,F401
from node import layout  # noqa: E402
from node.namespaces import NodeError  # noqa: E402

NETWORK_STATUS = "k8s.v1.cni.cncf.io/network-status"
NETWORKS = "k8s.v1.cni.cncf.io/networks"
# manifold's TLS session cache: one per node, kept across pods (not a pod's leftover).
TLS_CACHE = "manifold/.tls/"


class KubectlError(AssertionError):
    """A kubectl command failed; the message holds its output."""


class Cluster:
    """The running node, seen through kubectl."""

    def __init__(self, node=None):
        self.node = node or Node()

    def kubectl(self, *args, input=None, check=True, timeout=120):
        """Runs kubectl; returns its CompletedProcess (text); raises KubectlError if check."""
        try:
            return self.node.kubectl(*args, input=input, check=check, timeout=timeout)
        except NodeError as e:
            raise KubectlError(str(e)) from None

    def apply(self, text, namespace=None):
        """kubectl apply of YAML or JSON text."""
        args = ["apply", "-f", "-"] + (["-n", namespace] if namespace else [])
        return self.kubectl(*args, input=text)

    def get(self, kind, name=None, namespace=None, check=True):
        """An object (or a list) as a dict; None if absent and not check."""
        args = ["get", kind] + ([name] if name else []) + (["-n", namespace] if namespace else [])
        proc = self.kubectl(*args, "-o", "json", check=False)
        if proc.returncode != 0:
            if not check and "NotFound" in proc.stderr:
                return None
            raise KubectlError("kubectl get %s %s failed:\n%s" % (kind, name or "", proc.stderr))
        return json.loads(proc.stdout)

    def wait(self, what, predicate, timeout=120, interval=0.5):
        """Bounded poll of predicate until it returns a true value (which it returns)."""
        try:
            return wait_until(what, predicate, timeout, interval)
        except NodeError as e:
            raise AssertionError(str(e)) from None

    def wait_for(self, target, condition, namespace=None, timeout=180):
        """kubectl wait --for=<condition> (e.g. condition=Ready, delete) of target."""
        args = ["wait", target, "--for=" + condition, "--timeout=%ds" % timeout]
        self.kubectl(*args + (["-n", namespace] if namespace else []), timeout=timeout + 30)

    def exec(self, namespace, pod, *command, container=None, check=True):
        """kubectl exec of command in the pod; returns its CompletedProcess."""
        args = ["exec", "-n", namespace, pod] + (["-c", container] if container else [])
        return self.kubectl(*args + ["--"] + list(command), check=check)

    def annotations(self, namespace, pod):
        return self.get("pod", pod, namespace)["metadata"].get("annotations", {})

    def network_status(self, namespace, pod):
        """The pod's network-status annotation, parsed (a list), or None if it has none."""
        text = self.annotations(namespace, pod).get(NETWORK_STATUS)
        return json.loads(text) if text is not None else None

    def events(self, namespace, pod):
        """The Events whose involved object is the pod, oldest first."""
        listing = self.kubectl("get", "events", "-n", namespace, "-o", "json",
                               "--field-selector", "involvedObject.name=" + pod).stdout
        items = json.loads(listing)["items"]
        return sorted(items, key=lambda e: e.get("firstTimestamp") or e.get("eventTime") or "")

    def pod_addresses(self, namespace, pod, ifname):
        """The IPv4 addresses (CIDR) of ifname inside the pod, from busybox's `ip -o -4 addr`."""
        out = self.exec(namespace, pod, "ip", "-o", "-4", "addr", "show", "dev", ifname).stdout
        return re.findall(r"\sinet (\S+)", out)

    def pod_links(self, namespace, pod):
        """The link names inside the pod."""
        out = self.exec(namespace, pod, "ip", "-o", "link", "show").stdout
        return sorted(m.split("@")[0] for m in re.findall(r"^\d+: ([^:]+):", out, re.M))


class NodeView:
    """The node's side of the pods' networking, as the leak checks compare it."""

    def __init__(self, node):
        self.node = node

    def links(self):
        """Names of the links in the node's network namespace."""
        out = self.node.run(["ip", "-o", "link", "show"], mount=False).stdout
        return sorted(m.split("@")[0] for m in re.findall(r"^\d+: ([^:]+):", out, re.M))

    def cni_state(self):
        """Every file below the node's /var/lib/cni (manifold's cache, host-local's reservations,
        libcni's result cache) but host-local's own lock and last-reserved bookkeeping and
        manifold's TLS session cache."""
        root = self.node.layout.inside("/var/lib/cni")
        out = []
        for dirpath, _, files in os.walk(root):
            for name in files:
                if name == "lock" or name.startswith("last_reserved_ip"):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                if not rel.startswith(TLS_CACHE):
                    out.append(rel)
        return sorted(out)

    def netns(self):
        """The pod network namespaces containerd pinned in the node's /run/netns."""
        path = self.node.layout.inside("/run/netns")
        return sorted(os.listdir(path)) if os.path.isdir(path) else []

    def cni_rules(self):
        """iptables rules of the node that are not kube-proxy's or the kubelet's (KUBE-*): what the
        bridge's ipMasq, portmap and the like add per pod."""
        out = []
        for saver in ("iptables-save", "ip6tables-save"):
            text = self.node.run([saver], mount=False).stdout
            out += [re.sub(r"\[\d+:\d+\]", "", line) for line in text.splitlines()
                    if line and line[0] in ":-" and "KUBE-" not in line]
        return sorted(out)

    def containers(self, namespace):
        """IDs of the containers (sandboxes included) containerd still holds for the pods of a
        Kubernetes namespace: a deleted pod's sandbox goes only when the kubelet removes it, after
        its last CNI DEL."""
        label = 'labels."io.kubernetes.pod.namespace"==' + namespace
        return self.node.run(["ctr", "--address", layout.CONTAINERD_SOCKET, "-n",
                              layout.CONTAINERD_NAMESPACE, "containers", "list", "-q",
                              label]).stdout.split()

    def state(self):
        return {"links": self.links(), "cni": self.cni_state(), "netns": self.netns(),
                "rules": self.cni_rules()}
