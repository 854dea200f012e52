"""`up`: brings the node up, then installs manifold on it as an operator does.

Order: snapshot of the machine; PKI and kubeconfigs; the node's cgroup and namespaces; the CNI
plugins and the cluster network's config in the node's /opt/cni/bin and /etc/cni/net.d; etcd and
the API server (until /readyz answers); the controller manager and the scheduler; containerd with
the locally built images; the kubelet (until the node is Ready) and kube-proxy. Then manifold:
its image built from conf/Containerfile and imported, `kubectl apply -f` of the two CRDs, the RBAC and
the DaemonSet (and `kubectl set image` if another image name is asked for), until the DaemonSet is
rolled out and its agent has installed the binary and written 00-manifold.conf.
"""
import json
import os
import shutil
import subprocess
import time

from node import certs, configs, images, layout, namespaces, snapshot
from node.control import Node, wait_until
from node.namespaces import NodeError

TOOLS = ("containerd", "containerd-shim-runc-v2", "runc", "ctr", "podman", "unshare", "nsenter",
         "openssl", "iptables", "ip", "busybox")
CNI_PLUGINS = ("bridge", "host-local", "macvlan", "tuning", "host-device", "portmap", "static",
               "loopback")
MANIFESTS = ("network-attachment-definition-crd.yaml", "multi-network-policy-crd.yaml", "rbac.yaml",
             "manifold-daemonset.yaml")


def _check_prerequisites(bins, manifold_bin):
    if os.geteuid() != 0:
        raise NodeError("the node needs root")
    missing = [t for t in TOOLS if not shutil.which(t)]
    wanted = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet",
              "kube-proxy", "kubectl"] + [os.path.join("cni", p) for p in CNI_PLUGINS]
    missing += [os.path.join(bins, b) for b in wanted if not os.access(os.path.join(bins, b), os.X_OK)]
    if manifold_bin and not os.access(manifold_bin, os.X_OK):
        missing.append(manifold_bin)
    if missing:
        raise NodeError("missing: %s (test/install-deps.sh installs the tools, "
                        "test/cluster/build.sh builds the node's binaries)" % ", ".join(missing))


def _prepare_tree(node, bins):
    """The tree, the snapshot and the machine paths up creates (recorded before anything else)."""
    if os.path.lexists(node.layout.root):
        raise NodeError("%s exists: the node is up or was not torn down (run down first)" %
                        node.layout.root)
    before = snapshot.take()
    os.makedirs(node.layout.logs)
    node.state = {"bins": bins, "snapshot": before, "created": [], "components": {}}
    for path in ("/etc/cni", "/etc/cni/net.d"):
        if not os.path.isdir(path):
            os.mkdir(path)
            node.state["created"].append(path)
    node.save()


def _start(node, name, argv):
    node.start_component(name, argv)


def _start_namespaces(node):
    namespaces.make_cgroups(node.layout)
    holder = namespaces.start_holder(node.layout)
    node.state["holder"] = holder
    node.state["identities"] = list(namespaces.identities(holder))
    node.save()


def _install_cni(node, bins):
    target = os.path.join(node.layout.bind_source("opt"), "cni", "bin")
    os.makedirs(target)
    for plugin in CNI_PLUGINS:
        shutil.copy2(os.path.join(bins, "cni", plugin), os.path.join(target, plugin))
    configs.write_cluster_network(node.layout)


def _control_plane(node, bins):
    tree = node.layout
    _start(node, "etcd", configs.etcd(tree, bins))
    _start(node, "kube-apiserver", configs.apiserver(tree, bins))
    wait_until("the API server's /readyz", lambda: node.kubectl(
        "get", "--raw=/readyz", check=False).stdout.strip() == "ok", 180, alive=node.check_alive)
    _start(node, "kube-controller-manager", configs.controller_manager(tree, bins))
    _start(node, "kube-scheduler", configs.scheduler(tree, bins))


def _runtime(node):
    tree = node.layout
    node.start_containerd()
    for archive, name in images.build_archives(tree):
        images.import_archive(node.holder, archive, name)
        os.unlink(archive)


def _kubelet(node, bins):
    _start(node, "kubelet", configs.kubelet(node.layout, bins))
    _start(node, "kube-proxy", configs.kube_proxy(node.layout, bins))
    wait_until("the node to register", lambda: node.kubectl(
        "get", "node", layout.NODE_NAME, check=False).returncode == 0, 120, alive=node.check_alive)
    node.kubectl("wait", "node/" + layout.NODE_NAME, "--for=condition=Ready", "--timeout=180s",
                 timeout=200)
    # Pods can be created in a namespace once its default ServiceAccount exists.
    wait_until("the default ServiceAccount", lambda: node.kubectl(
        "get", "serviceaccount", "default", check=False).returncode == 0, 120,
        alive=node.check_alive)


def install_manifold(node, manifold_bin, image=None):
    """Builds and imports manifold's image and applies conf/ as the README says; waits until the
    agent has installed the binary and written 00-manifold.conf."""
    default = images.daemonset_image()
    archive = images.build_manifold(node.layout, node.holder, manifold_bin, image or default)
    images.import_archive(node.holder, archive, image or default)
    os.unlink(archive)
    args = ["apply"]
    for name in MANIFESTS:
        args += ["-f", os.path.join(images.REPO, "conf", name)]
    node.kubectl(*args)
    if image and image != default:
        node.kubectl("-n", "kube-system", "set", "image", "daemonset/manifold", "agent=" + image)
    node.kubectl("-n", "kube-system", "rollout", "status", "daemonset/manifold",
                 "--timeout=180s", timeout=200)
    binary = os.path.join(node.layout.bind_source("opt"), "cni", "bin", "manifold")
    wait_until("the agent to write 00-manifold.conf(list) and install the binary",
               lambda: generated_config(node.layout) and os.path.exists(binary), 120,
               alive=node.check_alive)


WARM_UP_POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "manifold-node-warm-up", "namespace": "default"},
    "spec": {"terminationGracePeriodSeconds": 0, "containers": [{
        "name": "main", "image": layout.BUSYBOX_IMAGE, "imagePullPolicy": "Never",
        "command": ["/bin/sleep", "3600"],
        "ports": [{"containerPort": 8080, "hostPort": 18080}]}]}}


def warm_up(node):
    """One pod with a hostPort started and deleted, so the node-wide state a first pod creates once
    and keeps (the cluster bridge cni0, portmap's CNI-HOSTPORT-* chains, manifold's TLS session
    cache) exists before any scenario takes its baseline, as on a node that has run pods; and a
    check that pods get their network through manifold at all."""
    node.kubectl("apply", "-f", "-", input=json.dumps(WARM_UP_POD))
    node.kubectl("wait", "pod/manifold-node-warm-up", "--for=condition=Ready", "--timeout=120s",
                 timeout=150)
    pod = json.loads(node.kubectl("get", "pod", "manifold-node-warm-up", "-o", "json").stdout)
    if "k8s.v1.cni.cncf.io/network-status" not in pod["metadata"].get("annotations", {}):
        raise NodeError("the warm-up pod has no network-status: manifold did not attach it")
    node.kubectl("delete", "pod", "manifold-node-warm-up", "--wait=true", "--timeout=120s",
                 timeout=150)
    # The pod's object goes before its sandbox: wait until the kubelet's CNI DEL went through.
    wait_until("the warm-up pod's CNI DEL", lambda: not _pod_network_state(node.layout), 120,
               alive=node.check_alive)


def _pod_network_state(tree):
    """Pods' entries in manifold's cache and host-local's reservations of the cluster network."""
    cache = tree.inside("/var/lib/cni/manifold")
    reservations = tree.inside("/var/lib/cni/networks/" + layout.CLUSTER_NETWORK)
    out = [n for n in os.listdir(cache) if not n.startswith(".")] if os.path.isdir(cache) else []
    if os.path.isdir(reservations):
        out += [n for n in os.listdir(reservations)
                if n != "lock" and not n.startswith("last_reserved_ip")]
    return out


def generated_config(tree):
    """The path of the config manifold's agent generated in the node's /etc/cni/net.d (.conflist
    for a cniVersion >= 1.0.0 primary, as the Multus installer does), or None."""
    for name in ("00-manifold.conf", "00-manifold.conflist"):
        path = os.path.join(tree.bind_source("cni-conf"), name)
        if os.path.exists(path):
            return path
    return None


def up(tree, bins, manifold_bin=None, image=None):
    """Brings the node up (and installs manifold unless manifold_bin is None); returns the Node."""
    node = Node(tree)
    started = time.monotonic()
    _check_prerequisites(bins, manifold_bin)
    _prepare_tree(node, bins)
    certs.make_pki(node.layout)
    certs.write_kubeconfigs(node.layout)
    _start_namespaces(node)
    _install_cni(node, bins)
    _control_plane(node, bins)
    _runtime(node)
    _kubelet(node, bins)
    print("node up in %.0f s" % (time.monotonic() - started), flush=True)
    if manifold_bin:
        install_manifold(node, manifold_bin, image)
        warm_up(node)
        print("manifold installed in %.0f s" % (time.monotonic() - started), flush=True)
    return node

