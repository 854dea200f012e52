"""Tests of the Kubernetes API server double, driven through its process and admin API.

They talk to the double with http.client and ssl exactly as a client would: TLS verification and
the three authentication outcomes (and the admin identity), real Status bodies, resourceVersion
conflicts, every fault action, the request log and keep-alive connection ids, NADs, events,
discovery, Table output, merge and strategic merge PATCH, and the kubeconfig writer; then the
machine's real kubectl (required: a missing kubectl fails) and ctl.py drive the double as an
operator's shell would. No root and no network are needed.
Run: python3 -m unittest -v test_apiserver (in this directory).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
from typing import Any, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from apiserver_double import AdminError, ApiServerDouble  # noqa: E402

POD = "/api/v1/namespaces/default/pods/web"
NADS = "/apis/k8s.cni.cncf.io/v1/namespaces/default/network-attachment-definitions"
USER = "system:serviceaccount:kube-system:manifold"


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
        api.set_options(strict_resource_version=True)
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
        self.assertEqual(self.call("GET", NADS).status, 200)
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
        self.assertEqual([g["name"] for g in apis["groups"]], ["events.k8s.io", "k8s.cni.cncf.io"])
        group = self.call("GET", "/apis/k8s.cni.cncf.io").json
        self.assertEqual((group["kind"], group["preferredVersion"]),
                         ("APIGroup", {"groupVersion": "k8s.cni.cncf.io/v1", "version": "v1"}))

    def test_resource_lists_advertise_the_served_verbs(self) -> None:
        core = self.call("GET", "/api/v1").json
        self.assertEqual((core["kind"], core["groupVersion"]), ("APIResourceList", "v1"))
        verbs = {r["name"]: r["verbs"] for r in core["resources"]}
        self.assertEqual(verbs, {"events": ["create"], "pods": ["get", "list", "patch", "update"],
                                 "pods/status": ["get", "patch", "update"]})
        pods = [r for r in core["resources"] if r["name"] == "pods"][0]
        self.assertEqual((pods["kind"], pods["singularName"], pods["namespaced"],
                          pods["shortNames"]), ("Pod", "pod", True, ["po"]))
        nads = self.call("GET", "/apis/k8s.cni.cncf.io/v1").json
        self.assertEqual(nads["groupVersion"], "k8s.cni.cncf.io/v1")
        self.assertEqual(nads["resources"], [{
            "name": "network-attachment-definitions",
            "singularName": "network-attachment-definition", "namespaced": True,
            "kind": "NetworkAttachmentDefinition", "verbs": ["get", "list"],
            "shortNames": ["net-attach-def"]}])

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
