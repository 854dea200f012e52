#!/usr/bin/env python3
"""A kubelet whose PodResources socket misbehaves, in every way the double can: the ADD of a pod
with a device network fails with CNI error 108 (6 for an answer that is not protobuf) naming the
kubelet, within kubeletTimeout when the kubelet never answers, before any delegate runs, and
leaves nothing behind. Only a socket nobody listens on (a stopped kubelet's) falls back to the
checkpoint, with a warning. The checkpoint written next to each failing kubelet is valid and
would give the pod its device: the failures must not fall back to it.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from devices_case import (DECODING, DEVICE_UNAVAILABLE, PCI, RESOURCE,  # noqa: E402
                          DevicesTestCase)
from harness import main  # noqa: E402

# A kubelet that never answers is ended by the deadline of kubeletTimeout (1 s here): manifold's own
# ("no complete answer within the deadline"), or the gRPC server's, which enforces the grpc-timeout
# manifold sends ("Deadline Exceeded", status 4). No test bounds a wall time.
DEADLINE_WORDS = ("no complete answer within the deadline", "Deadline Exceeded")


class BadKubeletTest(DevicesTestCase):
    """The PodResources double in a failure mode; a valid checkpoint next to it."""

    def setUp(self):
        super().setUp()
        self.add_devices(PCI[:2])
        self.add_sriov_nad("sriov-a")
        self.add_device_pod("sriov-a")
        # What the kubelet would say, and what the checkpoint does say.
        self.pods = [self.kubelet_pod(self.pod_name, {RESOURCE: ["0000:af:06.2"]})]
        self.write_checkpoint([self.checkpoint_entry(self.pod_uid, RESOURCE, ["0000:af:06.0"])])
        self.write_devices_conf(kubeletTimeout=1)

    def assertKubeletError(self, cni_code, mode, **options):
        """In mode, the ADD fails with code naming the kubelet; nothing is left; returns the run."""
        self.start_kubelet(self.pods, mode, **options)
        run = self.add()
        # A transport or status failure names the socket too; an undecodable answer its size.
        words = [self.socket_path] if cni_code == DEVICE_UNAVAILABLE else ["PodResources"]
        self.assertDeviceError(run, cni_code, "kubelet", *words)
        self.assertNotIn("reading its device checkpoint instead", self.log_text())
        return run

    def assertEndedByDeadline(self, run):
        """The error names one of the two deadlines."""
        text = run.error.get("msg", "") if run.error else ""
        self.assertTrue(any(w in text for w in DEADLINE_WORDS), run.describe())

    def test_hang_is_bounded_by_kubelet_timeout(self):
        run = self.assertKubeletError(DEVICE_UNAVAILABLE, "hang")
        self.assertGreaterEqual(run.elapsed, 1.0, "did not wait for the kubelet")
        self.assertEndedByDeadline(run)
        calls = self.list_calls()
        self.assertEqual(len(calls), 1)
        self.assertIsNotNone(calls[0]["deadline"], "no grpc-timeout sent")
        self.assertLessEqual(calls[0]["deadline"], 1.0)

    def test_silent_socket_is_bounded_by_kubelet_timeout(self):
        # Accepts the connection, never reads or writes: connecting and the HTTP/2 handshake count.
        run = self.assertKubeletError(DEVICE_UNAVAILABLE, "silent")
        self.assertGreaterEqual(run.elapsed, 1.0, "did not wait for the kubelet")
        self.assertErrorMentions(run, DEADLINE_WORDS[0])  # no gRPC server: manifold's own deadline
        self.assertGreaterEqual(len(self.kubelet.connections()), 1)

    def test_reset(self):
        self.assertKubeletError(DEVICE_UNAVAILABLE, "reset")
        self.assertGreaterEqual(len(self.kubelet.connections()), 1)

    def test_http_garbage(self):
        self.assertKubeletError(DEVICE_UNAVAILABLE, "http-garbage")
        self.assertGreaterEqual(len(self.kubelet.connections()), 1)

    def test_error_status(self):
        run = self.assertKubeletError(DEVICE_UNAVAILABLE, "error", code="PERMISSION_DENIED",
                                      message="kubelet double: no pod resources for you")
        self.assertErrorMentions(run, "no pod resources for you")
        self.assertEqual(len(self.list_calls()), 1)

    def test_garbage_protobuf(self):
        self.assertKubeletError(DECODING, "garbage")
        self.assertEqual(len(self.list_calls()), 1)

    def test_oversized_answer(self):
        self.assertKubeletError(DEVICE_UNAVAILABLE, "oversized")
        self.assertEqual(len(self.list_calls()), 1)

    def test_socket_path_that_is_no_socket_falls_back_too(self):
        # A regular file where the socket should be: connect() is refused (ECONNREFUSED) as for a
        # stale socket, so this is no kubelet either.
        with open(self.socket_path, "w", encoding="utf-8") as f:
            f.write("not a socket\n")
        self.assertOk(self.add())
        self.assertDeviceIn("0000:af:06.0", "net1")
        self.assertWarned("kubelet", "checkpoint")
        self.assertOk(self.delete())
        self.assertNothingLeftBehind()

    def test_stale_socket_falls_back_to_the_checkpoint(self):
        self.start_kubelet(self.pods, "stale")
        self.assertTrue(os.path.exists(self.socket_path))
        self.assertOk(self.add())
        self.assertDeviceIn("0000:af:06.0", "net1")  # the checkpoint's device, not the kubelet's
        self.assertDevicesHome("0000:af:06.2")
        self.assertWarned("kubelet", "checkpoint")
        self.assertEqual(self.sriov_records("ADD")[0]["config"]["deviceID"], "0000:af:06.0")
        self.assertOk(self.delete())
        self.assertNothingLeftBehind()

    def test_recovered_kubelet_is_used_again(self):
        # One failing ADD changes nothing: the next one, with the kubelet back, gets its device.
        self.assertKubeletError(DEVICE_UNAVAILABLE, "error")
        self.kubelet.set_mode("ok")
        self.assertOk(self.add())
        self.assertDeviceIn("0000:af:06.2", "net1")
        self.assertEqual(len(self.list_calls()), 2)
        self.assertOk(self.delete())
        self.assertNothingLeftBehind()


if __name__ == "__main__":
    main()
