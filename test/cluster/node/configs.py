"""The command lines and configuration files of the node's components.

Every component runs in the node's network and mount namespaces (node/namespaces.py), so they talk
over the node's loopback and its own address, and the kubelet, containerd and the CNI plugins find
the standard paths (/var/lib/kubelet, /run/containerd, /opt/cni/bin, /etc/cni/net.d, /var/lib/cni,
/run/netns) in the node's tree. Files the components only read stay in the tree at their own paths.
"""
import json
import os

from node import layout

# Everything manifold's ServiceAccount does reaches the audit log (the CNI binary and the agent
# use it alike); other users' requests are not logged, so the file stays small.
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: ["system:serviceaccount:kube-system:manifold"]
- level: None
"""


def etcd(node, bins):
    return [os.path.join(bins, "etcd"), "--name", layout.NODE_NAME,
            "--data-dir", node.path("etcd"),
            "--listen-client-urls", layout.ETCD_CLIENT, "--advertise-client-urls", layout.ETCD_CLIENT,
            "--listen-peer-urls", "http://127.0.0.1:2380",
            "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
            "--initial-cluster", "%s=http://127.0.0.1:2380" % layout.NODE_NAME,
            # A test cluster's data need not survive a power cut: no fsync, far less I/O.
            "--unsafe-no-fsync", "--log-level", "warn"]


def apiserver(node, bins):
    pki = node.pki
    with open(node.path("audit-policy.yaml"), "w", encoding="utf-8") as f:
        f.write(AUDIT_POLICY)
    return [os.path.join(bins, "kube-apiserver"),
            "--etcd-servers", layout.ETCD_CLIENT,
            "--advertise-address", layout.NODE_IP, "--bind-address", "0.0.0.0",
            "--secure-port", str(layout.API_PORT),
            "--service-cluster-ip-range", layout.SERVICE_CIDR,
            "--client-ca-file", os.path.join(pki, "ca.crt"),
            "--tls-cert-file", os.path.join(pki, "apiserver.crt"),
            "--tls-private-key-file", os.path.join(pki, "apiserver.key"),
            "--kubelet-client-certificate", os.path.join(pki, "apiserver-kubelet-client.crt"),
            "--kubelet-client-key", os.path.join(pki, "apiserver-kubelet-client.key"),
            "--kubelet-certificate-authority", os.path.join(pki, "ca.crt"),
            "--kubelet-preferred-address-types", "InternalIP",
            "--authorization-mode", "Node,RBAC",
            "--enable-admission-plugins", "NodeRestriction,ServiceAccount",
            "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file", os.path.join(pki, "sa.pub"),
            "--service-account-signing-key-file", os.path.join(pki, "sa.key"),
            "--allow-privileged=true",
            "--audit-policy-file", node.path("audit-policy.yaml"),
            "--audit-log-path", node.path("logs", "audit.log"),
            "--cert-dir", node.path("apiserver-certs"), "--profiling=false"]


def controller_manager(node, bins):
    pki = node.pki
    kubeconfig = node.kubeconfig("controller-manager")
    return [os.path.join(bins, "kube-controller-manager"),
            "--kubeconfig", kubeconfig, "--authentication-kubeconfig", kubeconfig,
            "--authorization-kubeconfig", kubeconfig,
            "--root-ca-file", os.path.join(pki, "ca.crt"),
            "--service-account-private-key-file", os.path.join(pki, "sa.key"),
            "--use-service-account-credentials=true",
            "--cluster-signing-cert-file", os.path.join(pki, "ca.crt"),
            "--cluster-signing-key-file", os.path.join(pki, "ca.key"),
            "--service-cluster-ip-range", layout.SERVICE_CIDR,
            # Its default, /usr/libexec/kubernetes/…, is the machine's: the probe creates it.
            "--flex-volume-plugin-dir", node.path("volume-plugins"),
            "--bind-address", "127.0.0.1", "--leader-elect=false", "--profiling=false"]


def scheduler(node, bins):
    kubeconfig = node.kubeconfig("scheduler")
    return [os.path.join(bins, "kube-scheduler"), "--kubeconfig", kubeconfig,
            "--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig,
            "--bind-address", "127.0.0.1", "--leader-elect=false", "--profiling=false"]


def containerd(node):
    """containerd 1.6's config (its own root and state in the tree; the CRI plugin with the
    cgroupfs driver, the locally built sandbox image and the standard CNI paths)."""
    text = CONTAINERD_CONFIG % dict(root=node.path("containerd", "root"),
                                    state=node.path("containerd", "state"),
                                    socket=layout.CONTAINERD_SOCKET, pause=layout.PAUSE_IMAGE,
                                    opt=node.path("containerd", "opt"))
    path = node.path("containerd", "config.toml")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return ["containerd", "--config", path]


CONTAINERD_CONFIG = """version = 2
root = "%(root)s"
state = "%(state)s"
[grpc]
  address = "%(socket)s"
[ttrpc]
  address = "%(socket)s.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "%(opt)s"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "%(pause)s"
  disable_apparmor = true
  enable_selinux = false
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/opt/cni/bin"
    conf_dir = "/etc/cni/net.d"
    max_conf_num = 1
"""


def kubelet(node, bins):
    pki = node.pki
    resolv = node.path("resolv.conf")
    with open(resolv, "w", encoding="utf-8") as f:
        f.write("nameserver 127.0.0.1\n")
    os.makedirs(node.static_pods, exist_ok=True)
    config = KUBELET_CONFIG % dict(
        ca=os.path.join(pki, "ca.crt"), cert=os.path.join(pki, "kubelet-serving.crt"),
        key=os.path.join(pki, "kubelet-serving.key"), cgroup_root="/" + node.cgroup,
        socket=layout.CONTAINERD_SOCKET, static=node.static_pods, resolv=resolv,
        plugins=node.path("volume-plugins"))
    path = node.path("kubelet-config.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(config)
    return [os.path.join(bins, "kubelet"), "--config", path,
            "--kubeconfig", node.kubeconfig("kubelet"),
            "--hostname-override", layout.NODE_NAME, "--node-ip", layout.NODE_IP]


# Image GC never runs (there is no registry to pull a deleted image from again) and eviction
# thresholds are as low as they go: a busy shared CI machine must not evict the test's pods.
KUBELET_CONFIG = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: %(cgroup_root)s
containerRuntimeEndpoint: unix://%(socket)s
failSwapOn: false
staticPodPath: %(static)s
volumePluginDir: %(plugins)s
resolvConf: %(resolv)s
clusterDomain: cluster.local
tlsCertFile: %(cert)s
tlsPrivateKeyFile: %(key)s
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
oomScoreAdj: 0
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %(ca)s
authorization:
  mode: Webhook
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
  imagefs.inodesFree: "1%%"
serializeImagePulls: false
"""


def kube_proxy(node, bins):
    path = node.path("kube-proxy-config.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(KUBE_PROXY_CONFIG % dict(kubeconfig=node.kubeconfig("kube-proxy"),
                                         node=layout.NODE_NAME, cluster=layout.CLUSTER_CIDR))
    return [os.path.join(bins, "kube-proxy"), "--config", path]


# iptables mode. The conntrack settings are left alone (0): nf_conntrack_max is the machine's,
# not the namespace's. No NodePorts on localhost (that needs route_localnet).
KUBE_PROXY_CONFIG = """apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
hostnameOverride: %(node)s
clusterCIDR: %(cluster)s
clientConnection:
  kubeconfig: %(kubeconfig)s
bindAddress: 0.0.0.0
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
oomScoreAdj: 0
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
"""


def cluster_network():
    """The node's primary CNI config: a bridge with host-local IPAM and portmap, the cluster
    network that manifold's agent wraps in 00-manifold.conf."""
    return {"cniVersion": "1.0.0", "name": layout.CLUSTER_NETWORK, "plugins": [
        {"type": "bridge", "bridge": layout.BRIDGE, "isGateway": True, "ipMasq": True,
         "hairpinMode": True,
         "ipam": {"type": "host-local", "ranges": [[{"subnet": layout.POD_SUBNET,
                                                     "gateway": layout.POD_GATEWAY}]],
                  "routes": [{"dst": "0.0.0.0/0"}]}},
        {"type": "portmap", "capabilities": {"portMappings": True}}]}


def write_cluster_network(node):
    path = os.path.join(node.bind_source("cni-conf"), "10-%s.conflist" % layout.CLUSTER_NETWORK)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cluster_network(), f, indent=2)
