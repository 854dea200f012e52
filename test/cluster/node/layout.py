"""Where the test node keeps everything, and the fixed facts of its network.

The node lives in one directory on the machine (NodeLayout.root, default /var/tmp/manifold-node,
MANIFOLD_NODE_DIR to change it) and in namespaces of its own: a network namespace, in which every
component, the cluster bridge, the pods' host-side links and every iptables rule of the node exist,
and a mount namespace, in which directories of the node's tree are bound over the machine paths
that the kubelet, containerd and the CNI plugins use (/run, /var/lib, /var/log, /opt,
/etc/cni/net.d). So the DaemonSet's hostPath volumes (/opt/cni/bin, /etc/cni/net.d, /var/lib/cni,
/run/netns) are the node's own directories, as on a real node, while the machine's are never
touched. Everything the node creates outside that directory is one cgroup subtree per hierarchy
(NodeLayout.cgroup, holding the node's processes and its pods) and, if the machine lacks it, the
empty /etc/cni/net.d bind target; `down` removes both.
"""
import json
import os

NODE_NAME = "manifold-node"
# The node's own addresses: they exist only inside its network namespace.
NODE_IP = "172.30.0.2"
NODE_PREFIX = 24
POD_SUBNET = "10.244.0.0/24"
POD_GATEWAY = "10.244.0.1"
CLUSTER_CIDR = "10.244.0.0/16"
SERVICE_CIDR = "10.96.0.0/16"
KUBERNETES_SERVICE_IP = "10.96.0.1"
API_PORT = 6443
ETCD_CLIENT = "http://127.0.0.1:2379"
BRIDGE = "cni0"
CLUSTER_NETWORK = "cluster"
KUBERNETES_VERSION = "v1.34.4"
# Images built locally (no registry): the sandbox image under exactly containerd's sandbox_image.
PAUSE_IMAGE = "localhost/manifold-test/pause:1"
BUSYBOX_IMAGE = "localhost/manifold-test/busybox:1"
CONTAINERD_NAMESPACE = "k8s.io"
CONTAINERD_SOCKET = "/run/containerd/containerd.sock"

# Machine paths replaced, inside the node's mount namespace, by directories of the node's tree
# (the key is the tree's subdirectory). /etc/cni/net.d last: its parent /etc is the machine's.
BINDS = (("run", "/run"), ("var-lib", "/var/lib"), ("var-log", "/var/log"), ("opt", "/opt"),
         ("cni-conf", "/etc/cni/net.d"))
SHADOWED = tuple(target for _, target in BINDS)

DEFAULT_ROOT = "/var/tmp/manifold-node"


class NodeLayout:
    """Paths of one node's tree; root must not lie below a path the mount namespace replaces."""

    def __init__(self, root=None):
        self.root = os.path.abspath(root or os.environ.get("MANIFOLD_NODE_DIR") or DEFAULT_ROOT)
        for target in SHADOWED:
            if self.root == target or self.root.startswith(target + "/"):
                raise ValueError("node directory %s lies below %s, which the node's mount "
                                 "namespace replaces" % (self.root, target))
        # One cgroup per node tree, named after it, so two trees never share one.
        self.cgroup = "manifold-node-" + os.path.basename(self.root).replace(".", "-")

    def path(self, *parts):
        """A path inside the tree."""
        return os.path.join(self.root, *parts)

    @property
    def pki(self):
        return self.path("pki")

    @property
    def logs(self):
        return self.path("logs")

    @property
    def bin(self):
        return self.path("bin")

    @property
    def state_file(self):
        return self.path("state.json")

    def bind_source(self, name):
        return self.path("mounts", name)

    def inside(self, machine_path):
        """Where a path of the node's mount namespace is in the tree, seen from the machine
        (e.g. /var/lib/cni/manifold -> <root>/mounts/var-lib/cni/manifold)."""
        for name, target in sorted(BINDS, key=lambda b: -len(b[1])):
            if machine_path == target or machine_path.startswith(target + "/"):
                return self.bind_source(name) + machine_path[len(target):]
        return machine_path

    def kubeconfig(self, user):
        return self.path("kubeconfig", user + ".kubeconfig")

    @property
    def admin_kubeconfig(self):
        return self.kubeconfig("admin")

    @property
    def static_pods(self):
        return self.path("manifests")

    def read_state(self):
        """The state `up` recorded (holder pid, namespace identities, snapshot), or None."""
        try:
            with open(self.state_file, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def write_state(self, state):
        tmp = self.state_file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(state, f, indent=1)
        os.rename(tmp, self.state_file)
