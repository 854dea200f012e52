"""Tests of the kubelet PodResources double, driven by a real gRPC client and by raw sockets.

The client is a python3-grpcio generic stub whose deserializer is the ListPodResourcesResponse
class built from the same descriptor set the double encodes with (lib/kubelet/podresources.proto).
Each test proves one mode behaves as documented in podresources_double.py: the configured pods
decode (including the fields manifold skips), an error status arrives with its code, a hung call
ends by the client's deadline and is released by stop(), garbage bytes fail to parse, an oversized
answer exceeds a 16 MiB client limit, a stale socket refuses connections, and the plain-socket
modes reset, answer non-HTTP/2 bytes or stay silent. Deadlines here only bound a call whose
outcome is the deadline (hang, silent) or guard a broken test; nothing waits by sleeping.
No root is needed. Run: python3 -m unittest -v test_podresources_double (in this directory).
"""
import os
import socket
import stat
import sys
import tempfile
import unittest

import grpc
from google.protobuf.message import DecodeError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from podresources_double import LIST_METHOD, MIB, PodResourcesDouble  # noqa: E402

GUARD = 30.0  # seconds: only ever ends a broken test
SHORT = 0.5  # seconds: the client deadline of calls meant to hang
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SRIOV_POD = {"name": "web", "namespace": "default", "containers": [{
    "name": "app",
    "devices": [{"resource_name": "example.com/sriov", "device_ids": ["vf1", "vf0"]}]}]}
SKIPPED_FIELDS_POD = {"name": "db", "namespace": "prod", "containers": [{
    "name": "main",
    "devices": [{"resource_name": "example.com/sriov", "device_ids": ["0000:af:06.0"],
                 "topology": {"nodes": [{"ID": 1}]}}],
    "cpu_ids": [2, 3],
    "memory": [{"memory_type": "hugepages-1Gi", "size": 1 << 30,
                "topology": {"nodes": [{"ID": 0}]}}],
    "dynamic_resources": [{"claim_name": "gpu", "claim_namespace": "prod", "claim_resources": [
        {"cdi_devices": [{"name": "vendor.com/gpu=0"}], "driver_name": "gpu.vendor.com",
         "pool_name": "node1", "device_name": "gpu-0"}]}]}]}


class DoubleTestCase(unittest.TestCase):
    """Starts a double on a socket in a fresh temporary directory; offers a client."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="podres-")
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name
        self.double = PodResourcesDouble(os.path.join(self.dir, "kubelet.sock"))
        self.double.set_pods([SRIOV_POD, SKIPPED_FIELDS_POD])
        self.double.start()
        self.addCleanup(self.double.stop)

    def channel(self, max_receive=None):
        """A fresh channel to the double (no reconnect backoff carried over between calls)."""
        options = [] if max_receive is None else [("grpc.max_receive_message_length", max_receive)]
        channel = grpc.insecure_channel(self.double.address, options=options)
        self.addCleanup(channel.close)
        return channel

    def stub(self, channel, raw=False):
        """The List stub: decodes answers with the descriptor set's class unless raw."""
        decode = None if raw else self.double.codec.response.FromString
        return channel.unary_unary(LIST_METHOD, request_serializer=lambda m: m.SerializeToString(),
                                   response_deserializer=decode)

    def list(self, timeout=GUARD, raw=False, max_receive=None):
        """One List call; returns the answer or raises grpc.RpcError."""
        stub = self.stub(self.channel(max_receive), raw)
        return stub(self.double.codec.request(), timeout=timeout)

    def list_error(self, timeout=GUARD, **kw):
        """One List call that must fail; returns its grpc.RpcError."""
        with self.assertRaises(grpc.RpcError) as caught:
            self.list(timeout=timeout, **kw)
        return caught.exception

    def raw_connect(self):
        """A plain unix stream socket connected to the double's path."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(sock.close)
        sock.settimeout(GUARD)
        sock.connect(self.double.path)
        return sock


class OkModeTest(DoubleTestCase):
    def test_answer_decodes_to_the_configured_pods(self):
        answer = self.list()
        expected = self.double.codec.response_message([SRIOV_POD, SKIPPED_FIELDS_POD])
        self.assertEqual(answer, expected)
        devices = answer.pod_resources[0].containers[0].devices[0]
        self.assertEqual((devices.resource_name, list(devices.device_ids)),
                         ("example.com/sriov", ["vf1", "vf0"]))
        container = answer.pod_resources[1].containers[0]
        self.assertEqual(list(container.cpu_ids), [2, 3])
        self.assertEqual(container.memory[0].size, 1 << 30)
        self.assertEqual(container.dynamic_resources[0].claim_resources[0].device_name, "gpu-0")
        self.assertEqual(container.devices[0].topology.nodes[0].ID, 1)

    def test_requests_are_logged(self):
        self.list(timeout=20)
        [request] = self.double.requests()
        self.assertEqual(request["method"], LIST_METHOD)
        self.assertEqual(request["request"], b"")
        self.assertEqual(request["mode"], "ok")
        self.assertIn("grpc-python", request["metadata"]["user-agent"])
        self.assertTrue(10 < request["deadline"] < 21)  # grpc-timeout rounds up a little

    def test_no_deadline_is_logged_as_none(self):
        self.list(timeout=None)
        self.assertIsNone(self.double.requests()[0]["deadline"])

    def test_set_pods_applies_to_the_next_call(self):
        self.double.set_pods([])
        self.assertEqual(len(self.list().pod_resources), 0)
        self.double.set_pods([SRIOV_POD])
        self.assertEqual([p.name for p in self.list().pod_resources], ["web"])

    def test_unknown_field_is_refused(self):
        with self.assertRaises(ValueError):
            self.double.set_pods([{"name": "x", "uid": "not-a-field"}])

    def test_other_methods_are_unimplemented_and_logged(self):
        method = "/v1.PodResourcesLister/GetAllocatableResources"
        with self.assertRaises(grpc.RpcError) as caught:
            self.channel().unary_unary(method)(b"", timeout=GUARD)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
        self.assertEqual([(r["method"], r["mode"]) for r in self.double.requests()],
                         [(method, "unimplemented")])


class GrpcFaultModesTest(DoubleTestCase):
    def test_error_answers_the_status(self):
        self.double.set_mode("error")
        error = self.list_error()
        self.assertEqual(error.code(), grpc.StatusCode.UNAVAILABLE)
        self.double.set_mode("error", code="PERMISSION_DENIED", message="no access")
        error = self.list_error()
        self.assertEqual((error.code(), error.details()),
                         (grpc.StatusCode.PERMISSION_DENIED, "no access"))

    def test_hang_ends_by_the_client_deadline(self):
        self.double.set_mode("hang")
        self.assertEqual(self.list_error(timeout=SHORT).code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertEqual(self.double.requests()[0]["mode"], "hang")
        self.double.set_mode("ok")
        self.assertEqual(len(self.list().pod_resources), 2)

    def test_stop_releases_a_hung_call_and_removes_the_socket(self):
        self.double.set_mode("hang")
        call = self.stub(self.channel()).future(self.double.codec.request(), timeout=GUARD)
        self.double.wait_for_requests(1, GUARD)
        self.assertEqual(self.double.hung(), 1)
        self.double.stop()
        self.assertNotEqual(call.exception(timeout=GUARD).code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertEqual(self.double.hung(), 0)
        self.assertFalse(os.path.lexists(self.double.path))
        self.assertEqual(os.listdir(self.dir), ["podresources.desc"])

    def test_garbage_is_not_protobuf(self):
        self.double.set_mode("garbage")
        data = self.list(raw=True)
        with self.assertRaises(DecodeError):
            self.double.codec.decode(data)
        self.assertEqual(self.list_error().code(), grpc.StatusCode.INTERNAL)  # deserializer fails

    def test_garbage_payload_is_configurable(self):
        self.double.set_mode("garbage", payload=b"\xff\xff")
        self.assertEqual(self.list(raw=True), b"\xff\xff")

    def test_oversized_exceeds_a_16_mib_client_and_is_valid(self):
        self.double.set_mode("oversized")
        error = self.list_error(max_receive=16 * MIB)
        self.assertEqual(error.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        data = self.list(raw=True, max_receive=64 * MIB)
        self.assertGreaterEqual(len(data), 17 * MIB)
        answer = self.double.codec.decode(data)
        self.assertEqual([p.name for p in answer.pod_resources[:2]], ["web", "db"])

    def test_oversized_size_is_configurable(self):
        self.double.set_mode("oversized", size=2 * MIB)
        self.assertGreaterEqual(len(self.list(raw=True)), 2 * MIB)


class SocketFaultModesTest(DoubleTestCase):
    def test_stale_socket_refuses_connections(self):
        self.double.set_mode("stale")
        self.assertTrue(stat.S_ISSOCK(os.lstat(self.double.path).st_mode))
        with self.assertRaises(ConnectionRefusedError):
            self.raw_connect()
        self.assertEqual(self.list_error().code(), grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(self.double.requests(), [])

    def test_reset_closes_with_econnreset(self):
        self.double.set_mode("reset")
        sock = self.raw_connect()
        sock.sendall(PREFACE)
        with self.assertRaises(ConnectionResetError):
            sock.recv(100)
        self.assertEqual(self.double.wait_for_connections(1, GUARD)[0]["received"], PREFACE)
        self.assertEqual(self.list_error().code(), grpc.StatusCode.UNAVAILABLE)

    def test_http_garbage_writes_non_http2_bytes_then_eof(self):
        self.double.set_mode("http-garbage")
        sock = self.raw_connect()
        received = b""
        while chunk := sock.recv(4096):
            received += chunk
        self.assertTrue(received.startswith(b"HTTP/1.1 400"))
        self.assertEqual(self.list_error().code(), grpc.StatusCode.UNAVAILABLE)
        connections = self.double.wait_for_connections(1, GUARD, lambda c: c["received"])
        self.assertEqual([c["received"].startswith(PREFACE) for c in connections], [False, True])

    def test_silent_accepts_and_never_answers(self):
        self.double.set_mode("silent")
        sock = self.raw_connect()
        sock.sendall(PREFACE)
        sock.settimeout(SHORT)
        with self.assertRaises(socket.timeout):
            sock.recv(100)
        self.assertEqual(self.list_error(timeout=SHORT).code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertEqual([c["mode"] for c in self.double.wait_for_connections(2, GUARD)],
                         ["silent", "silent"])

    def test_modes_switch_back_to_grpc(self):
        for mode in ("reset", "http-garbage", "silent", "stale", "error"):
            self.double.set_mode(mode)
            self.double.set_mode("ok")
            self.assertEqual(len(self.list().pod_resources), 2, mode)

    def test_stop_removes_the_socket_in_every_mode(self):
        for mode in ("ok", "reset", "silent", "stale"):
            self.double.set_mode(mode)
            if mode == "silent":
                self.raw_connect()  # a connection held open across stop()
            self.double.stop()
            self.assertFalse(os.path.lexists(self.double.path), mode)
            self.double.start()
        self.assertEqual(sorted(os.listdir(self.dir)), ["kubelet.sock", "podresources.desc"])


class LifecycleTest(unittest.TestCase):
    def test_context_manager_and_unix_prefix(self):
        with tempfile.TemporaryDirectory(prefix="podres-") as tmp:
            path = os.path.join(tmp, "sub", "kubelet.sock")
            with PodResourcesDouble("unix:" + path, work_dir=os.path.join(tmp, "work")) as double:
                self.assertEqual(double.address, "unix:" + path)
                self.assertTrue(stat.S_ISSOCK(os.lstat(path).st_mode))
            self.assertFalse(os.path.lexists(path))
            self.assertEqual(os.listdir(os.path.join(tmp, "work")), ["podresources.desc"])

    def test_relative_path_is_refused(self):
        with self.assertRaises(ValueError):
            PodResourcesDouble("kubelet.sock")

    def test_unknown_mode_is_refused(self):
        with self.assertRaises(ValueError):
            PodResourcesDouble("/nonexistent/kubelet.sock").set_mode("flaky")


if __name__ == "__main__":
    unittest.main()
