"""Shared base of the Kubernetes end-to-end tests (test_k8s_*.py): the API server double, a way
for manifold to reach it from the test's node namespace, and helpers for pods, NADs and configs.

manifold runs inside the test's node namespace (see harness/testcase.py), whose loopback is not the
host's, while the API server double listens on the host's 127.0.0.1. A NetnsForwarder bridges the
two: it binds 127.0.0.1:<double's port> inside the node namespace and relays every connection,
byte for byte and one to one, to the double. TLS therefore runs end to end between manifold and the
double (the certificate's 127.0.0.1 SAN still matches), keep-alive reuse is preserved, and the
double's request log sees every request. Stopping the forwarder makes the API unreachable.

One double serves every test of a class (with the shipped Multus RBAC enforced, so a request
needing more than `pods`/`pods/status` get/update, NAD get/list and events create fails); setUp
resets its faults, logs, events, deny rules, tokens and options.
"""
import ctypes
import ctypes.util
import json
import os
import re
import socket
import sys
import threading

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
sys.path.insert(0, os.path.join(_HERE, "apiserver"))
sys.dont_write_bytecode = True

from apiserver_double import ApiServerDouble  # noqa: E402
from harness import MACVLAN_MASTER, ManifoldTestCase  # noqa: E402

NETWORKS = "k8s.v1.cni.cncf.io/networks"
DEFAULT_NETWORK = "v1.multus-cni.io/default-network"
NETWORK_STATUS = "k8s.v1.cni.cncf.io/network-status"
STATUS_PUT = r"/pods/[^/]+/status$"

_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def _setns(fd):
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, "setns: " + os.strerror(err))


def listen_in_netns(netns_path, port):
    """A TCP socket listening on 127.0.0.1:port inside the namespace at netns_path. Only the
    calling thread switches namespaces, and only for the socket's creation."""
    with open("/proc/thread-self/ns/net", "rb") as own, open(netns_path, "rb") as target:
        _setns(target.fileno())
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", port))
            sock.listen(64)
        finally:
            _setns(own.fileno())
    return sock


class NetnsForwarder:
    """Relays TCP connections made to 127.0.0.1:port in a namespace to 127.0.0.1:port here."""

    def __init__(self, netns_path, port):
        self.port = port
        self._listener = listen_in_netns(netns_path, port)
        self._lock = threading.Lock()
        self._sockets = set()
        self._stopped = False
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)
        self._thread.start()

    def _track(self, sock):
        with self._lock:
            if self._stopped:
                sock.close()
                return False
            self._sockets.add(sock)
            return True

    def _accept_loop(self):
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if not self._track(client):
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.port), timeout=10)
                upstream.settimeout(None)
            except OSError:
                self._close(client)
                continue
            if not self._track(upstream):
                self._close(client)
                return
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            self._close(src)
            self._close(dst)

    def _close(self, sock):
        with self._lock:
            self._sockets.discard(sock)
        try:
            sock.close()
        except OSError:
            pass

    def stop(self):
        """Stops listening and closes every relayed connection (the API becomes unreachable)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            sockets, self._sockets = list(self._sockets), set()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        self._thread.join(timeout=5)


def pod_cni_args(ns, name, uid, container_id):
    """The CNI_ARGS a kubelet passes for a pod."""
    return ("IgnoreUnknown=1;K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s;K8S_POD_INFRA_CONTAINER_ID=%s;"
            "K8S_POD_UID=%s" % (ns, name, container_id, uid))


def api_paths(entries):
    """(method, path) of each request-log entry, events excluded."""
    return [(e["method"], e["path"]) for e in entries if not e["path"].endswith("/events")]


def pod_path(ns, name):
    """The API path of a pod."""
    return "/api/v1/namespaces/%s/pods/%s" % (ns, name)


def nad_path(ns, name):
    """The API path of a NetworkAttachmentDefinition."""
    return "/apis/k8s.cni.cncf.io/v1/namespaces/%s/network-attachment-definitions/%s" % (ns, name)


class K8sTestCase(ManifoldTestCase):
    """ManifoldTestCase plus the API server double, reachable from the node namespace."""

    # The key type of the double's CA, server and client certificates ("ec": P-256, or "rsa").
    api_key_type = "ec"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.api = ApiServerDouble(rbac="manifold", key_type=cls.api_key_type)
        cls.api.start()
        cls.initial_tokens = cls.api.tokens()
        cls.initial_token = cls.api.token

    @classmethod
    def tearDownClass(cls):
        cls.api.stop()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        api = self.api
        api.clear_faults()
        api.clear_deny()
        api.set_rbac("manifold")
        api.set_options(strict_resource_version=True, tls_max_version="1.3")
        api.set_tokens(self.initial_tokens)
        api.token = self.initial_token
        api.clear_events()
        self.forwarder = NetnsForwarder(self.node.path, api.port)
        self.addCleanup(self.forwarder.stop)
        self.conf_dir = self.tree.path("multus.d")
        os.makedirs(self.conf_dir)
        self.kubeconfig = api.write_kubeconfig(self.tree.path("kubeconfig"), auth="token")
        # Every test has its own pod name, so pods of earlier tests never interfere.
        self.pod_name = re.sub(r"[^a-z0-9]+", "-", self._testMethodName.lower())[:50].strip("-")
        self.pod_uid = "uid-" + self.pod_name
        self.container_id = "ctr-" + self.pod_name
        self.addCleanup(self._assert_no_token_logged)
        api.clear_requests()

    def _assert_no_token_logged(self):
        """No bearer token the double ever accepted reaches manifold's log (debug level)."""
        log = self.tree.log_tail(1 << 30)
        for token in set(self.api.tokens()) | set(self.initial_tokens):
            self.assertNotIn(token, log, "a bearer token reached manifold's log")

    # ---- objects ----------------------------------------------------------------------------------

    def add_pod(self, annotations=None, ns="default", name=None, uid=None, **kw):
        """Creates the test's pod (or another one) in the double."""
        return self.api.add_pod(ns, name or self.pod_name, uid=uid or self.pod_uid,
                                annotations=annotations, **kw)

    def stored_pod(self, ns="default", name=None):
        """The pod as the double stores it now."""
        return self.api.get_pod(ns, name or self.pod_name)

    def status_annotation(self, ns="default", name=None):
        """The network-status annotation of the pod, or None."""
        pod = self.stored_pod(ns, name)
        return ((pod or {}).get("metadata", {}).get("annotations") or {}).get(NETWORK_STATUS)

    def macvlan_nad_conf(self, address="198.51.100.10/24", name=None, **extra):
        """A macvlan NAD config with a static address on this test's macvlan master."""
        conf = {"cniVersion": "1.0.0", "type": "macvlan", "master": MACVLAN_MASTER, "mode": "bridge",
                "ipam": {"type": "static", "addresses": [{"address": address}]}}
        if name:
            conf["name"] = name
        conf.update(extra)
        return conf

    def hostlocal_nad_conf(self, name=None, subnet="198.51.100.0/24", start="198.51.100.100"):
        """A macvlan NAD config with host-local IPAM (reservations in this test's IPAM dir)."""
        conf = {"cniVersion": "1.0.0", "type": "macvlan", "master": MACVLAN_MASTER, "mode": "bridge",
                "ipam": {"type": "host-local", "subnet": subnet, "rangeStart": start,
                         "dataDir": self.tree.ipam_dir}}
        if name:
            conf["name"] = name
        return conf

    # ---- configs and runs ------------------------------------------------------------------------

    def k8s_conf(self, delegates=None, version="1.0.0", **extra):
        """The manifold config with this test's kubeconfig and confDir; the cluster network is
        bridge + host-local unless delegates/clusterNetwork say otherwise."""
        if delegates is None and "clusterNetwork" not in extra:
            delegates = [self.cluster_conf()]
        conf = self.manifold_conf(version, delegates or [], kubeconfig=self.kubeconfig,
                                  confDir=self.conf_dir, **extra)
        if not conf["delegates"]:
            del conf["delegates"]
        return conf

    def write_k8s(self, delegates=None, version="1.0.0", **extra):
        """Writes the k8s_conf as the network config the driver runs; returns it."""
        conf = self.k8s_conf(delegates, version, **extra)
        self.tree.write_conf(conf)
        return conf

    def write_conf_dir_file(self, filename, conf):
        """Writes a network config into this test's confDir."""
        with open(os.path.join(self.conf_dir, filename), "w", encoding="utf-8") as f:
            json.dump(conf, f)

    def cni_args(self, ns="default", name=None, uid=None):
        """CNI_ARGS for the test's pod (or another)."""
        return pod_cni_args(ns, name or self.pod_name, uid or self.pod_uid, self.container_id)

    def add(self, ns="default", name=None, uid=None, **kw):
        """ADD of the test's container for the pod."""
        return self.driver("add", self.pod.path, container_id=self.container_id,
                           cni_args=self.cni_args(ns, name, uid), **kw)

    def delete(self, ns="default", name=None, uid=None, netns=None, **kw):
        """DEL of the test's container for the pod."""
        return self.driver("del", netns or self.pod.path, container_id=self.container_id,
                           cni_args=self.cni_args(ns, name, uid), **kw)

    def check(self, ns="default", name=None, uid=None, **kw):
        """CHECK of the test's container for the pod."""
        return self.driver("check", self.pod.path, container_id=self.container_id,
                           cni_args=self.cni_args(ns, name, uid), **kw)

    def requests(self, **kw):
        """The double's request log (without admin calls)."""
        return self.api.requests(**kw)

    # ---- assertions ------------------------------------------------------------------------------

    def assertNoPatch(self):
        """manifold never needed the patch verb."""
        self.assertEqual([e for e in self.requests() if e["method"] == "PATCH"], [])

    def assertErrorMentions(self, run, *words):
        """The CNI error's msg (or details) contains every word."""
        self.assertIsNotNone(run.error, self._explain(run, "no CNI error"))
        text = run.error.get("msg", "") + " " + run.error.get("details", "")
        for word in words:
            self.assertIn(word, text, self._explain(run, "error does not mention %r" % word))
