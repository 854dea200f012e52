"""Tests of the Kubernetes API server double, driven through its process and admin API.

They talk to the double with http.client and ssl exactly as a client would: TLS verification and
the three authentication outcomes (and the admin identity), real Status bodies, resourceVersion
conflicts, every fault action, the request log and keep-alive connection ids, NADs, events,
discovery, Table output, merge and strategic merge PATCH, and the kubeconfig writer; pod LIST with
selectors and pod WATCH, read off a raw TLS socket chunk by chunk (events, bookmarks, timeouts,
410 after compaction, selector transitions, the stream faults); then the machine's real kubectl
(required: a missing kubectl fails) and ctl.py drive the double as an operator's shell would. No
root and no network are needed; no outcome depends on timing (waits are bounded only as a guard).
Run: python3 -m unittest -v test_apiserver (in this directory).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import selectors
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
from typing import Any, Optional
from urllib.parse import urlencode

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from apiserver_double import AdminError, ApiServerDouble  # noqa: E402

POD = "/api/v1/namespaces/default/pods/web"
PODS = "/api/v1/pods"
NADS = "/apis/k8s.cni.cncf.io/v1/namespaces/default/network-attachment-definitions"
USER = "system:serviceaccount:kube-system:manifold"
RBAC_YAML = os.path.join(HERE, "..", "..", "..", "conf", "rbac.yaml")
DRA_GV = "resource.k8s.io/v1"
DRA_CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
DRA_SLICES = "/apis/resource.k8s.io/v1/resourceslices"
GUARD = 30.0  # seconds: only ever ends a broken test, never decides an outcome


def read_text(path: str) -> str:
    """Returns a file's text."""
    with open(path, encoding="utf-8") as f:
        return f.read()


def read_bytes(path: str) -> bytes:
    """Returns a file's bytes."""
    with open(path, "rb") as f:
        return f.read()


class Reply:
    """One HTTP response, read completely."""

    def __init__(self, resp: http.client.HTTPResponse) -> None:
        self.status = resp.status
        self.headers = {k.lower(): v for k, v in resp.getheaders()}
        self.raw = resp.read()

    @property
    def json(self) -> Any:
        """The body decoded as JSON."""
        return json.loads(self.raw)


def rv(obj: dict) -> int:
    """An object's metadata.resourceVersion as a number."""
    return int(obj["metadata"]["resourceVersion"])


class WatchReader:
    """An HTTP response read off a raw TLS socket: status and headers, then either the
    Content-Length body or, for a watch, the chunked body one chunk at a time, so tests see the
    wire format itself (each event must be exactly one JSON line in its own chunk)."""

    def __init__(self, sock: ssl.SSLSocket) -> None:
        self.sock = sock
        self.buffer = b""
        self.ended = False
        lines = self._until(b"\r\n\r\n").decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.strip().lower(): v.strip()
                        for k, v in (line.split(":", 1) for line in lines[1:] if line)}
        self.body = b""
        if "content-length" in self.headers:
            self.body = self._exact(int(self.headers["content-length"]))

    def _fill(self) -> None:
        data = self.sock.recv(1 << 20)
        if not data:
            raise EOFError("the server closed the connection")
        self.buffer += data

    def _until(self, separator: bytes) -> bytes:
        while separator not in self.buffer:
            self._fill()
        data, self.buffer = self.buffer.split(separator, 1)
        return data

    def _exact(self, size: int) -> bytes:
        while len(self.buffer) < size:
            self._fill()
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def chunk(self) -> Optional[bytes]:
        """The next chunk's data, None for the terminating chunk; EOFError (or a TLS/connection
        error) when the connection closes first."""
        size = int(self._until(b"\r\n").split(b";")[0], 16)
        if size == 0:
            self._until(b"\r\n")
            self.ended = True
            return None
        data = self._exact(size)
        if self._exact(2) != b"\r\n":
            raise AssertionError("chunk not followed by CRLF")
        return data

    def event(self) -> Optional[dict]:
        """The next event (asserting its chunk is exactly one JSON line); None at the end."""
        data = self.chunk()
        if data is None:
            return None
        if not data.endswith(b"\n") or data.count(b"\n") != 1:
            raise AssertionError(f"a chunk is not one event line: {data[:200]!r}")
        return json.loads(data)

    def events(self, count: int) -> list[dict]:
        """The next `count` events (the stream must not end before)."""
        out = []
        for _ in range(count):
            event = self.event()
            if event is None:
                raise AssertionError(f"the stream ended after {out}")
            out.append(event)
        return out

    def rest(self) -> list[dict]:
        """Every event until the terminating chunk."""
        out = []
        while (event := self.event()) is not None:
            out.append(event)
        return out

    def until(self, predicate: Any) -> list[dict]:
        """Events up to and including the first one that satisfies predicate."""
        out = []
        while True:
            out.extend(self.events(1))
            if predicate(out[-1]):
                return out

    @property
    def json(self) -> Any:
        """The Content-Length body decoded as JSON."""
        return json.loads(self.body)


def connect_raw(api: ApiServerDouble) -> ssl.SSLSocket:
    """A verified TLS connection to the double, with the guard as its timeout."""
    raw = socket.create_connection(("127.0.0.1", api.port), timeout=GUARD)
    return api.ssl_context().wrap_socket(raw, server_hostname="127.0.0.1")


def send_get(sock: ssl.SSLSocket, api: ApiServerDouble, path: str, query: str = "",
             token: Optional[str] = None, headers: Optional[dict] = None) -> None:
    """Writes one GET request (HTTP/1.1, keep-alive) on a raw connection."""
    hdrs = {"Host": f"127.0.0.1:{api.port}", "Accept": "application/json"}
    if token is not None:
        hdrs["Authorization"] = f"Bearer {token}"
    hdrs.update(headers or {})
    target = f"{path}?{query}" if query else path
    head = f"GET {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items())
    sock.sendall((head + "\r\n").encode("latin-1"))


def kinds(events: list[dict]) -> list[tuple[str, str]]:
    """(type, namespace/name or resourceVersion) of each event, for compact assertions."""
    out = []
    for event in events:
        meta = event["object"].get("metadata", {})
        name = meta.get("name")
        out.append((event["type"], name if name else meta.get("resourceVersion", "")))
    return out


class DoubleTestCase(unittest.TestCase):
    """Shares one double per class and resets its state before every test."""

    api: ApiServerDouble

    @classmethod
    def setUpClass(cls) -> None:
        cls.api = ApiServerDouble().start()
        cls.initial_token = cls.api.token

    @classmethod
    def tearDownClass(cls) -> None:
        cls.api.stop()

    def setUp(self) -> None:
        api = self.api
        api.set_tokens([self.initial_token])
        api.clear_faults()
        api.clear_deny()
        api.set_rbac(None)
        api.set_options(strict_resource_version=True, disabled_groups=[], tls_max_version="1.3")
        api.clear_events()
        api.add_pod("default", "web", uid="uid-web", annotations={"existing": "yes"})
        api.clear_requests()
        self._conns: list[http.client.HTTPSConnection] = []
        self._shared: Optional[http.client.HTTPSConnection] = None

    def tearDown(self) -> None:
        for conn in self._conns:
            conn.close()

    def connect(self, cert: bool = False, host: str = "127.0.0.1",
                context: Optional[ssl.SSLContext] = None,
                timeout: float = 10.0) -> http.client.HTTPSConnection:
        """Opens a verified HTTPS connection to the double."""
        conn = http.client.HTTPSConnection(host, self.api.port, timeout=timeout,
                                           context=context or self.api.ssl_context(cert=cert))
        self._conns.append(conn)
        return conn

    def open_stream(self, path: str, query: str = "", token: Optional[str] = "default",
                    headers: Optional[dict] = None) -> WatchReader:
        """Sends one GET on a new raw TLS connection (closed at cleanup) and returns the reader
        of its response; the default token is the double's current one."""
        sock = connect_raw(self.api)
        self.addCleanup(sock.close)
        send_get(sock, self.api, path, query, self.api.token if token == "default" else token,
                 headers)
        return WatchReader(sock)

    def call(self, method: str, path: str, body: Any = None, token: Optional[str] = "default",
             conn: Optional[http.client.HTTPSConnection] = None,
             headers: Optional[dict] = None) -> Reply:
        """Sends one request (bearer token by default) and reads the whole response; without
        `conn` it uses the test's shared keep-alive connection."""
        if conn is None:
            if self._shared is None:
                self._shared = self.connect()
            conn = self._shared
        hdrs = {"Accept": "application/json"}
        if token is not None:
            hdrs["Authorization"] = f"Bearer {self.api.token if token == 'default' else token}"
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        hdrs.update(headers or {})
        conn.request(method, path, body=data, headers=hdrs)
        return Reply(conn.getresponse())


class AuthTest(DoubleTestCase):
    """TLS and authentication."""

    def test_bearer_token_is_accepted(self) -> None:
        reply = self.call("GET", POD)
        self.assertEqual(reply.status, 200)
        pod = reply.json
        self.assertEqual(pod["kind"], "Pod")
        self.assertEqual(pod["metadata"]["uid"], "uid-web")
        self.assertEqual(pod["metadata"]["annotations"], {"existing": "yes"})
        [entry] = self.api.requests()
        self.assertEqual((entry["auth"], entry["user"]), ("token", USER))

    def test_rotated_token_gets_401_and_new_token_works(self) -> None:
        old = self.api.token
        self.api.set_tokens(["rotated-token"])
        reply = self.call("GET", POD, token=old)
        self.assertEqual(reply.status, 401)
        self.assertEqual(reply.json, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                      "status": "Failure", "message": "Unauthorized",
                                      "reason": "Unauthorized", "code": 401})
        self.assertEqual(self.call("GET", POD, token="rotated-token").status, 200)
        self.assertEqual([e["status"] for e in self.api.requests()], [401, 200])

    def test_a_token_bound_to_a_pod_is_refused_once_the_pod_is_gone(self) -> None:
        # As kube-apiserver treats a projected service-account token: valid while the pod it was
        # issued for exists with the same UID (seen on the real node when the agent's pod went).
        self.api.add_pod("kube-system", "agent", uid="uid-agent")
        self.api.set_tokens({"bound-token": {"user": USER, "boundPod": {
            "namespace": "kube-system", "name": "agent", "uid": "uid-agent"}}})
        self.assertEqual(self.call("GET", POD, token="bound-token").status, 200)
        self.api.add_pod("kube-system", "agent", uid="uid-agent-2")  # recreated: another UID
        self.assertEqual(self.call("GET", POD, token="bound-token").status, 401)
        self.api.add_pod("kube-system", "agent", uid="uid-agent")
        self.assertEqual(self.call("GET", POD, token="bound-token").status, 200)
        self.api.delete_pod("kube-system", "agent")
        reply = self.call("GET", POD, token="bound-token")
        self.assertEqual((reply.status, reply.json["reason"]), (401, "Unauthorized"))
        self.assertEqual(self.api.tokens(), {"bound-token": USER})

    def test_client_certificate_is_accepted(self) -> None:
        reply = self.call("GET", POD, token=None, conn=self.connect(cert=True))
        self.assertEqual(reply.status, 200)
        [entry] = self.api.requests()
        self.assertEqual((entry["auth"], entry["user"]), ("cert", USER))
        conn = [c for c in self.api.connections() if c["id"] == entry["conn"]][0]
        self.assertEqual(conn["client_cert_cn"], USER)

    def test_valid_certificate_wins_over_a_bad_token(self) -> None:
        reply = self.call("GET", POD, token="stale", conn=self.connect(cert=True))
        self.assertEqual(reply.status, 200)
        self.assertEqual(self.api.requests()[0]["auth"], "cert+token")

    def test_no_credentials_get_401(self) -> None:
        reply = self.call("GET", POD, token=None)
        self.assertEqual((reply.status, reply.json["reason"]), (401, "Unauthorized"))
        self.assertEqual(self.api.requests()[0]["auth"], "none")

    def test_malformed_authorization_headers_get_401(self) -> None:
        for header in ("Basic dXNlcjpwYXNz", "Bearer", "Bearer ", self.api.token):
            reply = self.call("GET", POD, token=None, headers={"Authorization": header})
            self.assertEqual(reply.status, 401, header)

    def test_untrusted_client_certificate_is_rejected(self) -> None:
        ctx = ssl.create_default_context(cafile=self.api.ca_file)
        ctx.load_cert_chain(self.api.untrusted_client_cert, self.api.untrusted_client_key)
        with self.assertRaises((ssl.SSLError, ConnectionError, http.client.HTTPException)):
            self.call("GET", POD, token=None, conn=self.connect(context=ctx))
        self.assertEqual(self.api.requests(), [])
        self.assertEqual(self.api.connections()[-1]["tls"], "failed")

    def test_server_certificate_verifies_for_every_loopback_name(self) -> None:
        hosts = ["127.0.0.1", "localhost"] + (["::1"] if self.api.url6 else [])
        for host in hosts:
            self.assertEqual(self.call("GET", POD, conn=self.connect(host=host)).status, 200, host)

    def test_plain_http_gets_go_style_400(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.api.port, timeout=10)
        try:
            conn.request("GET", POD)
            reply = Reply(conn.getresponse())
        finally:
            conn.close()
        self.assertEqual((reply.status, reply.raw),
                         (400, b"Client sent an HTTP request to an HTTPS server.\n"))
        self.assertEqual(self.api.connections()[-1]["error"], "plain HTTP request")

    def test_server_certificate_fails_with_the_wrong_ca(self) -> None:
        ctx = ssl.create_default_context(cafile=self.api.wrong_ca_file)
        with self.assertRaises(ssl.SSLCertVerificationError):
            self.call("GET", POD, conn=self.connect(context=ctx))
        self.assertEqual(self.api.requests(), [])


class StatusBodyTest(DoubleTestCase):
    """Errors are the real Status objects."""

    def test_pod_not_found(self) -> None:
        reply = self.call("GET", "/api/v1/namespaces/default/pods/x")
        self.assertEqual(reply.status, 404)
        self.assertEqual(reply.raw, b'{"kind":"Status","apiVersion":"v1","metadata":{},'
                         b'"status":"Failure","message":"pods \\"x\\" not found",'
                         b'"reason":"NotFound","details":{"name":"x","kind":"pods"},'
                         b'"code":404}\n')
        self.assertEqual(reply.headers["content-type"], "application/json")
        self.assertEqual(int(reply.headers["content-length"]), len(reply.raw))

    def test_unknown_path_and_wrong_method(self) -> None:
        for path in ("/api/v1/namespaces/default/secrets/s", "/apis/apps/v1/namespaces/d/x",
                     "/nothing", "/api/v2/namespaces/default/pods/web"):
            reply = self.call("GET", path)
            self.assertEqual((reply.status, reply.json["message"]),
                             (404, "the server could not find the requested resource"), path)
        for method, path in (("DELETE", POD), ("PATCH", NADS + "/x"), ("POST", NADS),
                             ("GET", "/api/v1/namespaces/default/events")):
            reply = self.call(method, path, body={} if method in ("PATCH", "POST") else None)
            self.assertEqual((reply.status, reply.json["reason"]), (405, "MethodNotAllowed"),
                             f"{method} {path}")

    def test_deny_rule_gives_real_403(self) -> None:
        self.api.deny(verb="update", resource="pods/status")
        reply = self.call("PUT", POD + "/status", body=self.api.get_pod("default", "web"))
        self.assertEqual(reply.status, 403)
        self.assertEqual(reply.json["message"],
                         f'pods "web" is forbidden: User "{USER}" cannot update resource '
                         f'"pods/status" in API group "" in the namespace "default"')
        self.assertEqual(reply.json["details"], {"name": "web", "kind": "pods"})
        self.assertEqual(self.call("GET", POD).status, 200)

    def test_manifold_rbac_forbids_patch_and_unlisted_resources(self) -> None:
        self.api.set_rbac("manifold")
        self.assertEqual(self.call("GET", POD).status, 200)
        self.assertEqual(self.call("GET", NADS).status, 200)  # the agent's policy sync lists them
        update = self.call("PUT", POD, body=self.api.get_pod("default", "web"))
        self.assertEqual(update.status, 403)  # only the status subresource is written
        self.assertIn('cannot update resource "pods"', update.json["message"])
        patch = self.call("PATCH", POD, body={}, headers={
            "Content-Type": "application/merge-patch+json"})
        self.assertEqual(patch.status, 403)
        self.assertIn('cannot patch resource "pods"', patch.json["message"])
        healthz = self.call("GET", "/healthz")
        self.assertEqual(healthz.status, 200)
        metrics = self.call("GET", "/metrics")
        self.assertEqual((metrics.status, metrics.json["message"]),
                         (403, f'forbidden: User "{USER}" cannot get path "/metrics"'))
        secrets = self.call("GET", "/api/v1/namespaces/default/secrets")
        self.assertEqual(secrets.status, 403)
        self.assertEqual(secrets.json["message"],
                         f'secrets is forbidden: User "{USER}" cannot list resource "secrets" '
                         f'in API group "" in the namespace "default"')
        for path in ("/api", "/apis", "/api/v1", "/apis/k8s.cni.cncf.io/v1"):
            self.assertEqual(self.call("GET", path).status, 200, path)

    def test_admin_token_is_allowed_everything_and_survives_rotation(self) -> None:
        self.api.set_rbac("manifold")
        self.api.set_tokens(["rotated"])
        admin = self.api.admin_token
        patch = self.call("PATCH", POD, body={}, token=admin,
                          headers={"Content-Type": "application/merge-patch+json"})
        self.assertEqual(patch.status, 200)
        secrets = self.call("GET", "/api/v1/namespaces/default/secrets", token=admin)
        self.assertEqual((secrets.status, secrets.json["reason"]), (404, "NotFound"))
        self.assertEqual(self.call("GET", POD, token=self.initial_token).status, 401)
        self.assertNotIn(admin, self.api.tokens())
        self.assertEqual({e["user"] for e in self.api.requests() if e["status"] != 401},
                         {"kubernetes-admin"})

    def test_content_negotiation(self) -> None:
        reply = self.call("GET", POD, headers={"Accept": "application/vnd.kubernetes.protobuf"})
        self.assertEqual((reply.status, reply.json["reason"]), (406, "NotAcceptable"))
        pod = self.api.get_pod("default", "web")
        reply = self.call("PUT", POD + "/status", body=pod,
                          headers={"Content-Type": "application/yaml"})
        self.assertEqual((reply.status, reply.json["reason"]), (415, "UnsupportedMediaType"))
        reply = self.call("GET", POD, headers={"Accept": "application/json;as=Table, */*"})
        self.assertEqual(reply.status, 200)


class PodStatusTest(DoubleTestCase):
    """PUT pods/{name}/status."""

    def _pod_with(self, annotations: dict) -> dict:
        pod = self.call("GET", POD).json
        pod["metadata"]["annotations"] = annotations
        return pod

    def test_update_stores_annotations_and_bumps_resource_version(self) -> None:
        pod = self._pod_with({"k8s.v1.cni.cncf.io/network-status": "[]"})
        pod["spec"] = {"containers": []}
        reply = self.call("PUT", POD + "/status", body=pod)
        self.assertEqual(reply.status, 200)
        updated = reply.json
        self.assertGreater(int(updated["metadata"]["resourceVersion"]),
                           int(pod["metadata"]["resourceVersion"]))
        self.assertEqual(updated["metadata"]["annotations"],
                         {"k8s.v1.cni.cncf.io/network-status": "[]"})
        stored = self.api.get_pod("default", "web")
        self.assertEqual(stored, updated)
        self.assertEqual(stored["spec"]["containers"][0]["name"], "app")  # spec is kept

    def test_stale_resource_version_gets_409(self) -> None:
        pod = self._pod_with({"a": "1"})
        self.api.modify_pod("default", "web", annotations={"other": "writer"})
        reply = self.call("PUT", POD + "/status", body=pod)
        self.assertEqual(reply.status, 409)
        self.assertEqual(reply.json, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": 'Operation cannot be fulfilled on pods "web": the object has been '
                       'modified; please apply your changes to the latest version and try again',
            "reason": "Conflict", "details": {"name": "web", "kind": "pods"}, "code": 409})
        self.assertNotIn("a", self.api.get_pod("default", "web")["metadata"]["annotations"])

    def test_missing_resource_version(self) -> None:
        pod = self._pod_with({"a": "1"})
        del pod["metadata"]["resourceVersion"]
        self.assertEqual(self.call("PUT", POD + "/status", body=pod).status, 409)
        self.api.set_options(strict_resource_version=False)
        self.assertEqual(self.call("PUT", POD + "/status", body=pod).status, 200)

    def test_bad_bodies(self) -> None:
        pod = self.call("GET", POD).json
        wrong = json.loads(json.dumps(pod))
        wrong["metadata"]["annotations"] = ["a"]
        reply = self.call("PUT", POD + "/status", body=wrong)
        self.assertEqual((reply.status, reply.json["reason"]), (400, "BadRequest"))
        self.assertIn("cannot unmarshal array into Go struct field "
                      "ObjectMeta.metadata.annotations of type map[string]string",
                      reply.json["message"])
        renamed = json.loads(json.dumps(pod))
        renamed["metadata"]["name"] = "other"
        reply = self.call("PUT", POD + "/status", body=renamed)
        self.assertEqual(reply.json["message"], "the name of the object (other) does not match "
                                                "the name on the URL (web)")
        other_uid = json.loads(json.dumps(pod))
        other_uid["metadata"]["uid"] = "uid-other"
        reply = self.call("PUT", POD + "/status", body=other_uid)
        self.assertEqual((reply.status, reply.json["reason"]), (409, "Conflict"))
        self.assertIn("Precondition failed: UID in precondition: uid-other", reply.json["message"])
        huge = json.loads(json.dumps(pod))
        huge["metadata"]["annotations"] = {"big": "x" * (256 * 1024)}
        reply = self.call("PUT", POD + "/status", body=huge)
        self.assertEqual((reply.status, reply.json["reason"]), (422, "Invalid"))
        self.assertEqual(reply.json["message"], 'Pod "web" is invalid: metadata.annotations: '
                                                'Too long: must have at most 262144 bytes')
        reply = self.call("PUT", POD + "/status", body=b'{"kind": "Pod", ')
        self.assertEqual((reply.status, reply.json["reason"]), (400, "BadRequest"))
        self.api.delete_pod("default", "web")
        reply = self.call("PUT", POD + "/status", body=pod)
        self.assertEqual((reply.status, reply.json["message"]), (404, 'pods "web" not found'))

    def test_hostile_stored_objects_are_served_verbatim(self) -> None:
        big = "x" * (2 * 1024 * 1024)
        self.api.add_pod("default", "big", annotations={"k8s.v1.cni.cncf.io/networks": big})
        reply = self.call("GET", "/api/v1/namespaces/default/pods/big")
        self.assertEqual(reply.status, 200)
        self.assertEqual(len(reply.json["metadata"]["annotations"]
                             ["k8s.v1.cni.cncf.io/networks"]), len(big))
        self.api.add_pod("default", "odd", raw={"kind": "Pod", "metadata": {
            "name": "odd", "annotations": ["not", "a", "map"]}})
        odd = self.call("GET", "/api/v1/namespaces/default/pods/odd").json
        self.assertEqual(odd["metadata"]["annotations"], ["not", "a", "map"])
        self.api.add_nad("default", "objcfg", None, raw_spec={"config": {"type": "bridge"}})
        self.assertEqual(self.call("GET", NADS + "/objcfg").json["spec"],
                         {"config": {"type": "bridge"}})

    def test_conflict_next_then_retry_succeeds(self) -> None:
        self.api.conflict_next(count=1)
        pod = self._pod_with({"status": "1"})
        first = self.call("PUT", POD + "/status", body=pod)
        self.assertEqual((first.status, first.json["reason"]), (409, "Conflict"))
        fresh = self._pod_with({"status": "1"})
        self.assertNotEqual(fresh["metadata"]["resourceVersion"],
                            pod["metadata"]["resourceVersion"])
        self.assertEqual(self.call("PUT", POD + "/status", body=fresh).status, 200)
        self.assertEqual([(e["method"], e["status"]) for e in self.api.requests()],
                         [("GET", 200), ("PUT", 409), ("GET", 200), ("PUT", 200)])


class FaultTest(DoubleTestCase):
    """Fault injection."""

    def test_500_twice_then_200(self) -> None:
        self.api.add_fault(path="/pods/web$", status=500, count=2)
        replies = [self.call("GET", POD) for _ in range(3)]
        self.assertEqual([r.status for r in replies], [500, 500, 200])
        self.assertEqual(replies[0].json["reason"], "InternalError")
        self.assertEqual(self.api.faults()[0]["count"], 0)

    def test_429_with_retry_after(self) -> None:
        self.api.add_fault(status=429, retry_after=3)
        reply = self.call("GET", POD)
        self.assertEqual(reply.status, 429)
        self.assertEqual(reply.headers["retry-after"], "3")
        self.assertEqual(reply.json["reason"], "TooManyRequests")
        self.assertEqual(reply.json["details"], {"retryAfterSeconds": 3})
        self.api.add_fault(status=429, retry_after=1, body_format="text")
        reply = self.call("GET", POD)
        self.assertEqual((reply.status, reply.raw),
                         (429, b"Too many requests, please try again later.\n"))
        self.assertTrue(reply.headers["content-type"].startswith("text/plain"))

    def test_drop_closes_without_response(self) -> None:
        self.api.add_fault(action="drop")
        with self.assertRaises((http.client.RemoteDisconnected, ConnectionError, ssl.SSLError)):
            self.call("GET", POD)
        self.assertEqual(self.call("GET", POD).status, 200)
        entries = self.api.requests()
        self.assertEqual([(e["outcome"], e["status"]) for e in entries],
                         [("dropped", None), ("ok", 200)])

    def test_reset_sends_half_the_body(self) -> None:
        self.api.add_fault(action="reset")
        conn = self.connect()
        conn.request("GET", POD, headers={"Authorization": f"Bearer {self.api.token}"})
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200)
        with self.assertRaises((http.client.IncompleteRead, ConnectionError, ssl.SSLError)):
            resp.read()

    def test_truncated_json_is_well_framed(self) -> None:
        self.api.add_fault(action="truncate", truncate_at=40)
        reply = self.call("GET", POD)
        self.assertEqual((reply.status, len(reply.raw)), (200, 40))
        self.assertEqual(int(reply.headers["content-length"]), 40)
        with self.assertRaises(ValueError):
            json.loads(reply.raw)

    def test_wrong_type(self) -> None:
        self.api.add_fault(action="wrong_type")
        self.assertEqual(self.call("GET", POD).json["metadata"]["annotations"], ["wrong", "type"])
        self.api.add_fault(action="wrong_type", set={"items": {"not": "a list"}})
        self.assertEqual(self.call("GET", NADS).json["items"], {"not": "a list"})

    def test_delay_and_client_timeout(self) -> None:
        self.api.add_fault(action="delay", delay_ms=150)
        started = time.monotonic()
        self.assertEqual(self.call("GET", POD).status, 200)
        self.assertGreaterEqual(time.monotonic() - started, 0.15)
        self.api.add_fault(action="delay", delay_ms=2000)
        with self.assertRaises((socket.timeout, TimeoutError)):
            self.call("GET", POD, conn=self.connect(timeout=0.2))

    def test_method_filter_skip_and_raw(self) -> None:
        self.api.add_fault(method="PUT", status=503, count=None)
        self.api.add_fault(path="/pods/web$", action="raw", status=200, body="not json", skip=1)
        self.assertEqual(self.call("GET", POD).status, 200)
        reply = self.call("GET", POD)
        self.assertEqual((reply.status, reply.raw), (200, b"not json"))
        pod = self.api.get_pod("default", "web")
        for _ in range(2):
            reply = self.call("PUT", POD + "/status", body=pod)
            self.assertEqual((reply.status, reply.json["reason"]), (503, "ServiceUnavailable"))

    def test_bad_fault_is_refused(self) -> None:
        with self.assertRaises(AdminError):
            self.api.add_fault(action="explode")
        with self.assertRaises(AdminError):
            self.api.add_fault(status=500, count=0)


class LogAndKeepAliveTest(DoubleTestCase):
    """The request log and connection ids."""

    def test_keep_alive_reuses_one_connection(self) -> None:
        conn = self.connect()
        for _ in range(3):
            self.assertEqual(self.call("GET", POD, conn=conn).status, 200)
        self.assertEqual(self.call("GET", POD).status, 200)
        entries = self.api.requests()
        self.assertEqual(len({e["conn"] for e in entries[:3]}), 1)
        self.assertEqual([e["conn_request"] for e in entries], [1, 2, 3, 1])
        self.assertNotEqual(entries[3]["conn"], entries[0]["conn"])

    def test_log_marks_pipelined_requests(self) -> None:
        def request(path: str) -> bytes:
            return (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.api.port}\r\n"
                    f"Authorization: Bearer {self.api.token}\r\n\r\n").encode()

        def read_answer(f: Any) -> int:
            status = int(f.readline().split()[1])
            length = 0
            while (line := f.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            f.read(length)
            return status

        sock = connect_raw(self.api)
        try:
            f = sock.makefile("rb")
            # Three requests in one write: the second and third cost no round trip of their own.
            sock.sendall(request(POD) + request(NADS) + request(POD))
            self.assertEqual([read_answer(f) for _ in range(3)], [200, 200, 200])
            # One more, sent only after the answers: a round trip of its own.
            sock.sendall(request(POD))
            self.assertEqual(read_answer(f), 200)
        finally:
            sock.close()
        entries = self.api.requests()
        self.assertEqual([e["pipelined"] for e in entries], [False, True, True, False])
        self.assertEqual([e["conn_request"] for e in entries], [1, 2, 3, 4])

    def test_log_marks_requests_on_resumed_tls_sessions(self) -> None:
        context = self.api.ssl_context()

        def one_get(session: Optional[ssl.SSLSession]) -> ssl.SSLSession:
            raw = socket.create_connection(("127.0.0.1", self.api.port), timeout=GUARD)
            sock = context.wrap_socket(raw, server_hostname="127.0.0.1", session=session)
            try:
                send_get(sock, self.api, POD, token=self.api.token)
                f = sock.makefile("rb")
                self.assertEqual(int(f.readline().split()[1]), 200)
                return sock.session  # a TLS 1.3 ticket arrives with the answer
            finally:
                sock.close()

        session = one_get(None)
        one_get(session)
        entries = self.api.requests()
        self.assertEqual([e["tls_resumed"] for e in entries], [False, True])
        self.assertEqual([c["tls_resumed"] for c in self.api.connections()], [False, True])

    def test_tls_max_version_caps_new_connections(self) -> None:
        versions = []
        for cap in ("1.2", "1.3"):
            self.assertEqual(self.api.set_options(tls_max_version=cap)["tls_max_version"], cap)
            sock = connect_raw(self.api)
            try:
                versions.append(sock.version())
                send_get(sock, self.api, POD, token=self.api.token)
                self.assertEqual(int(sock.makefile("rb").readline().split()[1]), 200)
            finally:
                sock.close()
        self.assertEqual(versions, ["TLSv1.2", "TLSv1.3"])
        self.assertEqual([c["tls_version"] for c in self.api.connections()], versions)
        with self.assertRaises(AdminError):
            self.api.set_options(tls_max_version="1.1")

    def test_log_records_method_path_query_and_body(self) -> None:
        pod = self.api.get_pod("default", "web")
        self.call("GET", NADS + "?limit=5")
        self.call("PUT", POD + "/status", body=pod)
        get, put = self.api.requests()
        self.assertEqual((get["method"], get["path"], get["query"]), ("GET", NADS, "limit=5"))
        self.assertEqual((put["method"], put["status"]), ("PUT", 200))
        self.assertEqual(json.loads(put["body"]), pod)
        self.assertEqual(len(self.api.requests(method="PUT", path="/status$")), 1)

    def test_chunked_body_and_oversized_body(self) -> None:
        pod = self.api.get_pod("default", "web")
        conn = self.connect()
        conn.request("PUT", POD + "/status", body=iter([json.dumps(pod).encode()]),
                     headers={"Authorization": f"Bearer {self.api.token}",
                              "Content-Type": "application/json"},
                     encode_chunked=True)
        self.assertEqual(Reply(conn.getresponse()).status, 200)
        reply = self.call("PUT", POD + "/status", body=b"x" * (3 * 1024 * 1024 + 1))
        self.assertEqual((reply.status, reply.json["reason"]), (413, "RequestEntityTooLarge"))


class NadAndEventTest(DoubleTestCase):
    """NetworkAttachmentDefinitions and events."""

    def test_nad_get_list_and_not_found(self) -> None:
        self.api.add_nad("default", "b-net", {"cniVersion": "1.0.0", "type": "macvlan"})
        self.api.add_nad("default", "a-net", None, annotations={
            "k8s.v1.cni.cncf.io/resourceName": "intel.com/sriov"})
        self.api.add_nad("other", "c-net", "{}")
        listed = self.call("GET", NADS).json
        self.assertEqual((listed["kind"], listed["apiVersion"]),
                         ("NetworkAttachmentDefinitionList", "k8s.cni.cncf.io/v1"))
        self.assertEqual([i["metadata"]["name"] for i in listed["items"]], ["a-net", "b-net"])
        self.assertEqual(listed["items"][0]["spec"], {})
        got = self.call("GET", NADS + "/b-net").json
        self.assertEqual(got["kind"], "NetworkAttachmentDefinition")
        self.assertEqual(json.loads(got["spec"]["config"])["type"], "macvlan")
        missing = self.call("GET", NADS + "/nope")
        self.assertEqual(missing.status, 404)
        self.assertEqual(missing.json["message"],
                         'network-attachment-definitions.k8s.cni.cncf.io "nope" not found')
        self.assertEqual(missing.json["details"], {"name": "nope", "group": "k8s.cni.cncf.io",
                                                   "kind": "network-attachment-definitions"})
        empty = self.call("GET", NADS.replace("default", "empty")).json
        self.assertEqual(empty["items"], [])
        self.assertTrue(self.api.delete_nad("default", "b-net"))
        self.assertEqual(self.call("GET", NADS + "/b-net").status, 404)

    def test_events_are_created_and_validated(self) -> None:
        path = "/api/v1/namespaces/default/events"
        event = {"kind": "Event", "apiVersion": "v1",
                 "metadata": {"name": "web.17a", "namespace": "default"},
                 "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web"},
                 "reason": "AddedInterface", "message": "Add net1 [10.1.1.2/24] from default/a",
                 "type": "Normal"}
        reply = self.call("POST", path, body=event)
        self.assertEqual(reply.status, 201)
        self.assertTrue(reply.json["metadata"]["uid"])
        self.assertEqual(self.call("POST", path, body=event).json["reason"], "AlreadyExists")
        generated = dict(event, metadata={"generateName": "web."})
        self.assertEqual(self.call("POST", path, body=generated).status, 201)
        nameless = dict(event, metadata={})
        self.assertEqual(self.call("POST", path, body=nameless).status, 422)
        elsewhere = dict(event, metadata={"name": "x", "namespace": "kube-system"})
        self.assertEqual(self.call("POST", path, body=elsewhere).status, 400)
        new_api = {"metadata": {"name": "n1"}, "regarding": {"kind": "Pod", "name": "web"},
                   "reason": "AddedInterface", "note": "Add net1", "type": "Normal",
                   "action": "Add", "reportingController": "manifold"}
        reply = self.call("POST", "/apis/events.k8s.io/v1/namespaces/default/events",
                          body=new_api)
        self.assertEqual(reply.status, 201)
        stored = self.api.events()
        self.assertEqual([e["reason"] for e in stored], ["AddedInterface"] * 3)
        self.assertEqual(stored[2]["apiVersion"], "events.k8s.io/v1")
        self.assertTrue(stored[1]["metadata"]["name"].startswith("web."))

    def test_version_and_health(self) -> None:
        self.assertEqual(self.call("GET", "/version").json["major"], "1")
        self.assertEqual(self.call("GET", "/healthz").raw, b"ok")


class KubeconfigTest(DoubleTestCase):
    """The kubeconfig writer."""

    def test_variants(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "kc")
            text = read_text(self.api.write_kubeconfig(path))
            self.assertIn(f'server: "{self.api.url}"', text)
            self.assertIn(f'certificate-authority: "{self.api.ca_file}"', text)
            self.assertIn(f'token: "{self.api.token}"', text)
            self.assertIn('current-context: "double"', text)
            self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)

            text = read_text(self.api.write_kubeconfig(path, auth="tokenFile"))
            self.assertIn(f'tokenFile: "{path}.token"', text)
            self.assertEqual(read_text(path + ".token"), self.api.token)

            text = read_text(self.api.write_kubeconfig(path, auth="cert", ca="data",
                                                       cert_form="data"))
            ca_data = text.split("certificate-authority-data: ", 1)[1].split("\n", 1)[0]
            self.assertEqual(base64.b64decode(ca_data), read_bytes(self.api.ca_file))
            self.assertIn("client-certificate-data: ", text)
            self.assertIn("client-key-data: ", text)
            self.assertNotIn("token", text)

            text = read_text(self.api.write_kubeconfig(path, auth="cert", insecure=True,
                                                       decoy=True))
            self.assertIn("insecure-skip-tls-verify: true", text)
            self.assertNotIn("certificate-authority", text)
            self.assertIn(f'client-certificate: "{self.api.client_cert}"', text)
            self.assertLess(text.index('- name: "decoy"'), text.index('- name: "double"'))
            with self.assertRaises(ValueError):
                self.api.write_kubeconfig(path, auth="password")

            # The JSON form is the same document.
            for variant in ({}, {"auth": "tokenFile", "decoy": True, "namespace": "n"},
                            {"auth": "cert", "ca": "data", "cert_form": "data", "insecure": True}):
                yaml_doc = self.api.write_kubeconfig(path, **variant)
                yaml_text = read_text(yaml_doc)
                doc = json.loads(read_text(self.api.write_kubeconfig(path, fmt="json", **variant)))
                self.assertEqual(doc["current-context"], "double")
                for key in ("server", "certificate-authority", "client-certificate-data", "tokenFile"):
                    for value in _values(doc, key):
                        self.assertIn(f"{key}: " + (value if key.endswith("-data") else json.dumps(value)),
                                      yaml_text, variant)
                self.assertEqual([c["name"] for c in doc["contexts"]],
                                 ["decoy", "double"] if variant.get("decoy") else ["double"])
            with self.assertRaises(ValueError):
                self.api.write_kubeconfig(path, fmt="toml")


def _values(doc, key):
    """Every value of `key` anywhere in the JSON document `doc`."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k == key:
                yield v
            else:
                yield from _values(v, key)
    elif isinstance(doc, list):
        for item in doc:
            yield from _values(item, key)


class DiscoveryTest(DoubleTestCase):
    """Legacy discovery, generated from the route table."""

    AGGREGATED = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                  "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
                  "application/json")

    def test_root_documents_fall_back_from_aggregated_discovery(self) -> None:
        api = self.call("GET", "/api", headers={"Accept": self.AGGREGATED})
        self.assertEqual(api.headers["content-type"], "application/json")
        self.assertEqual((api.json["kind"], api.json["versions"]), ("APIVersions", ["v1"]))
        apis = self.call("GET", "/apis", headers={"Accept": self.AGGREGATED}).json
        self.assertEqual(apis["kind"], "APIGroupList")
        self.assertEqual([g["name"] for g in apis["groups"]],
                         ["events.k8s.io", "k8s.cni.cncf.io", "resource.k8s.io"])
        group = self.call("GET", "/apis/k8s.cni.cncf.io").json
        self.assertEqual((group["kind"], group["preferredVersion"]),
                         ("APIGroup", {"groupVersion": "k8s.cni.cncf.io/v1", "version": "v1"}))

    def test_resource_lists_advertise_the_served_verbs(self) -> None:
        core = self.call("GET", "/api/v1").json
        self.assertEqual((core["kind"], core["groupVersion"]), ("APIResourceList", "v1"))
        verbs = {r["name"]: r["verbs"] for r in core["resources"]}
        self.assertEqual(verbs, {"events": ["create"],
                                 "namespaces": ["create", "delete", "get", "list", "patch", "update",
                                                "watch"],
                                 "pods": ["get", "list", "patch", "update", "watch"],
                                 "pods/status": ["get", "patch", "update"]})
        pods = [r for r in core["resources"] if r["name"] == "pods"][0]
        self.assertEqual((pods["kind"], pods["singularName"], pods["namespaced"],
                          pods["shortNames"]), ("Pod", "pod", True, ["po"]))
        nads = self.call("GET", "/apis/k8s.cni.cncf.io/v1").json
        self.assertEqual(nads["groupVersion"], "k8s.cni.cncf.io/v1")
        self.assertEqual(nads["resources"], [{
            "name": "network-attachment-definitions",
            "singularName": "network-attachment-definition", "namespaced": True,
            "kind": "NetworkAttachmentDefinition", "verbs": ["get", "list", "watch"],
            "shortNames": ["net-attach-def"]}])
        policies = self.call("GET", "/apis/k8s.cni.cncf.io/v1beta1").json
        self.assertEqual([(r["name"], r["kind"], r["namespaced"]) for r in policies["resources"]],
                         [("multi-networkpolicies", "MultiNetworkPolicy", True)])

    def test_absent_groups_versions_and_openapi_are_404(self) -> None:
        for path in ("/apis/apps", "/apis/apps/v1", "/apis/k8s.cni.cncf.io/v2", "/api/v2",
                     "/openapi/v2", "/openapi/v3"):
            reply = self.call("GET", path)
            self.assertEqual((reply.status, reply.json["reason"]), (404, "NotFound"), path)

    def test_a_verb_added_to_the_route_table_is_advertised(self) -> None:
        from kdouble import discovery, routes
        table = routes.default_routes()
        table.add(routes.PODS, {"watch": lambda store, call: (200, {})}, named=False)
        doc = discovery.document("/api/v1", table, "127.0.0.1:1")
        pods = [r for r in doc["resources"] if r["name"] == "pods"][0]
        self.assertEqual(pods["verbs"], ["get", "list", "patch", "update", "watch"])


class TableTest(DoubleTestCase):
    """Server-side printing for `kubectl get`."""

    TABLE = ("application/json;as=Table;v=v1;g=meta.k8s.io,"
             "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")

    def test_pod_list_and_nad_as_table(self) -> None:
        self.api.add_pod("default", "db", status={"phase": "Running", "podIP": "192.0.2.7",
                                                  "containerStatuses": [
                                                      {"ready": True, "restartCount": 2}]})
        table = self.call("GET", "/api/v1/namespaces/default/pods",
                          headers={"Accept": self.TABLE}).json
        self.assertEqual((table["kind"], table["apiVersion"]), ("Table", "meta.k8s.io/v1"))
        self.assertEqual([c["name"] for c in table["columnDefinitions"]],
                         ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node"])
        self.assertEqual([r["cells"][:4] + r["cells"][5:] for r in table["rows"]],
                         [["db", "1/1", "Running", 2, "192.0.2.7", "node1"],
                          ["web", "0/1", "Pending", 0, "<none>", "node1"]])
        self.assertEqual(table["rows"][1]["object"]["metadata"]["uid"], "uid-web")
        self.api.add_nad("default", "data", {"type": "macvlan"})
        nad = self.call("GET", NADS + "/data", headers={"Accept": self.TABLE}).json
        self.assertEqual([c["name"] for c in nad["columnDefinitions"]], ["Name", "Age"])
        self.assertEqual(nad["rows"][0]["cells"][0], "data")

    def test_table_only_where_it_can_be_served(self) -> None:
        only_table = "application/json;as=Table;v=v1;g=meta.k8s.io"
        self.assertEqual(self.call("GET", "/api/v1", headers={"Accept": only_table}).status, 406)
        missing = self.call("GET", POD + "x", headers={"Accept": self.TABLE})
        self.assertEqual((missing.status, missing.json["kind"]), (404, "Status"))
        plain = self.call("GET", POD, headers={"Accept": "application/json;as=Table"})
        self.assertEqual((plain.status, plain.json["kind"]), (406, "Status"))


class PatchTest(DoubleTestCase):
    """PATCH pods/{name}[/status] with merge and strategic merge patches."""

    MERGE = {"Content-Type": "application/merge-patch+json"}
    STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}

    def patch(self, body: Any, headers: dict, path: str = POD) -> Reply:
        """Sends one PATCH with the given Content-Type header."""
        return self.call("PATCH", path, body=body, headers=headers)

    def test_merge_patch_adds_an_annotation_and_bumps_resource_version(self) -> None:
        before = self.api.get_pod("default", "web")
        reply = self.patch({"metadata": {"annotations": {"k8s.v1.cni.cncf.io/networks": "a"}}},
                           self.MERGE)
        self.assertEqual(reply.status, 200)
        self.assertEqual(reply.json["metadata"]["annotations"],
                         {"existing": "yes", "k8s.v1.cni.cncf.io/networks": "a"})
        self.assertGreater(int(reply.json["metadata"]["resourceVersion"]),
                           int(before["metadata"]["resourceVersion"]))
        self.assertEqual(self.api.get_pod("default", "web"), reply.json)
        [entry] = self.api.requests()
        self.assertEqual((entry["method"], entry["path"], entry["status"]),
                         ("PATCH", POD, 200))
        self.assertEqual(entry["headers"]["content-type"], "application/merge-patch+json")
        self.assertIn("k8s.v1.cni.cncf.io/networks", entry["body"])

    def test_null_removes_a_key_in_both_patch_types(self) -> None:
        self.api.modify_pod("default", "web", annotations={"a": "1", "b": "2"})
        reply = self.patch({"metadata": {"annotations": {"a": None}}}, self.MERGE)
        self.assertEqual(reply.json["metadata"]["annotations"], {"existing": "yes", "b": "2"})
        reply = self.patch({"metadata": {"annotations": {"b": None, "c": "3"}}}, self.STRATEGIC)
        self.assertEqual(reply.json["metadata"]["annotations"], {"existing": "yes", "c": "3"})
        reply = self.patch({"metadata": {"annotations": {"existing": None, "c": None}}},
                           self.STRATEGIC)
        self.assertNotIn("annotations", reply.json["metadata"])

    def test_strategic_patch_directives(self) -> None:
        reply = self.patch({"metadata": {"annotations": {"$patch": "replace", "only": "me"}}},
                           self.STRATEGIC)
        self.assertEqual(reply.json["metadata"]["annotations"], {"only": "me"})
        reply = self.patch({"metadata": {"labels": {"app": "web"},
                                         "$setElementOrder/finalizers": []}}, self.STRATEGIC)
        self.assertEqual(reply.json["metadata"]["labels"], {"app": "web"})
        reply = self.patch({"metadata": {"annotations": {"$patch": "delete"}}}, self.STRATEGIC)
        self.assertNotIn("annotations", reply.json["metadata"])
        reply = self.patch({"metadata": {"$retainKeys": ["labels"]}}, self.STRATEGIC)
        self.assertEqual((reply.status, reply.json["reason"]), (400, "BadRequest"))

    def test_resource_version_precondition(self) -> None:
        current = self.api.get_pod("default", "web")["metadata"]["resourceVersion"]
        self.api.modify_pod("default", "web", annotations={"other": "writer"})
        stale = self.patch({"metadata": {"resourceVersion": current,
                                         "annotations": {"a": "1"}}}, self.MERGE)
        self.assertEqual((stale.status, stale.json["reason"]), (409, "Conflict"))
        self.assertEqual(stale.json["message"],
                         'Operation cannot be fulfilled on pods "web": the object has been '
                         'modified; please apply your changes to the latest version and try again')
        self.assertNotIn("a", self.api.get_pod("default", "web")["metadata"]["annotations"])
        fresh = self.api.get_pod("default", "web")["metadata"]["resourceVersion"]
        ok = self.patch({"metadata": {"resourceVersion": fresh, "annotations": {"a": "1"}}},
                        self.STRATEGIC)
        self.assertEqual(ok.status, 200)

    def test_status_subresource_patch_changes_status(self) -> None:
        reply = self.patch({"status": {"podIP": "192.0.2.9"}}, self.MERGE, POD + "/status")
        self.assertEqual(reply.json["status"], {"phase": "Pending", "podIP": "192.0.2.9"})
        reply = self.patch({"status": {"phase": "Running"}}, self.MERGE)
        self.assertEqual(reply.json["status"]["phase"], "Pending")  # pods ignores status

    def test_refused_patches(self) -> None:
        cases = [
            (b'{"metadata": ', self.MERGE, 400, "BadRequest"),
            ([{"op": "add"}], self.MERGE, 400, "BadRequest"),
            ([{"op": "add"}], {"Content-Type": "application/json-patch+json"}, 415,
             "UnsupportedMediaType"),
            ({}, {"Content-Type": "application/json"}, 415, "UnsupportedMediaType"),
            ({"metadata": {"name": "other"}}, self.MERGE, 400, "BadRequest"),
            ({"metadata": {"uid": "uid-other"}}, self.MERGE, 409, "Conflict"),
            ({"metadata": {"annotations": {"bad key!": "x"}}}, self.MERGE, 422, "Invalid"),
            ({"metadata": {"annotations": {"n": 1}}}, self.STRATEGIC, 400, "BadRequest"),
        ]
        for body, headers, code, reason in cases:
            reply = self.patch(body, headers)
            self.assertEqual((reply.status, reply.json["reason"]), (code, reason), body)
        self.assertEqual(self.api.get_pod("default", "web")["metadata"]["annotations"],
                         {"existing": "yes"})
        missing = self.patch({}, self.MERGE, "/api/v1/namespaces/default/pods/nope")
        self.assertEqual((missing.status, missing.json["message"]), (404, 'pods "nope" not found'))


class PodListTest(DoubleTestCase):
    """LIST of pods across namespaces or in one, with field and label selectors."""

    def setUp(self) -> None:
        super().setUp()
        # Pods of earlier tests stay in the class's double: each test has its own names.
        self.ns = "list-" + self._testMethodName[5:].replace("_", "-")[:40]
        self.n1, self.n2 = f"{self.ns}-n1", f"{self.ns}-n2"
        self.a, self.b = f"{self.ns}-a", f"{self.ns}-b"
        self.api.add_pod(self.a, "p1", node_name=self.n1, labels={"app": "web", "tier": "1"})
        self.api.add_pod(self.b, "p2", node_name=self.n1, labels={"app": "db"})
        self.last = self.api.add_pod(self.a, "p3", node_name=self.n2, labels={"app": "web"})
        self.api.clear_requests()

    def names(self, path: str, **params: str) -> list[tuple[str, str]]:
        """(namespace, name) of the items a LIST answers with 200."""
        reply = self.call("GET", f"{path}?{urlencode(params)}" if params else path)
        self.assertEqual(reply.status, 200, reply.raw)
        return [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in reply.json["items"]]

    def test_field_selector_on_the_node_across_namespaces(self) -> None:
        query = urlencode({"fieldSelector": f"spec.nodeName={self.n1}"})
        reply = self.call("GET", f"{PODS}?{query}")
        self.assertEqual(reply.status, 200)
        listed = reply.json
        self.assertEqual(list(listed), ["kind", "apiVersion", "metadata", "items"])
        self.assertEqual((listed["kind"], listed["apiVersion"]), ("PodList", "v1"))
        self.assertEqual(listed["metadata"],
                         {"resourceVersion": self.last["metadata"]["resourceVersion"]})
        self.assertEqual([(i["metadata"]["namespace"], i["metadata"]["name"])
                          for i in listed["items"]], [(self.a, "p1"), (self.b, "p2")])
        for item in listed["items"]:  # the real server leaves kind and apiVersion to the list
            self.assertEqual(list(item), ["metadata", "spec", "status"])
        self.assertEqual(self.names(f"/api/v1/namespaces/{self.a}/pods",
                                    fieldSelector=f"spec.nodeName={self.n1}"), [(self.a, "p1")])
        self.assertEqual(self.names(f"/api/v1/namespaces/{self.b}/pods"), [(self.b, "p2")])
        [entry, *_] = self.api.requests(path=f"^{PODS}$")
        self.assertEqual((entry["verb"], entry["status"], entry["query"]),
                         ("list", 200, f"fieldSelector=spec.nodeName%3D{self.n1}"))

    def test_field_selector_forms(self) -> None:
        mine = f"metadata.namespace={self.a}"
        self.assertEqual(self.names(PODS, fieldSelector=f"spec.nodeName!={self.n1},{mine}"),
                         [(self.a, "p3")])
        by_name = f"metadata.name==p2,spec.nodeName={self.n1}"
        self.assertEqual(self.names(PODS, fieldSelector=by_name), [(self.b, "p2")])
        pending = f"{mine},metadata.name!=p1,status.phase=Pending"
        self.assertEqual(self.names(PODS, fieldSelector=pending), [(self.a, "p3")])
        self.assertEqual(self.names(PODS, fieldSelector=f"{mine},spec.nodeName="), [])

    def test_label_selector_forms(self) -> None:
        mine = f"spec.nodeName={self.n1}"
        cases = {"app=web": [(self.a, "p1")], "app!=web": [(self.b, "p2")],
                 "app==db": [(self.b, "p2")], "tier": [(self.a, "p1")], "!tier": [(self.b, "p2")],
                 "app in (db, cache)": [(self.b, "p2")], "app notin (db),tier=1": [(self.a, "p1")],
                 "app=web,tier=2": [], "": [(self.a, "p1"), (self.b, "p2")]}
        for selector, expected in cases.items():
            self.assertEqual(self.names(PODS, fieldSelector=mine, labelSelector=selector), expected,
                             selector)

    def test_refused_parameters_are_real_400s(self) -> None:
        cases = {"fieldSelector=spec.foo%3Dx": "field label not supported: spec.foo",
                 "fieldSelector=nonsense": "invalid selector: 'nonsense'; can't understand "
                                           "'nonsense'",
                 "resourceVersion=abc": 'resourceVersion: Invalid value: "abc": strconv.ParseUint: '
                                        'parsing "abc": invalid syntax'}
        for query, message in cases.items():
            for path in (PODS, f"/api/v1/namespaces/{self.a}/pods"):
                for watch in ("", "&watch=1"):
                    reply = self.call("GET", f"{path}?{query}{watch}")
                    self.assertEqual(reply.json, {
                        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": message, "reason": "BadRequest", "code": 400}, query + watch)
        bad_label = self.call("GET", f"{PODS}?labelSelector=a%20in%20()")
        self.assertEqual((bad_label.status, bad_label.json["reason"]), (400, "BadRequest"))

    def test_limit_is_ignored_at_resource_version_0(self) -> None:
        listed = self.call("GET",
                           f"/api/v1/namespaces/{self.a}/pods?limit=1&resourceVersion=0").json
        self.assertEqual([i["metadata"]["name"] for i in listed["items"]], ["p1", "p3"])
        self.assertNotIn("continue", listed["metadata"])


class WatchCase(DoubleTestCase):
    """Helpers of the watch tests: every test watches its own namespace."""

    def setUp(self) -> None:
        super().setUp()
        self.api.set_options(bookmark_interval=60, watch_timeout=0, watch_history=1000)
        self.ns = "w-" + self._testMethodName[5:].replace("_", "-")[:50]
        self.pods = f"/api/v1/namespaces/{self.ns}/pods"

    def watch(self, query: str = "", path: Optional[str] = None,
              token: Optional[str] = "default") -> WatchReader:
        """Opens a watch (200 expected) of the test's namespace; once the headers are read the
        watcher is registered, so every later change reaches it."""
        reader = self.open_stream(path or self.pods, "&".join(filter(None, ("watch=1", query))),
                                  token=token)
        self.assertEqual(reader.status, 200, reader.body)
        return reader

    def current_rv(self) -> int:
        """The double's latest resourceVersion (a LIST's)."""
        return rv(self.call("GET", self.pods).json)

    def assert_bookmark(self, event: dict, resource_version: int) -> None:
        """A BOOKMARK exactly as kube-apiserver encodes one."""
        self.assertEqual(event, {"type": "BOOKMARK", "object": {
            "kind": "Pod", "apiVersion": "v1",
            "metadata": {"resourceVersion": str(resource_version), "creationTimestamp": None},
            "spec": {"containers": None}, "status": {}}})


class WatchTest(WatchCase):
    """WATCH of pods: wire format, resourceVersion semantics, bookmarks, timeouts, 410."""

    def test_events_from_a_resource_version_in_order_from_every_change_path(self) -> None:
        start = self.api.add_pod(self.ns, "p", node_name="n1")
        reader = self.watch(f"resourceVersion={rv(start)}")
        self.assertEqual(reader.headers["content-type"], "application/json")
        self.assertEqual(reader.headers["transfer-encoding"], "chunked")
        self.assertNotIn("content-length", reader.headers)
        path = f"{self.pods}/p"
        merge = {"Content-Type": "application/merge-patch+json"}
        self.api.modify_pod(self.ns, "p", annotations={"a": "1"})
        pod = self.call("GET", path).json
        pod["metadata"]["annotations"]["b"] = "2"
        self.assertEqual(self.call("PUT", path + "/status", body=pod).status, 200)
        pod = self.call("GET", path).json
        pod["metadata"]["labels"] = {"app": "web"}
        self.assertEqual(self.call("PUT", path, body=pod).status, 200)
        self.assertEqual(self.call("PATCH", path, body={"metadata": {"annotations": {"c": "3"}}},
                                   headers=merge).status, 200)
        self.assertEqual(self.call("PATCH", path + "/status", headers=merge,
                                   body={"status": {"podIP": "192.0.2.1"}}).status, 200)
        self.api.conflict_next()
        current = self.call("GET", path).json
        self.assertEqual(self.call("PUT", path + "/status", body=current).status, 409)
        self.api.add_pod(self.ns, "q")
        self.api.add_pod(self.ns, "q", labels={"replaced": "yes"})
        last = self.api.get_pod(self.ns, "p")
        self.assertTrue(self.api.delete_pod(self.ns, "p"))
        events = reader.events(9)
        self.assertEqual(kinds(events), [("MODIFIED", "p")] * 6 + [
            ("ADDED", "q"), ("MODIFIED", "q"), ("DELETED", "p")])
        versions = [rv(e["object"]) for e in events]
        self.assertEqual(versions, sorted(set(versions)))
        self.assertGreater(versions[0], rv(start))
        p_events = [e["object"] for e in events[:6]]
        self.assertEqual(p_events[0]["metadata"]["annotations"], {"a": "1"})
        self.assertEqual(p_events[1]["metadata"]["annotations"], {"a": "1", "b": "2"})
        self.assertEqual(p_events[2]["metadata"]["labels"], {"app": "web"})
        self.assertEqual(p_events[3]["metadata"]["annotations"]["c"], "3")
        self.assertEqual(p_events[4]["status"]["podIP"], "192.0.2.1")
        self.assertEqual(p_events[5], last)  # the concurrent writer's bump
        deleted = events[8]["object"]
        self.assertGreater(rv(deleted), rv(last))
        self.assertEqual(dict(deleted, metadata=dict(deleted["metadata"], resourceVersion="")),
                         dict(last, metadata=dict(last["metadata"], resourceVersion="")))
        for event in events:
            self.assertEqual((event["object"]["kind"], event["object"]["apiVersion"]),
                             ("Pod", "v1"))

    def test_no_resource_version_starts_with_synthetic_added_events(self) -> None:
        self.api.add_pod(self.ns, "b")
        self.api.add_pod(self.ns, "a")
        self.api.add_pod(self.ns + "-other", "c", labels={"test": self.ns})
        readers = [self.watch(query) for query in ("", "resourceVersion=0", "resourceVersion=")]
        for reader in readers:
            first = reader.events(2)
            self.assertEqual(kinds(first), [("ADDED", "a"), ("ADDED", "b")])
            self.assertEqual(first[0]["object"], self.api.get_pod(self.ns, "a"))
        self.api.add_pod(self.ns, "c", labels={"test": self.ns})
        for reader in readers:
            self.assertEqual(kinds(reader.events(1)), [("ADDED", "c")])
        across = self.watch(urlencode({"labelSelector": f"test={self.ns}"}), path=PODS)
        self.assertEqual(sorted(e["object"]["metadata"]["namespace"] for e in across.events(2)),
                         [self.ns, self.ns + "-other"])

    def test_bookmarks_arrive_when_allowed_and_never_otherwise(self) -> None:
        self.api.set_options(bookmark_interval=0.05)
        plain = self.watch()
        marked = self.watch("allowWatchBookmarks=true")
        # Two periodic bookmarks on the later stream: the earlier one was open at least as long.
        for _ in range(2):
            self.assert_bookmark(marked.events(1)[0], self.current_rv())
        pod = self.api.add_pod(self.ns, "p")
        seen = marked.until(lambda e: e["type"] == "BOOKMARK" and rv(e["object"]) >= rv(pod))
        self.assertEqual([k for k in kinds(seen) if k[0] != "BOOKMARK"], [("ADDED", "p")])
        self.api.add_fault(action="watch_end", path=f"^{self.pods}$", count=2)
        self.assertEqual(kinds(plain.rest()), [("ADDED", "p")])
        rest = marked.rest()
        self.assertEqual({e["type"] for e in rest}, {"BOOKMARK"})
        self.assert_bookmark(rest[-1], self.current_rv())
        # Invariant: a bookmark never announces a resourceVersion before an event still to come.
        stream = seen + rest
        for i, event in enumerate(stream):
            if event["type"] == "BOOKMARK":
                self.assertTrue(all(rv(e["object"]) > rv(event["object"])
                                    for e in stream[i + 1:] if e["type"] != "BOOKMARK"))

    def test_timeout_seconds_ends_the_stream_with_a_final_bookmark(self) -> None:
        pod = self.api.add_pod(self.ns, "p")
        reader = self.watch("allowWatchBookmarks=true&timeoutSeconds=1")
        events = reader.rest()
        self.assertEqual(kinds(events), [("ADDED", "p"), ("BOOKMARK", str(rv(pod)))])
        self.assert_bookmark(events[-1], rv(pod))
        entry = [e for e in self.api.requests(path=self.pods) if e["verb"] == "watch"][0]
        self.assertEqual(entry["stream"], {"events": 1, "bookmarks": 1, "ended": "timeout"})
        # The connection stays open for the next request, as after any complete response.
        send_get(reader.sock, self.api, self.pods, token=self.api.token)
        again = WatchReader(reader.sock)
        self.assertEqual((again.status, again.json["kind"]), (200, "PodList"))
        plain = self.watch("timeoutSeconds=1")
        self.assertEqual(kinds(plain.rest()), [("ADDED", "p")])

    def test_the_log_records_a_watch_when_it_starts(self) -> None:
        self.watch("allowWatchBookmarks=true&fieldSelector=spec.nodeName%3Dn1")
        [entry] = self.api.requests(path=self.pods)
        self.assertEqual((entry["method"], entry["verb"], entry["status"], entry["user"]),
                         ("GET", "watch", 200, USER))
        self.assertEqual(entry["query"],
                         "watch=1&allowWatchBookmarks=true&fieldSelector=spec.nodeName%3Dn1")
        self.assertEqual(entry["stream"], {"events": 0, "bookmarks": 0, "ended": None})
        [stream] = self.api.wait_for_watches(path=self.pods)
        self.assertEqual((stream["seq"], stream["user"], stream["fieldSelector"],
                          stream["allowWatchBookmarks"]),
                         (entry["seq"], USER, "spec.nodeName=n1", True))

    def test_a_compacted_resource_version_gets_the_410_error_event(self) -> None:
        old = self.api.add_pod(self.ns, "p")
        self.api.modify_pod(self.ns, "p", annotations={"a": "1"})
        compacted = self.api.compact()
        self.assertEqual(self.api.watch_history(),
                         {"floor": compacted, "limit": 1000, "events": []})
        reader = self.watch(f"resourceVersion={rv(old)}")
        self.assertEqual(reader.rest(), [{"type": "ERROR", "object": {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f"too old resource version: {rv(old)} ({compacted})", "reason": "Expired",
            "code": 410}}])
        fresh = self.watch(f"resourceVersion={compacted}")
        added = self.api.add_pod(self.ns, "q")
        self.assertEqual(fresh.events(1), [{"type": "ADDED", "object": added}])
        # The history's bound drops the oldest events the same way.
        self.api.set_options(watch_history=2)
        start = self.current_rv()
        for value in ("1", "2", "3"):
            self.api.modify_pod(self.ns, "q", annotations={"n": value})
        history = self.api.watch_history()
        self.assertEqual([e["type"] for e in history["events"]], ["MODIFIED", "MODIFIED"])
        self.assertEqual(int(history["floor"]), start + 1)
        gone = self.watch(f"resourceVersion={start}").rest()
        self.assertEqual(gone[0]["object"]["message"],
                         f"too old resource version: {start} ({start + 1})")
        kept = self.watch(f"resourceVersion={start + 1}").events(2)
        self.assertEqual([e["object"]["metadata"]["annotations"]["n"] for e in kept], ["2", "3"])

    def test_selector_transitions_are_added_and_deleted_events(self) -> None:
        node_a, node_b = f"{self.ns}-a", f"{self.ns}-b"
        self.api.add_pod(self.ns, "p", uid="u", node_name=node_a, labels={"app": "web"})
        on_a = self.watch(urlencode({"fieldSelector": f"spec.nodeName={node_a}"}), path=PODS)
        on_b = self.watch(urlencode({"fieldSelector": f"spec.nodeName={node_b}"}), path=PODS)
        web = self.watch(urlencode({"labelSelector": "app=web"}))
        self.assertEqual(kinds(on_a.events(1) + web.events(1)), [("ADDED", "p")] * 2)
        moved = self.api.add_pod(self.ns, "p", uid="u", node_name=node_b, labels={"app": "web"})
        [gone] = on_a.events(1)
        self.assertEqual((gone["type"], gone["object"]["spec"]["nodeName"], rv(gone["object"])),
                         ("DELETED", node_a, rv(moved)))  # the last content seen, the new version
        self.assertEqual(on_b.events(1), [{"type": "ADDED", "object": moved}])
        self.assertEqual(web.events(1), [{"type": "MODIFIED", "object": moved}])
        relabelled = self.api.modify_pod(self.ns, "p", labels={"app": "db"})
        [dropped] = web.events(1)
        self.assertEqual((dropped["type"], dropped["object"]["metadata"]["labels"],
                          rv(dropped["object"])), ("DELETED", {"app": "web"}, rv(relabelled)))
        self.assertEqual(kinds(on_b.events(1)), [("MODIFIED", "p")])
        self.api.modify_pod(self.ns, "p", labels={"app": "web"})
        self.assertEqual(kinds(web.events(1)), [("ADDED", "p")])
        self.api.add_fault(action="watch_end", query=f"spec.nodeName={node_a}")
        self.assertEqual(on_a.rest(), [])  # nothing after the pod left node a

    def test_a_named_watch_and_table_events(self) -> None:
        self.api.add_pod(self.ns, "p")
        self.api.add_pod(self.ns, "q")
        named = self.watch(path=f"{self.pods}/q")
        self.assertEqual(kinds(named.events(1)), [("ADDED", "q")])
        table = self.open_stream(self.pods, "watch=1", headers={
            "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"})
        first = table.events(2)
        self.assertEqual([(e["type"], e["object"]["kind"], e["object"]["rows"][0]["cells"][0])
                          for e in first], [("ADDED", "Table", "p"), ("ADDED", "Table", "q")])
        self.api.modify_pod(self.ns, "q", annotations={"a": "1"})
        self.assertEqual(kinds(named.events(1)), [("MODIFIED", "q")])
        self.assertEqual(table.events(1)[0]["object"]["rows"][0]["cells"][0], "q")

    def test_stop_ends_open_streams_promptly(self) -> None:
        api = ApiServerDouble(ipv6=False).start()
        try:
            sock = connect_raw(api)
            self.addCleanup(sock.close)
            send_get(sock, api, PODS, "watch=1&allowWatchBookmarks=true", api.token)
            reader = WatchReader(sock)
            api.wait_for_watches()
        finally:
            api.stop()
        self.assertEqual(api.exit_code, 0)  # no SIGTERM/SIGKILL was needed
        try:
            self.assertEqual([e["type"] for e in reader.rest()], [])
        except (EOFError, ConnectionError, ssl.SSLError):
            pass  # the connection closed before the last chunk: ended too


class WatchFaultTest(WatchCase):
    """The stream faults and request faults as a raw HTTPS client sees them."""

    def test_watch_cut_sends_half_an_event_then_closes(self) -> None:
        reader = self.watch()
        fault = self.api.add_fault(action="watch_cut", path=f"^{self.pods}$")
        self.api.add_pod(self.ns, "p")
        data = reader.chunk()
        self.assertTrue(data.startswith(b'{"type":"ADDED","object":{'))
        self.assertFalse(data.endswith(b"\n"))
        with self.assertRaises(ValueError):
            json.loads(data)
        with self.assertRaises((EOFError, ConnectionError, ssl.SSLError)):
            reader.chunk()
        self.assertFalse(reader.ended)
        entry = self.api.requests(path=self.pods)[0]
        self.assertEqual((entry["faults"], entry["stream"]["ended"]), ([fault], "watch_cut"))
        self.assertEqual(kinds(self.watch().events(1)), [("ADDED", "p")])  # consumed

    def test_watch_cut_at_a_chosen_byte_after_skipped_events(self) -> None:
        self.api.add_pod(self.ns, "a")
        self.api.add_pod(self.ns, "b")
        self.api.add_fault(action="watch_cut", path=f"^{self.pods}$", skip=1, truncate_at=10)
        reader = self.watch()
        self.assertEqual(kinds(reader.events(1)), [("ADDED", "a")])
        self.assertEqual(reader.chunk(), b'{"type":"A')
        with self.assertRaises((EOFError, ConnectionError, ssl.SSLError)):
            reader.chunk()

    def test_watch_garbage_then_carry_on_or_close(self) -> None:
        reader = self.watch()
        self.api.add_fault(action="watch_garbage", path=f"^{self.pods}$")
        self.api.add_pod(self.ns, "p")
        self.assertEqual(reader.chunk(), b"this is not JSON\n")
        self.assertEqual(kinds(reader.events(1)), [("ADDED", "p")])
        self.api.add_fault(action="watch_garbage", path=f"^{self.pods}$", body='{"kind":"Status"}',
                           close=True)
        self.api.add_pod(self.ns, "q")
        self.assertEqual(reader.chunk(), b'{"kind":"Status"}\n')
        self.assertIsNone(reader.chunk())  # a clean end: the terminating chunk

    def test_watch_oversized_sends_one_huge_line(self) -> None:
        reader = self.watch()
        size = 5 * 1024 * 1024 + 3
        self.api.add_fault(action="watch_oversized", path=f"^{self.pods}$", size=size)
        self.api.add_pod(self.ns, "p", annotations={"k": "v"})
        data = reader.chunk()
        self.assertEqual((len(data), data.count(b"\n"), data[-1:]), (size, 1, b"\n"))
        event = json.loads(data)
        annotations = event["object"]["metadata"]["annotations"]
        self.assertEqual((event["type"], annotations["k"]), ("ADDED", "v"))
        self.assertIn("kdouble.invalid/padding", annotations)
        self.api.add_pod(self.ns, "q")
        self.assertLess(len(json.dumps(reader.events(1))), 4096)

    def test_watch_end_now_and_for_the_next_stream(self) -> None:
        reader = self.watch("allowWatchBookmarks=true")
        self.api.wait_for_watches(path=self.pods)
        self.api.add_fault(action="watch_end", path=f"^{self.pods}$")
        [final] = reader.rest()
        self.assert_bookmark(final, self.current_rv())
        self.api.add_fault(action="watch_end", path=f"^{self.pods}$")
        self.assertEqual(self.watch().rest(), [])
        self.assertEqual(self.api.faults()[-1]["hits"], 1)

    def test_watch_error_sends_an_error_event_and_ends(self) -> None:
        reader = self.watch()
        self.api.add_fault(action="watch_error", path=f"^{self.pods}$", status=410)
        self.assertEqual(reader.rest(), [{"type": "ERROR", "object": {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "The resourceVersion for the provided watch is too old.",
            "reason": "Expired", "code": 410}}])
        self.api.add_fault(action="watch_error", path=f"^{self.pods}$", status=500)
        [error] = self.watch().rest()
        self.assertEqual((error["type"], error["object"]["reason"]), ("ERROR", "InternalError"))

    def test_status_faults_target_watch_or_list_requests(self) -> None:
        self.api.add_fault(path="/pods$", watch=True, status=410)
        self.assertEqual(self.call("GET", self.pods).status, 200)
        gone = self.open_stream(self.pods, "watch=1")
        self.assertEqual((gone.status, gone.json["reason"], gone.json["message"]),
                         (410, "Expired", "The resourceVersion for the provided watch is too old."))
        self.api.add_fault(path="/pods$", watch=False, status=429, retry_after=2)
        self.assertEqual(self.watch().status, 200)
        busy = self.call("GET", self.pods)
        self.assertEqual((busy.status, busy.headers["retry-after"]), (429, "2"))
        self.api.add_fault(path="/pods$", watch=False, status=410)
        expired = self.call("GET", self.pods + "?limit=1&continue=abc")
        self.assertEqual((expired.status, expired.json["reason"]), (410, "Expired"))
        self.assertTrue(expired.json["message"].startswith(
            "The provided continue parameter is too old"))
        broken = self.api.add_fault(path="/pods$", watch=True, status=500, count=None)
        for _ in range(2):
            self.assertEqual(self.open_stream(self.pods, "watch=true").status, 500)
        self.api.remove_fault(broken)
        self.assertEqual(self.watch().status, 200)

    def test_query_filter_drop_and_refused_combinations(self) -> None:
        self.api.add_fault(query="spec.nodeName=n9$", status=503, count=None)
        n9 = "fieldSelector=spec.nodeName%3Dn9"
        self.assertEqual(self.open_stream(self.pods, f"watch=1&{n9}").status, 503)
        self.assertEqual(self.call("GET", f"{self.pods}?{n9}").status, 503)
        self.watch("fieldSelector=spec.nodeName%3Dn8")
        self.api.clear_faults()
        self.api.add_fault(action="drop", watch=True)
        with self.assertRaises((EOFError, ConnectionError, ssl.SSLError)):
            self.open_stream(self.pods, "watch=1")
        for action, watch in (("reset", True), ("truncate", True), ("wrong_type", True),
                              ("watch_cut", False)):
            with self.assertRaises(AdminError, msg=action):
                self.api.add_fault(action=action, watch=watch)


class WatchRbacTest(WatchCase):
    """manifold's ClusterRole: list and watch of pods, nothing more."""

    def test_manifold_may_list_and_watch_pods_but_not_delete_them(self) -> None:
        self.api.set_rbac("manifold")
        self.api.add_pod(self.ns, "p", node_name=f"{self.ns}-node")
        mine = urlencode({"fieldSelector": f"spec.nodeName={self.ns}-node"})
        self.assertEqual(self.call("GET", f"{PODS}?{mine}").status, 200)
        self.assertEqual(self.call("GET", self.pods).status, 200)
        self.assertEqual(kinds(self.watch(mine, path=PODS).events(1)), [("ADDED", "p")])
        forbidden = {
            ("DELETE", f"{self.pods}/p"): 'pods "p" is forbidden: User "{u}" cannot delete '
                                          'resource "pods" in API group "" in the namespace "{n}"',
            ("POST", self.pods): 'pods is forbidden: User "{u}" cannot create resource "pods" in '
                                 'API group "" in the namespace "{n}"',
            ("GET", f"{self.pods}/p/status?watch=1"):
                'pods "p" is forbidden: User "{u}" cannot watch resource "pods/status" in API '
                'group "" in the namespace "{n}"',
            ("GET", f"/apis/resource.k8s.io/v1/namespaces/{self.ns}/resourceclaims?watch=1"):
                'resourceclaims.resource.k8s.io is forbidden: User "{u}" cannot watch resource '
                '"resourceclaims" in API group "resource.k8s.io" in the namespace "{n}"',
            ("GET", "/api/v1/namespaces/default/events"): 'events is forbidden: User "{u}" cannot '
                                                           'list resource "events" in API group "" '
                                                           'in the namespace "default"',
        }
        for (method, path), message in forbidden.items():
            reply = self.call(method, path, body={} if method == "POST" else None)
            self.assertEqual((reply.status, reply.json["message"]),
                             (403, message.format(u=USER, n=self.ns)), f"{method} {path}")
        self.assertEqual(self.api.get_pod(self.ns, "p")["metadata"]["name"], "p")

    def test_the_double_enforces_the_shipped_cluster_role(self) -> None:
        from kdouble.access import manifold_rbac
        text = read_text(RBAC_YAML)
        role = text.split("kind: ClusterRole\n", 1)[1].split("\n---", 1)[0]
        rules, rule = [], {}
        for line in role.split("rules:", 1)[1].splitlines():
            if match := re.match(r"^\s*(-\s+)?(apiGroups|resources|verbs):\s*(\[.*\])\s*$", line):
                if match.group(1):
                    rule = {}
                    rules.append(rule)
                rule[match.group(2)] = json.loads(match.group(3))

        def triples(role_rules: list[dict]) -> set:
            return {(g, r, v) for x in role_rules for g in x["apiGroups"]
                    for r in x["resources"] for v in x["verbs"]}
        self.assertEqual(triples(rules), triples(manifold_rbac()))
        self.assertIn(("", "pods", "watch"), triples(rules))
        self.assertNotIn(("", "pods/status", "watch"), triples(rules))
        self.assertFalse({v for _, _, v in triples(rules)} & {"patch", "delete", "*"})


class DraTest(DoubleTestCase):
    """resource.k8s.io/v1 ResourceClaims (+status) and ResourceSlices, as manifold's DRA client
    reads them: GET of a claim, LIST of slices by node and driver."""

    ALLOCATED = [{"request": "nic", "driver": "sriov.example.com", "pool": "node1",
                  "device": "vf-0"},
                 {"request": "nic", "driver": "sriov.example.com", "pool": "node1",
                  "device": "vf-1"}]

    def setUp(self) -> None:
        super().setUp()
        api = self.api
        for name in ("made", "extra"):
            api.delete_resource_claim("default", name)
            api.delete_resource_slice(name)
        api.add_resource_claim("default", "nic", results=self.ALLOCATED)
        api.add_resource_claim("default", "pending", requests=["gpu"], labels={"app": "x"})
        sriov = {"vf-0": {"k8s.cni.cncf.io/deviceID": "0000:af:06.0",
                          "k8s.cni.cncf.io/resourceName": "intel.com/sriov"}}
        api.add_resource_slice("node1-sriov", driver="sriov.example.com", node_name="node1",
                               devices=sriov)
        api.add_resource_slice("node1-gpu", driver="gpu.example.com", node_name="node1")
        api.add_resource_slice("node2-sriov", driver="sriov.example.com", node_name="node2")
        api.add_resource_slice("shared", driver="sriov.example.com", all_nodes=True,
                               pool="fabric")
        api.clear_requests()

    def slice_names(self, selector: str) -> list[str]:
        """LISTs slices as manifold does (percent-encoded fieldSelector); the items' names."""
        reply = self.call("GET", f"{DRA_SLICES}?{urlencode({'fieldSelector': selector})}")
        self.assertEqual(reply.status, 200, reply.raw)
        return [item["metadata"]["name"] for item in reply.json["items"]]

    def test_get_claim_and_the_404_of_a_missing_one(self) -> None:
        reply = self.call("GET", DRA_CLAIMS + "/nic")
        self.assertEqual(reply.status, 200)
        claim = reply.json
        self.assertEqual((claim["kind"], claim["apiVersion"]), ("ResourceClaim", DRA_GV))
        self.assertEqual(claim["status"]["allocation"]["devices"]["results"], self.ALLOCATED)
        self.assertEqual([r["name"] for r in claim["spec"]["devices"]["requests"]], ["nic"])
        self.assertEqual(claim, self.api.get_resource_claim("default", "nic"))
        self.assertEqual(self.call("GET", DRA_CLAIMS + "/pending").json["status"], {})
        missing = self.call("GET", DRA_CLAIMS + "/gone")
        self.assertEqual(missing.status, 404)
        self.assertEqual(missing.json, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": 'resourceclaims.resource.k8s.io "gone" not found', "reason": "NotFound",
            "details": {"name": "gone", "group": "resource.k8s.io", "kind": "resourceclaims"},
            "code": 404})
        self.assertTrue(self.api.delete_resource_claim("default", "nic"))
        self.assertEqual(self.call("GET", DRA_CLAIMS + "/nic").status, 404)
        self.assertIsNone(self.api.get_resource_claim("default", "nic"))
        self.assertEqual([(e["verb"], e["status"]) for e in self.api.requests()],
                         [("get", 200), ("get", 200), ("get", 404), ("get", 404)])

    def test_list_slices_by_node_and_driver(self) -> None:
        reply = self.call("GET", DRA_SLICES + "?fieldSelector=spec.nodeName%3Dnode1%2C"
                                              "spec.driver%3Dsriov.example.com")
        listed = reply.json
        self.assertEqual((listed["kind"], listed["apiVersion"]), ("ResourceSliceList", DRA_GV))
        [item] = listed["items"]
        self.assertNotIn("kind", item)
        self.assertEqual(item["spec"]["devices"][0]["attributes"], {
            "k8s.cni.cncf.io/deviceID": {"string": "0000:af:06.0"},
            "k8s.cni.cncf.io/resourceName": {"string": "intel.com/sriov"}})
        self.assertEqual(item["spec"]["pool"],
                         {"name": "node1", "generation": 1, "resourceSliceCount": 1})
        self.assertEqual(rv(listed), int(self.api.get_resource_slice("shared")["metadata"]
                                         ["resourceVersion"]))
        cases = {"spec.driver=sriov.example.com": ["node1-sriov", "node2-sriov", "shared"],
                 "spec.nodeName==node1": ["node1-gpu", "node1-sriov"],
                 "spec.nodeName=,spec.driver=sriov.example.com": ["shared"],
                 "spec.nodeName!=node1,spec.driver=sriov.example.com": ["node2-sriov", "shared"],
                 "metadata.name=node1-gpu": ["node1-gpu"],
                 "spec.driver=none.example.com": [], "": ["node1-gpu", "node1-sriov",
                                                         "node2-sriov", "shared"]}
        for selector, names in cases.items():
            self.assertEqual(self.slice_names(selector), names, selector)
        self.assertEqual(self.call("GET", DRA_SLICES + "/shared").json["spec"]["allNodes"], True)
        claims = self.call("GET", "/apis/resource.k8s.io/v1/resourceclaims?" + urlencode({
            "fieldSelector": "metadata.namespace=default", "labelSelector": "app=x"})).json
        self.assertEqual([i["metadata"]["name"] for i in claims["items"]], ["pending"])

    def test_unsupported_field_selectors_are_400(self) -> None:
        refusals = {
            (DRA_SLICES, "spec.pool.name=node1"): "field label not supported for "
                                                   "resource.k8s.io/v1, Kind=ResourceSlice: "
                                                   "spec.pool.name",
            (DRA_SLICES, "metadata.namespace=default"): "field label not supported for "
                                                        "resource.k8s.io/v1, "
                                                        "Kind=ResourceSlice: metadata.namespace",
            (DRA_CLAIMS, "spec.devices=x"): '"spec.devices" is not a known field selector: '
                                            'only "metadata.name", "metadata.namespace"',
            (DRA_SLICES, "spec.nodeName"): "invalid selector: 'spec.nodeName'; can't "
                                           "understand 'spec.nodeName'"}
        for (path, selector), message in refusals.items():
            reply = self.call("GET", f"{path}?{urlencode({'fieldSelector': selector})}")
            self.assertEqual(reply.json, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                          "status": "Failure", "message": message,
                                          "reason": "BadRequest", "code": 400}, selector)
        wrong_scope = self.call("GET", "/apis/resource.k8s.io/v1/namespaces/default/"
                                       "resourceslices")
        self.assertEqual((wrong_scope.status, wrong_scope.json["message"]),
                         (404, "the server could not find the requested resource"))

    def test_status_subresource(self) -> None:
        status = self.call("GET", DRA_CLAIMS + "/pending/status")
        self.assertEqual(status.json, self.api.get_resource_claim("default", "pending"))
        claim = status.json
        before = rv(claim)
        allocated = {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": "gpu.example.com", "pool": "node1", "device": "gpu-0"}]}},
            "reservedFor": [{"resource": "pods", "name": "web", "uid": "uid-web"}]}
        changed = dict(claim, status=allocated, spec={"devices": {"requests": []}},
                       metadata=dict(claim["metadata"], labels={"app": "changed"}))
        reply = self.call("PUT", DRA_CLAIMS + "/pending/status", body=changed)
        self.assertEqual(reply.status, 200, reply.raw)
        stored = self.api.get_resource_claim("default", "pending")
        self.assertEqual(reply.json, stored)
        self.assertEqual(stored["status"], allocated)
        self.assertEqual((stored["spec"], stored["metadata"]["labels"]),
                         (claim["spec"], {"app": "x"}))  # only the status changes
        self.assertGreater(rv(stored), before)
        stale = self.call("PUT", DRA_CLAIMS + "/pending/status", body=changed)
        self.assertEqual((stale.status, stale.json["message"]), (409, (
            'Operation cannot be fulfilled on resourceclaims.resource.k8s.io "pending": the '
            'object has been modified; please apply your changes to the latest version and '
            'try again')))
        relabel = dict(stored, status={}, metadata=dict(stored["metadata"], labels={"b": "c"}))
        kept = self.call("PUT", DRA_CLAIMS + "/pending", body=relabel).json
        self.assertEqual((kept["status"], kept["metadata"]["labels"]), (allocated, {"b": "c"}))
        respec = dict(kept, spec={"devices": {"requests": []}})
        immutable = self.call("PUT", DRA_CLAIMS + "/pending", body=respec)
        self.assertEqual((immutable.status, immutable.json["reason"],
                          immutable.json["details"]["causes"][0]["field"]),
                         (422, "Invalid", "spec"))
        patch = self.call("PATCH", DRA_CLAIMS + "/pending/status",
                          body={"status": {"reservedFor": None}},
                          headers={"Content-Type": "application/merge-patch+json"})
        self.assertNotIn("reservedFor", patch.json["status"])

    def test_create_update_and_delete_through_the_api(self) -> None:
        body = {"apiVersion": DRA_GV, "kind": "ResourceClaim",
                "metadata": {"name": "made", "namespace": "default"},
                "spec": {"devices": {"requests": [{"name": "r", "exactly": {
                    "deviceClassName": "nic.example.com"}}]}},
                "status": {"allocation": {"devices": {"results": []}}}}
        created = self.call("POST", DRA_CLAIMS, body=body)
        self.assertEqual(created.status, 201)
        self.assertEqual(created.json["status"], {})  # status is reset on create
        self.assertTrue(created.json["metadata"]["uid"])
        again = self.call("POST", DRA_CLAIMS, body=body)
        self.assertEqual((again.status, again.json["reason"], again.json["message"]),
                         (409, "AlreadyExists",
                          'resourceclaims.resource.k8s.io "made" already exists'))
        nameless = self.call("POST", DRA_CLAIMS, body=dict(body, metadata={}))
        self.assertEqual((nameless.status, nameless.json["message"]), (422, (
            'ResourceClaim.resource.k8s.io "" is invalid: metadata.name: Required value: name '
            'or generateName is required')))
        self.assertEqual(self.call("POST", "/apis/resource.k8s.io/v1/resourceclaims",
                                   body=body).status, 405)
        piece = {"metadata": {"name": "extra"}, "spec": {
            "driver": "sriov.example.com", "nodeName": "node3",
            "pool": {"name": "node3", "generation": 1, "resourceSliceCount": 1}, "devices": []}}
        made = self.call("POST", DRA_SLICES, body=piece)
        self.assertEqual((made.status, made.json["metadata"]["generation"]), (201, 1))
        self.assertEqual(self.slice_names("spec.nodeName=node3"), ["extra"])
        moved = dict(made.json, spec=dict(piece["spec"], nodeName="node4"))
        updated = self.call("PUT", DRA_SLICES + "/extra", body=moved).json
        self.assertEqual(updated["metadata"]["generation"], 2)
        self.assertEqual(self.slice_names("spec.nodeName=node3"), [])
        deleted = self.call("DELETE", DRA_SLICES + "/extra")
        self.assertEqual((deleted.status, deleted.json["metadata"]["name"]), (200, "extra"))
        self.assertEqual(self.call("DELETE", DRA_SLICES + "/extra").status, 404)
        self.assertEqual(self.call("GET", DRA_SLICES + "/extra?watch=1").status, 405)

    def test_rbac_403_without_the_grant_and_200_with_it(self) -> None:
        from kdouble.access import manifold_rbac
        base = [r for r in manifold_rbac() if "resource.k8s.io" not in r["apiGroups"]]
        self.api.set_rbac(base)
        claim = self.call("GET", DRA_CLAIMS + "/nic")
        self.assertEqual((claim.status, claim.json["message"], claim.json["details"]), (403, (
            f'resourceclaims.resource.k8s.io "nic" is forbidden: User "{USER}" cannot get '
            f'resource "resourceclaims" in API group "resource.k8s.io" in the namespace '
            f'"default"'), {"name": "nic", "group": "resource.k8s.io",
                            "kind": "resourceclaims"}))
        slices = self.call("GET", DRA_SLICES + "?fieldSelector=spec.driver%3Dx")
        self.assertEqual((slices.status, slices.json["message"]), (403, (
            f'resourceslices.resource.k8s.io is forbidden: User "{USER}" cannot list resource '
            f'"resourceslices" in API group "resource.k8s.io" at the cluster scope')))
        self.api.set_rbac(base + [
            {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"],
             "verbs": ["get"]},
            {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
             "verbs": ["list"]}])
        self.assertEqual(self.call("GET", DRA_CLAIMS + "/nic").status, 200)
        self.assertEqual(self.slice_names("spec.nodeName=node2"), ["node2-sriov"])
        for method, path in (("GET", DRA_CLAIMS + "/nic/status"), ("GET", DRA_CLAIMS),
                             ("GET", DRA_SLICES + "/shared"), ("DELETE", DRA_CLAIMS + "/nic")):
            self.assertEqual(self.call(method, path).status, 403, f"{method} {path}")
        self.api.set_rbac([{"apiGroups": ["resource.k8s.io"], "resources": ["*/status"],
                            "verbs": ["get"]},
                           {"apiGroups": ["*"], "resources": ["resourceclaims"],
                            "verbs": ["get"], "resourceNames": ["pending"]}])
        self.assertEqual(self.call("GET", DRA_CLAIMS + "/nic/status").status, 200)
        self.assertEqual(self.call("GET", DRA_CLAIMS + "/pending").status, 200)
        self.assertEqual(self.call("GET", DRA_CLAIMS + "/nic").status, 403)

    def test_the_shipped_role_decides_dra_access(self) -> None:
        from kdouble.access import manifold_rbac
        grants = {(g, r, v) for x in manifold_rbac() for g in x["apiGroups"]
                  for r in x["resources"] for v in x["verbs"]}
        self.api.set_rbac("manifold")
        for path, triple in ((DRA_CLAIMS + "/nic", ("resource.k8s.io", "resourceclaims", "get")),
                             (DRA_SLICES, ("resource.k8s.io", "resourceslices", "list"))):
            self.assertEqual(self.call("GET", path).status, 200 if triple in grants else 403,
                             path)

    def test_cluster_role_reader(self) -> None:
        from kdouble.cluster_role import RoleFormatError, parse_cluster_role
        text = ('kind: ServiceAccount\n---\napiVersion: rbac.authorization.k8s.io/v1\n'
                'kind: ClusterRole  # manifold\nmetadata:\n  name: manifold\nrules:\n'
                '  - apiGroups: [""]\n    resources: ["pods", \'pods/status\']\n'
                '    verbs: [get, "update"]\n'
                '  - apiGroups:\n      - resource.k8s.io\n    resources:\n'
                '    - resourceclaims  # DRA\n    - "resourceclaims/status"\n'
                '    verbs: ["get", "list"]\n---\nkind: ClusterRoleBinding\nrules: []\n')
        self.assertEqual(parse_cluster_role(text), [
            {"apiGroups": [""], "resources": ["pods", "pods/status"], "verbs": ["get", "update"]},
            {"apiGroups": ["resource.k8s.io"],
             "resources": ["resourceclaims", "resourceclaims/status"],
             "verbs": ["get", "list"]}])
        for bad in ("kind: Role\nrules: []\n", "kind: ClusterRole\nrules:\n  - verbs: get\n",
                    "kind: ClusterRole\nrules:\n  - weird: [x]\n"):
            with self.assertRaises(RoleFormatError):
                parse_cluster_role(bad)

    def test_group_absent_switch(self) -> None:
        options = self.api.set_options(disabled_groups=["resource.k8s.io"])
        self.assertEqual(options["disabled_groups"], ["resource.k8s.io"])
        for path in (DRA_CLAIMS + "/nic", DRA_CLAIMS + "/nic/status", DRA_SLICES,
                     "/apis/resource.k8s.io", "/apis/resource.k8s.io/v1"):
            reply = self.call("GET", path)
            self.assertEqual((reply.status, reply.json["message"], reply.json["details"]),
                             (404, "the server could not find the requested resource", {}), path)
        groups = [g["name"] for g in self.call("GET", "/apis").json["groups"]]
        self.assertEqual(groups, ["events.k8s.io", "k8s.cni.cncf.io"])
        self.assertEqual(self.call("GET", POD).status, 200)
        self.assertEqual(self.api.get_resource_claim("default", "nic")["metadata"]["name"], "nic")
        with self.assertRaises(AdminError):
            self.api.set_options(disabled_groups=[""])
        self.api.set_options(disabled_groups=[])
        self.assertEqual(self.call("GET", DRA_CLAIMS + "/nic").status, 200)
        with ApiServerDouble(disabled_groups=["resource.k8s.io"]) as old:
            self.assertEqual(old.options()["disabled_groups"], ["resource.k8s.io"])

    def test_faults_on_dra_paths(self) -> None:
        self.api.add_fault(path="/resourceclaims/nic$", status=500, count=2)
        replies = [self.call("GET", DRA_CLAIMS + "/nic") for _ in range(3)]
        self.assertEqual([r.status for r in replies], [500, 500, 200])
        self.assertEqual(replies[0].json["reason"], "InternalError")
        self.api.add_fault(path="^/apis/resource.k8s.io/v1/resourceslices$", status=429,
                           retry_after=2, query="spec.nodeName=node1")
        self.assertEqual(self.slice_names("spec.nodeName=node2"), ["node2-sriov"])
        throttled = self.call("GET", DRA_SLICES + "?fieldSelector=spec.nodeName%3Dnode1")
        self.assertEqual((throttled.status, throttled.headers["retry-after"]), (429, "2"))
        self.api.add_fault(path="/resourceclaims/nic$", status=404)
        gone = self.call("GET", DRA_CLAIMS + "/nic").json
        self.assertEqual(gone["message"], 'resourceclaims.resource.k8s.io "nic" not found')
        self.api.add_fault(path="/resourceslices$", action="truncate", truncate_at=30)
        self.assertEqual(len(self.call("GET", DRA_SLICES).raw), 30)
        self.api.add_fault(path="/resourceclaims/", action="drop")
        with self.assertRaises((http.client.RemoteDisconnected, ConnectionError, ssl.SSLError)):
            self.call("GET", DRA_CLAIMS + "/nic")
        claim = self.api.get_resource_claim("default", "nic")
        self.api.add_fault(path="/resourceclaims/nic/status$", action="conflict", method="PUT")
        conflict = self.call("PUT", DRA_CLAIMS + "/nic/status", body=claim)
        self.assertEqual((conflict.status, conflict.json["reason"]), (409, "Conflict"))
        self.assertGreater(rv(self.api.get_resource_claim("default", "nic")), rv(claim))
        outcomes = [(e["outcome"], e["status"]) for e in self.api.requests()]
        self.assertEqual(outcomes[-3:], [("truncated", 200), ("dropped", None), ("ok", 409)])

    def test_discovery_and_tables(self) -> None:
        doc = self.call("GET", "/apis/resource.k8s.io/v1").json
        self.assertEqual([(r["name"], r["kind"], r["namespaced"], r["verbs"])
                          for r in doc["resources"]], [
            ("resourceclaims", "ResourceClaim", True,
             ["create", "delete", "get", "list", "patch", "update", "watch"]),
            ("resourceclaims/status", "ResourceClaim", True, ["get", "patch", "update"]),
            ("resourceslices", "ResourceSlice", False,
             ["create", "delete", "get", "list", "patch", "update", "watch"])])
        table = "application/json;as=Table;v=v1;g=meta.k8s.io"
        slices = self.call("GET", DRA_SLICES, headers={"Accept": table}).json
        self.assertEqual([c["name"] for c in slices["columnDefinitions"]],
                         ["Name", "Node", "Driver", "Pool", "Age"])
        self.assertEqual([r["cells"][:4] for r in slices["rows"]][-1],
                         ["shared", "", "sriov.example.com", "fabric"])
        claims = self.call("GET", DRA_CLAIMS, headers={"Accept": table}).json
        self.assertEqual([r["cells"][:2] for r in claims["rows"]],
                         [["nic", "allocated"], ["pending", "pending"]])


class PolicyObjectsTest(DoubleTestCase):
    """k8s.cni.cncf.io/v1beta1 MultiNetworkPolicies and v1 Namespaces, as MultiNetworkPolicy
    enforcement reads them: LIST of a namespace's policies, GET of a namespace."""

    POLICIES = "/apis/k8s.cni.cncf.io/v1beta1/namespaces/%s/multi-networkpolicies"

    def setUp(self) -> None:
        super().setUp()
        for ns, name in (("default", "a"), ("default", "b"), ("other", "c")):
            self.api.delete_object("multi-networkpolicies", name, namespace=ns)
        self.api.delete_object("namespaces", "team-a")
        self.api.add_multi_network_policy("default", "b", {"podSelector": {}, "policyTypes": ["Egress"]},
                                          policy_for="blue")
        self.api.add_multi_network_policy("default", "a", policy_for="other/red,blue")
        self.api.add_multi_network_policy("other", "c")
        self.api.add_namespace("team-a", {"team": "a"})
        self.api.clear_requests()

    def test_list_a_namespace_of_policies(self) -> None:
        reply = self.call("GET", self.POLICIES % "default")
        self.assertEqual(reply.status, 200, reply.raw)
        listed = reply.json
        self.assertEqual((listed["kind"], listed["apiVersion"]), ("MultiNetworkPolicyList", "k8s.cni.cncf.io/v1beta1"))
        self.assertEqual([i["metadata"]["name"] for i in listed["items"]], ["a", "b"])
        first = listed["items"][0]
        self.assertEqual(first["metadata"]["annotations"], {"k8s.v1.cni.cncf.io/policy-for": "other/red,blue"})
        self.assertEqual(first["spec"], {"podSelector": {}})
        self.assertEqual(self.call("GET", self.POLICIES % "empty").json["items"], [])
        one = self.call("GET", self.POLICIES % "default" + "/b").json
        self.assertEqual(one["spec"]["policyTypes"], ["Egress"])
        self.assertEqual(self.call("GET", self.POLICIES % "default" + "/zz").status, 404)
        self.assertEqual([(e["verb"], e["status"]) for e in self.api.requests()],
                         [("list", 200), ("list", 200), ("get", 200), ("get", 404)])

    def test_get_and_list_namespaces(self) -> None:
        ns = self.call("GET", "/api/v1/namespaces/team-a")
        self.assertEqual(ns.status, 200, ns.raw)
        self.assertEqual((ns.json["kind"], ns.json["metadata"]["labels"]), ("Namespace", {"team": "a"}))
        self.assertEqual(self.call("GET", "/api/v1/namespaces/absent").status, 404)
        names = [i["metadata"]["name"] for i in self.call("GET", "/api/v1/namespaces").json["items"]]
        self.assertIn("team-a", names)
        self.assertEqual(self.call("GET", "/api/v1/namespaces/team-a/pods").json["kind"], "PodList")

    def test_rbac_decides(self) -> None:
        from kdouble.access import manifold_rbac
        self.api.set_rbac([r for r in manifold_rbac() if "multi-networkpolicies" not in r["resources"]])
        denied = self.call("GET", self.POLICIES % "default")
        self.assertEqual((denied.status, denied.json["message"]), (403, (
            f'multi-networkpolicies.k8s.cni.cncf.io is forbidden: User "{USER}" cannot list resource '
            f'"multi-networkpolicies" in API group "k8s.cni.cncf.io" in the namespace "default"')))
        self.api.set_rbac(manifold_rbac())  # the shipped role grants the list
        self.assertEqual(self.call("GET", self.POLICIES % "default").status, 200)
        self.assertEqual(self.call("GET", "/api/v1/namespaces/team-a").status, 403)

    def test_watch_policies_and_namespaces(self) -> None:
        reader = self.open_stream("/apis/k8s.cni.cncf.io/v1beta1/multi-networkpolicies", "watch=1")
        self.assertEqual(reader.status, 200, reader.body)
        self.assertEqual(kinds(reader.events(3)), [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")])
        self.api.add_multi_network_policy("other", "d", policy_for="blue")
        self.addCleanup(self.api.delete_object, "multi-networkpolicies", "d", namespace="other")
        self.api.add_multi_network_policy("other", "d", policy_for="red")
        self.api.delete_object("multi-networkpolicies", "b", namespace="default")
        events = reader.events(3)
        self.assertEqual(kinds(events), [("ADDED", "d"), ("MODIFIED", "d"), ("DELETED", "b")])
        self.assertEqual(events[1]["object"]["metadata"]["annotations"], {"k8s.v1.cni.cncf.io/policy-for": "red"})
        self.assertLess(rv(events[1]["object"]), rv(events[2]["object"]))
        labelled = self.open_stream("/api/v1/namespaces", "watch=1&labelSelector=team")
        self.assertEqual(kinds(labelled.events(1)), [("ADDED", "team-a")])
        self.api.add_namespace("team-a", {"other": "x"})
        self.assertEqual(kinds(labelled.events(1)), [("DELETED", "team-a")])

    def test_watch_nads_of_every_namespace(self) -> None:
        self.api.add_nad("nads-a", "x", "{}")
        self.addCleanup(self.api.delete_nad, "nads-a", "x")
        listed = self.call("GET", "/apis/k8s.cni.cncf.io/v1/network-attachment-definitions").json
        self.assertIn(("nads-a", "x"), [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in listed["items"]])
        reader = self.open_stream("/apis/k8s.cni.cncf.io/v1/network-attachment-definitions",
                                  "watch=1&resourceVersion=" + listed["metadata"]["resourceVersion"],
                                  headers={"Accept": "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"})
        self.api.add_nad("nads-b", "y", "{}")
        self.api.delete_nad("nads-b", "y")
        events = reader.events(2)
        self.assertEqual(kinds(events), [("ADDED", "y"), ("DELETED", "y")])
        self.assertEqual(events[0]["object"]["kind"], "PartialObjectMetadata")

    def test_paged_lists(self) -> None:
        for name in ("p1", "p2", "p3"):
            self.api.add_pod("paging", name)
        first = self.call("GET", "/api/v1/namespaces/paging/pods?limit=2").json
        self.assertEqual([i["metadata"]["name"] for i in first["items"]], ["p1", "p2"])
        self.api.modify_pod("paging", "p3", labels={"late": "yes"})
        token = first["metadata"]["continue"]
        rest = self.call("GET", "/api/v1/namespaces/paging/pods?limit=2&continue=" + token).json
        self.assertEqual([i["metadata"]["name"] for i in rest["items"]], ["p3"])
        self.assertNotIn("continue", rest["metadata"])
        self.assertEqual(rest["metadata"]["resourceVersion"], first["metadata"]["resourceVersion"])
        policies = self.call("GET", "/apis/k8s.cni.cncf.io/v1beta1/multi-networkpolicies?limit=1").json
        self.assertEqual(len(policies["items"]), 1)
        self.assertIn("continue", policies["metadata"])
        self.assertEqual(self.call("GET", "/api/v1/pods?limit=1&continue=garbage").status, 400)

    def test_metadata_only(self) -> None:
        self.api.add_pod("default", "meta", labels={"app": "m"}, annotations={"a": "b"})
        listed = self.call("GET", "/api/v1/pods", headers={
            "Accept": "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"}).json
        self.assertEqual((listed["kind"], listed["apiVersion"]), ("PartialObjectMetadataList", "meta.k8s.io/v1"))
        item = [i for i in listed["items"] if i["metadata"]["name"] == "meta"][0]
        self.assertEqual(sorted(item), ["apiVersion", "kind", "metadata"])
        self.assertEqual((item["kind"], item["metadata"]["labels"]), ("PartialObjectMetadata", {"app": "m"}))
        wrong = self.call("GET", "/api/v1/pods", headers={
            "Accept": "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"})
        self.assertEqual(wrong.status, 406)
        reader = self.open_stream("/api/v1/namespaces/default/pods", "watch=1&fieldSelector=metadata.name%3Dmeta",
                                  headers={"Accept": "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"})
        event = reader.events(1)[0]
        self.assertEqual((event["type"], event["object"]["kind"], event["object"]["metadata"]["annotations"]),
                         ("ADDED", "PartialObjectMetadata", {"a": "b"}))
        self.assertNotIn("spec", event["object"])


class KubectlTest(DoubleTestCase):
    """The machine's real kubectl against the double, with the admin kubeconfig it wrote."""

    def kubectl(self, *args: str) -> str:
        """Runs kubectl (it must be installed: test/install-deps.sh) and returns its stdout."""
        binary = shutil.which("kubectl")
        self.assertIsNotNone(binary, "kubectl is not on PATH: run test/install-deps.sh")
        proc = subprocess.run([binary, "--kubeconfig", self.api.admin_kubeconfig,
                               "--cache-dir", self.cache_dir, *args],
                              capture_output=True, text=True, timeout=60, check=False)
        self.assertEqual(proc.returncode, 0, f"kubectl {' '.join(args)}: {proc.stderr}")
        return proc.stdout

    def setUp(self) -> None:
        super().setUp()
        self.api.set_rbac("manifold")
        self.cache_dir = tempfile.mkdtemp(prefix="kubectl-cache-")
        self.addCleanup(shutil.rmtree, self.cache_dir, True)

    def test_get_pod_yaml_and_annotate_overwrite(self) -> None:
        status = '[{"name":"cluster","interface":"eth0","ips":["192.0.2.5"],"default":true}]'
        self.api.modify_pod("default", "web", annotations={
            "k8s.v1.cni.cncf.io/network-status": status})
        text = self.kubectl("get", "pod", "web", "-n", "default", "-o", "yaml")
        self.assertIn("kind: Pod\n", text)
        self.assertIn("  name: web\n", text)
        self.assertIn(f"    k8s.v1.cni.cncf.io/network-status: '{status}'\n", text)
        out = self.kubectl("annotate", "pod", "web", "-n", "default", "--overwrite",
                           "k8s.v1.cni.cncf.io/networks=data,storage")
        self.assertEqual(out, "pod/web annotated\n")
        self.kubectl("annotate", "pod", "web", "-n", "default", "--overwrite",
                     "k8s.v1.cni.cncf.io/networks=data")
        stored = self.api.get_pod("default", "web")["metadata"]["annotations"]
        self.assertEqual(stored["k8s.v1.cni.cncf.io/networks"], "data")
        self.assertEqual(stored["existing"], "yes")
        patches = self.api.requests(method="PATCH")
        self.assertEqual([(p["path"], p["status"], p["user"]) for p in patches],
                         [(POD, 200, "kubernetes-admin")] * 2)

    def test_get_pods_and_net_attach_defs(self) -> None:
        self.api.add_nad("default", "data", {"cniVersion": "1.0.0", "type": "macvlan"})
        pods = self.kubectl("get", "pods", "-n", "default").splitlines()
        self.assertEqual(pods[0].split(), ["NAME", "READY", "STATUS", "RESTARTS", "AGE"])
        self.assertEqual(pods[-1].split()[:4], ["web", "0/1", "Pending", "0"])
        nads = self.kubectl("get", "net-attach-def", "-n", "default").splitlines()
        self.assertEqual([line.split()[0] for line in nads], ["NAME", "data"])

    def test_annotate_overwrite_is_a_modified_event_for_a_watcher(self) -> None:
        before = self.api.get_pod("default", "web")
        reader = self.open_stream(PODS, urlencode({   # manifold's identity, under its RBAC
            "watch": "1", "resourceVersion": before["metadata"]["resourceVersion"],
            "fieldSelector": "metadata.namespace=default,metadata.name=web"}))
        self.assertEqual(reader.status, 200)
        self.kubectl("annotate", "pod", "web", "-n", "default", "--overwrite",
                     "k8s.v1.cni.cncf.io/networks=data")
        [event] = reader.events(1)
        self.assertEqual(event["type"], "MODIFIED")
        self.assertEqual(event["object"]["metadata"]["annotations"],
                         {"existing": "yes", "k8s.v1.cni.cncf.io/networks": "data"})
        self.assertGreater(rv(event["object"]), rv(before))
        self.assertEqual(event["object"], self.api.get_pod("default", "web"))

    def test_get_pods_across_namespaces_and_watch_them(self) -> None:
        self.api.add_pod("kube-system", "dns", node_name="node2")
        wide = self.kubectl("get", "pods", "-A", "-o", "wide",
                            "--field-selector", "spec.nodeName=node2").splitlines()
        self.assertEqual(wide[0].split(), ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS",
                                           "AGE", "IP", "NODE"])
        self.assertEqual([line.split()[:2] for line in wide[1:]], [["kube-system", "dns"]])
        with tempfile.TemporaryFile() as errors:
            proc = subprocess.Popen([shutil.which("kubectl") or "kubectl", "--kubeconfig",
                                     self.api.admin_kubeconfig, "--cache-dir", self.cache_dir,
                                     "get", "pods", "-n", "default", "-w",
                                     "--output-watch-events"],
                                    stdout=subprocess.PIPE, stderr=errors)
            self.addCleanup(proc.wait, GUARD)
            self.addCleanup(proc.terminate)
            self.addCleanup(proc.stdout.close)
            [watch] = self.api.wait_for_watches(path="^/api/v1/namespaces/default/pods$")
            self.assertIn("watch=true", watch["query"])
            self.api.modify_pod("default", "web", annotations={"changed": "yes"})
            lines = self.read_until(proc, lambda words: words[:2] == ["MODIFIED", "web"])
        self.assertEqual(lines[0].split()[:2], ["EVENT", "NAME"])
        self.assertEqual(lines[1].split()[:4], ["ADDED", "web", "0/1", "Pending"])

    def test_get_create_and_delete_dra_objects(self) -> None:
        self.api.delete_resource_claim("default", "made")
        self.api.add_resource_slice("node1-sriov", driver="sriov.example.com", node_name="node1")
        self.api.add_resource_claim("default", "nic", results=[
            {"request": "nic", "driver": "sriov.example.com", "pool": "node1", "device": "vf-0"}])
        slices = self.kubectl("get", "resourceslices").splitlines()
        self.assertEqual(slices[0].split(), ["NAME", "NODE", "DRIVER", "POOL", "AGE"])
        self.assertIn(["node1-sriov", "node1", "sriov.example.com", "node1"],
                      [line.split()[:4] for line in slices[1:]])
        path = os.path.join(self.cache_dir, "claim.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                       "metadata": {"name": "made", "namespace": "default"},
                       "spec": {"devices": {"requests": [
                           {"name": "r", "exactly": {"deviceClassName": "x.example.com"}}]}}}, f)
        # No OpenAPI in the double: kubectl's client-side validation must be off.
        self.assertEqual(self.kubectl("create", "--validate=false", "-f", path),
                         "resourceclaim.resource.k8s.io/made created\n")
        claims = self.kubectl("get", "resourceclaims", "-n", "default").splitlines()
        self.assertEqual(claims[0].split(), ["NAME", "STATE", "AGE"])
        self.assertEqual([line.split()[:2] for line in claims[1:]],
                         [["made", "pending"], ["nic", "allocated"]])
        self.assertEqual(self.kubectl("delete", "resourceclaim", "made", "-n", "default"),
                         'resourceclaim.resource.k8s.io "made" deleted\n')
        self.assertIsNone(self.api.get_resource_claim("default", "made"))

    def read_until(self, proc: subprocess.Popen, done: Any) -> list[str]:
        """kubectl's output lines once one of them (split into words) satisfies done."""
        deadline = time.monotonic() + GUARD
        output = b""
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            while not any(done(line.split()) for line in output.decode().splitlines()):
                remaining = deadline - time.monotonic()
                self.assertGreater(remaining, 0, f"kubectl printed {output!r}")
                if sel.select(remaining):
                    chunk = os.read(proc.stdout.fileno(), 65536)
                    self.assertTrue(chunk, f"kubectl exited after printing {output!r}")
                    output += chunk
        return output.decode().splitlines()

    def test_the_double_writes_both_kubeconfigs(self) -> None:
        admin = read_text(self.api.admin_kubeconfig)
        self.assertIn(f'token: "{self.api.admin_token}"', admin)
        manifold = read_text(self.api.kubeconfig)
        self.assertIn(f'token: "{self.initial_token}"', manifold)
        for path in (self.api.kubeconfig, self.api.admin_kubeconfig):
            self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)


class CtlTest(DoubleTestCase):
    """ctl.py, the shell front end of the admin API."""

    def ctl(self, *args: str) -> str:
        """Runs ctl.py against this double and returns its stdout."""
        proc = subprocess.run([sys.executable, os.path.join(HERE, "ctl.py"), self.api.dir,
                               *args], capture_output=True, text=True, timeout=60, check=True)
        return proc.stdout

    def test_add_objects_and_read_the_log(self) -> None:
        out = self.ctl("add-pod", "demo", "web", "--uid", "u1", "--annotation", "a=b=c")
        self.assertEqual(out, "pod demo/web (uid u1)\n")
        self.assertEqual(self.api.get_pod("demo", "web")["metadata"]["annotations"], {"a": "b=c"})
        with tempfile.NamedTemporaryFile("w", suffix=".json") as config:
            config.write('{"cniVersion":"1.0.0","type":"macvlan"}')
            config.flush()
            self.ctl("add-nad", "demo", "data", config.name)
        self.call("GET", NADS.replace("default", "demo") + "/data")
        self.assertEqual(self.ctl("requests", "--user", USER),
                         f"GET {NADS.replace('default', 'demo')}/data 200\n")
        self.assertEqual(self.ctl("requests", "--user", "nobody"), "")

    def test_add_object(self) -> None:
        with tempfile.NamedTemporaryFile("w", suffix=".json") as obj:
            json.dump({"spec": {"driver": "sriov.example.com", "nodeName": "node9",
                                "pool": {"name": "node9", "generation": 1,
                                         "resourceSliceCount": 1}}}, obj)
            obj.flush()
            out = self.ctl("add-object", "resourceslices", "node9-sriov", obj.name)
            stored = self.api.get_resource_slice("node9-sriov")
            self.assertEqual(out, f"resourceslices node9-sriov (resourceVersion "
                                  f"{stored['metadata']['resourceVersion']})\n")
            self.assertEqual(stored["spec"]["nodeName"], "node9")
        with tempfile.NamedTemporaryFile("w", suffix=".json") as obj:
            json.dump({"spec": {"devices": {"requests": [{"name": "r"}]}}, "status": {
                "allocation": {"devices": {"results": [{"request": "r", "driver": "d",
                                                        "pool": "p", "device": "x"}]}}}}, obj)
            obj.flush()
            self.ctl("add-object", "resourceclaims", "c1", obj.name, "--namespace", "demo")
        claim = self.api.get_resource_claim("demo", "c1")
        self.assertEqual(claim["status"]["allocation"]["devices"]["results"][0]["device"], "x")

    def test_watch_commands(self) -> None:
        fault_id = int(self.ctl("fault", "watch_end", "--path", "^/api/v1/namespaces/ctl/pods$",
                                "--forever"))
        [fault] = self.api.faults()
        self.assertEqual((fault["id"], fault["action"], fault["count"], fault["watch"]),
                         (fault_id, "watch_end", None, True))
        status = int(self.ctl("fault", "status", "--status", "429", "--no-watch", "--count", "2",
                              "--query", "labelSelector"))
        self.assertEqual(self.api.faults()[-1]["id"], status)
        self.assertEqual(self.ctl("watches"), "")
        self.assertEqual(self.open_stream("/api/v1/namespaces/default/pods", "watch=1").status,
                         200)
        [watch] = self.api.wait_for_watches()
        self.assertEqual(self.ctl("watches"),
                         f"{watch['id']} {USER} /api/v1/namespaces/default/pods?watch=1\n")
        self.assertEqual(self.ctl("compact"), self.api.watch_history()["floor"] + "\n")
        self.ctl("clear-faults")
        self.assertEqual(self.api.faults(), [])


class LifecycleTest(unittest.TestCase):
    """Start and stop of the process."""

    def test_stop_closes_listeners_and_open_connections(self) -> None:
        api = ApiServerDouble(ipv6=False).start()
        conn = http.client.HTTPSConnection("127.0.0.1", api.port, timeout=5,
                                           context=api.ssl_context(cert=True))
        conn.request("GET", "/version")
        self.assertEqual(conn.getresponse().read() != b"", True)
        self.assertIsNone(api.url6)
        directory = api.dir
        self.assertTrue(os.path.exists(os.path.join(directory, "ready.json")))
        api.stop()
        self.assertFalse(api.running)
        self.assertFalse(os.path.exists(directory))
        with self.assertRaises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", api.port), timeout=2).close()
        conn.close()


if __name__ == "__main__":
    unittest.main()
