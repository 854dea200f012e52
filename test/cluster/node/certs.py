"""The node's PKI, made with the openssl command line, and the kubeconfigs that use it.

One CA signs every certificate: the API server's serving certificate (names and addresses under
which the node's clients reach it: the node IP, the `kubernetes` ClusterIP, localhost), the
kubelet's serving certificate (the API server verifies it for exec and logs), and one client
certificate per identity, whose CN and O are the user and group the API server's authorizers see:
kubernetes-admin in system:masters (kubectl), system:kube-controller-manager, system:kube-scheduler,
system:kube-proxy, system:node:<node> in system:nodes (the Node authorizer and NodeRestriction),
and the API server's own client certificate towards the kubelet. The service-account token signing
key pair is separate (sa.key signs, sa.pub verifies).
"""
import os
import subprocess

from node import layout

DAYS = "3650"


def _openssl(*args):
    subprocess.run(["openssl", *args], check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _key(path):
    _openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path)
    os.chmod(path, 0o600)


def _sign(pki, name, subject, extensions):
    """A key and a certificate for subject, signed by the CA, with the given v3 extensions."""
    key, csr, crt = (os.path.join(pki, name + ext) for ext in (".key", ".csr", ".crt"))
    ext_file = os.path.join(pki, name + ".ext")
    _key(key)
    _openssl("req", "-new", "-key", key, "-subj", subject, "-out", csr)
    with open(ext_file, "w", encoding="utf-8") as f:
        f.write("\n".join(extensions) + "\n")
    _openssl("x509", "-req", "-in", csr, "-CA", os.path.join(pki, "ca.crt"),
             "-CAkey", os.path.join(pki, "ca.key"), "-CAcreateserial", "-days", DAYS,
             "-sha256", "-extfile", ext_file, "-out", crt)
    os.unlink(csr)
    os.unlink(ext_file)


def _client(pki, name, user, group=None):
    subject = "/CN=" + user + ("/O=" + group if group else "")
    _sign(pki, name, subject, ["basicConstraints=CA:FALSE",
                               "keyUsage=critical,digitalSignature,keyEncipherment",
                               "extendedKeyUsage=clientAuth"])


def _server(pki, name, cn, names, addresses):
    alt = ",".join(["DNS:" + n for n in names] + ["IP:" + a for a in addresses])
    _sign(pki, name, "/CN=" + cn, ["basicConstraints=CA:FALSE",
                                   "keyUsage=critical,digitalSignature,keyEncipherment",
                                   "extendedKeyUsage=serverAuth", "subjectAltName=" + alt])


# (file stem, user, group) of every client identity; the stem also names its kubeconfig.
CLIENTS = (("admin", "kubernetes-admin", "system:masters"),
           ("controller-manager", "system:kube-controller-manager", None),
           ("scheduler", "system:kube-scheduler", None),
           ("kube-proxy", "system:kube-proxy", None),
           ("kubelet", "system:node:" + layout.NODE_NAME, "system:nodes"),
           ("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters"))


def make_pki(node):
    """Writes the CA, every certificate and key, and the service-account key pair."""
    pki = node.pki
    os.makedirs(pki, mode=0o700)
    _key(os.path.join(pki, "ca.key"))
    _openssl("req", "-x509", "-new", "-key", os.path.join(pki, "ca.key"), "-subj",
             "/CN=manifold-test-node-ca", "-days", DAYS, "-sha256",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
             "-out", os.path.join(pki, "ca.crt"))
    _server(pki, "apiserver", "kube-apiserver",
            ["kubernetes", "kubernetes.default", "kubernetes.default.svc",
             "kubernetes.default.svc.cluster.local", "localhost", layout.NODE_NAME],
            [layout.NODE_IP, layout.KUBERNETES_SERVICE_IP, "127.0.0.1"])
    _server(pki, "kubelet-serving", "system:node:" + layout.NODE_NAME, [layout.NODE_NAME],
            [layout.NODE_IP])
    for stem, user, group in CLIENTS:
        _client(pki, stem, user, group)
    _key(os.path.join(pki, "sa.key"))
    _openssl("pkey", "-in", os.path.join(pki, "sa.key"), "-pubout",
             "-out", os.path.join(pki, "sa.pub"))


def write_kubeconfigs(node):
    """One kubeconfig per client identity, referencing the PKI files, for the API server at the
    node IP (every component runs in the node's network namespace)."""
    os.makedirs(os.path.dirname(node.admin_kubeconfig), exist_ok=True)
    server = "https://%s:%d" % (layout.NODE_IP, layout.API_PORT)
    for stem, user, _ in CLIENTS:
        if stem == "apiserver-kubelet-client":
            continue
        text = KUBECONFIG % dict(server=server, ca=os.path.join(node.pki, "ca.crt"), user=user,
                                 cert=os.path.join(node.pki, stem + ".crt"),
                                 key=os.path.join(node.pki, stem + ".key"))
        with open(node.kubeconfig(stem), "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(node.kubeconfig(stem), 0o600)


KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: manifold-node
  cluster:
    server: %(server)s
    certificate-authority: %(ca)s
users:
- name: %(user)s
  user:
    client-certificate: %(cert)s
    client-key: %(key)s
contexts:
- name: manifold-node
  context:
    cluster: manifold-node
    user: %(user)s
current-context: manifold-node
"""
