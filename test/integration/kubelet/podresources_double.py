"""PodResourcesDouble: the kubelet's PodResources API (v1) as a real gRPC server for tests.

    import sys; sys.path.insert(0, "<repo>/test/integration/kubelet")
    from podresources_double import PodResourcesDouble

    with PodResourcesDouble(os.path.join(tmp, "kubelet.sock")) as kubelet:
        kubelet.set_pods([{"name": "web", "namespace": "default", "containers": [{"name": "c",
            "devices": [{"resource_name": "example.com/sriov", "device_ids": ["vf1", "vf0"]}]}]}])
        ... run manifold against kubelet.path ...
        assert [r["method"] for r in kubelet.requests()] == [LIST_METHOD]
        kubelet.set_mode("hang")  # or error, garbage, oversized, reset, http-garbage, silent...

It serves /v1.PodResourcesLister/List over h2c on a unix socket with python3-grpcio, in threads of
the test's own process. Answers are encoded from lib/kubelet/podresources.proto — the very file
manifold's protobuf-c client is generated from — compiled by grpc_tools.protoc into a descriptor
set (as runtimes/cri.py does), so no generated module is written or imported. Pods are given as
dicts with the proto's field names (json_format), including the fields manifold must skip:
cpu_ids, memory, dynamic_resources, topology.

Modes (set_mode, at any time, also before start()):
  ok            the configured pods
  hang          the call is accepted and never answered; the handler is released when the
                client gives up (its deadline, a closed connection) or at stop()
  error         a gRPC status: code (default UNAVAILABLE) and message
  garbage       a gRPC message whose bytes are not protobuf (payload=...; a truncated field by
                default); the response serializer is the identity, so raw bytes go out
  oversized     a valid answer of at least size bytes (default 17 MiB, over the 16 MiB a client
                accepts): the configured pods, then filler pods
  reset, http-garbage, silent   no gRPC: a plain unix socket on the path (plain_socket.py)
  stale         the socket file exists but nothing listens: connect() gets ECONNREFUSED
Switching between the gRPC modes keeps the server; switching to or from another kind stops the
current listener, removes the socket file and binds the new one on the same path.

Every gRPC call is logged (requests()): method, the metadata grpc exposes to a server (user-agent;
not content-type or te, which grpc core checks itself before a handler runs), deadline (seconds
left when it arrived, None without grpc-timeout), request (raw bytes; b"" for the empty
ListPodResourcesRequest) and the mode that answered. Calls to other methods are logged with
mode "unimplemented" and get UNIMPLEMENTED. Plain-socket connections are logged by connections().
stop() releases hung handlers, stops the listener and removes the socket file. The double writes
only the socket and its descriptor set (podresources.desc) in work_dir (default: the socket's
directory). For a manual check of a client, `python3 podresources_double.py SOCKET [PODS_JSON]
[MODE]` serves until SIGINT/SIGTERM.
"""
import os
import socket
import sys
import threading
from concurrent import futures

import grpc
from google.protobuf import json_format, message_factory

_HERE = os.path.dirname(os.path.abspath(__file__))
for _path in (_HERE, os.path.dirname(_HERE)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from call_log import CallLog  # noqa: E402 (after the path set-up)
from harness.proto import compile_descriptor_set, message_pool  # noqa: E402
from plain_socket import MODES as PLAIN_MODES, PlainSocketServer  # noqa: E402

PROTO = os.path.normpath(os.path.join(_HERE, "..", "..", "..", "lib", "kubelet", "podresources.proto"))
LIST_METHOD = "/v1.PodResourcesLister/List"
MIB = 1024 * 1024
GRPC_MODES = ("ok", "hang", "error", "garbage", "oversized")
MODES = GRPC_MODES + PLAIN_MODES + ("stale",)
GARBAGE = b"\x0a\x7fnot protobuf: field 1 claims 127 bytes"
HANG_GUARD = 600.0  # seconds: a hung handler never outlives a test run


def compile_proto(out_dir):
    """Compiles lib/kubelet/podresources.proto into a descriptor set in out_dir; returns its path."""
    return compile_descriptor_set(PROTO, out_dir, "podresources.desc")


class Codec:
    """The v1 message classes built from a descriptor set; encodes and decodes List answers."""

    def __init__(self, descriptor_set):
        pool = message_pool(descriptor_set)
        self._pool = pool
        self._factory = message_factory.MessageFactory(pool)
        self.request = self.message_class("ListPodResourcesRequest")
        self.response = self.message_class("ListPodResourcesResponse")

    def message_class(self, name):
        """The class of the v1 message name, e.g. "PodResources"."""
        return self._factory.GetPrototype(self._pool.FindMessageTypeByName("v1." + name))

    def response_message(self, pods):
        """A ListPodResourcesResponse of pods (dicts); raises ValueError on an unknown field."""
        try:
            return json_format.ParseDict({"pod_resources": pods}, self.response())
        except json_format.ParseError as e:
            raise ValueError("bad pods for ListPodResourcesResponse: %s" % e) from e

    def encode(self, pods):
        """The serialized ListPodResourcesResponse of pods."""
        return self.response_message(pods).SerializeToString()

    def decode(self, data):
        """Parses a ListPodResourcesResponse; raises google.protobuf.message.DecodeError."""
        return self.response.FromString(data)

    def oversized(self, pods, size):
        """A valid answer of at least size bytes: pods, then filler pods of about 1 KiB each."""
        filler_id = "f" * 1000
        message = self.response_message(pods)
        count = size // 1024 + 1
        for i in range(count):
            pod = message.pod_resources.add(name="filler-%06d" % i, namespace="filler")
            container = pod.containers.add(name="filler")
            container.devices.add(resource_name="example.com/filler", device_ids=[filler_id])
        data = message.SerializeToString()
        assert len(data) >= size
        return data


def _status_code(code):
    return code if isinstance(code, grpc.StatusCode) else grpc.StatusCode[code]


class PodResourcesDouble:
    """A PodResources server on a unix socket; see the module docstring."""

    def __init__(self, socket_path, work_dir=None, max_workers=8):
        self.path = socket_path[len("unix:"):] if socket_path.startswith("unix:") else socket_path
        if not os.path.isabs(self.path):
            raise ValueError("the socket path must be absolute: %s" % socket_path)
        self.work_dir = work_dir or os.path.dirname(self.path)
        self._max_workers = max_workers
        self._codec = None
        self._state = threading.Lock()  # mode, answer, hung handlers
        self._switching = threading.Lock()  # listener transitions
        self._mode, self._options = "ok", {}
        self._pods, self._answer = [], b""
        self._hung = set()
        self._started = False
        self._kind = None  # "grpc", "plain", "stale" or None (stopped)
        self._server = self._executor = self._plain = None
        self._requests = CallLog()
        self._connections = CallLog()

    @property
    def codec(self):
        """The Codec of lib/kubelet/podresources.proto (compiled into work_dir on first use)."""
        if self._codec is None:
            os.makedirs(self.work_dir, exist_ok=True)
            self._codec = Codec(compile_proto(self.work_dir))
        return self._codec

    @property
    def address(self):
        """The gRPC target of the socket: unix:<absolute path>."""
        return "unix:" + self.path

    # ---- lifecycle ---------------------------------------------------------------------------

    def start(self):
        """Compiles the proto and listens in the current mode; returns self."""
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with self._state:
            pods = self._pods
        self.set_pods(pods)
        with self._switching:
            self._started = True
        self._apply()
        return self

    def stop(self):
        """Releases hung handlers, stops the listener and removes the socket file."""
        with self._switching:
            self._started = False
            self._close_listener()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    # ---- configuration -----------------------------------------------------------------------

    def set_pods(self, pods):
        """The allocations List answers with: a list of PodResources dicts (see the module doc)."""
        pods = list(pods)
        answer = self.codec.encode(pods)
        with self._state:
            self._pods, self._answer = pods, answer

    def set_mode(self, mode, *, code="UNAVAILABLE", message="kubelet double: unavailable",
                 payload=None, size=17 * MIB):
        """Switches to mode (see the module docstring). code/message serve "error", payload
        "garbage" and "http-garbage", size "oversized"."""
        if mode not in MODES:
            raise ValueError("unknown mode %r (one of %s)" % (mode, ", ".join(MODES)))
        options = {"code": _status_code(code), "message": message, "payload": payload,
                   "size": size}
        with self._state:
            self._mode, self._options = mode, options
        self._apply()

    @property
    def mode(self):
        """The current mode."""
        with self._state:
            return self._mode

    # ---- what the double received ------------------------------------------------------------

    def requests(self):
        """Every gRPC call received, oldest first (dicts; see the module docstring)."""
        return self._requests.snapshot()

    def wait_for_requests(self, count, timeout=30.0, where=None):
        """Waits until count gRPC calls (satisfying where(entry), if given) arrived; returns
        requests(). The timeout only guards a broken test."""
        return self._requests.wait_for(count, timeout, where)

    def connections(self):
        """Every connection the plain-socket modes accepted: {"mode", "received"} dicts."""
        return self._connections.snapshot()

    def wait_for_connections(self, count, timeout=30.0, where=None):
        """Waits until the plain-socket modes accepted count connections (satisfying
        where(entry), if given, e.g. lambda c: c["received"]); returns connections()."""
        return self._connections.wait_for(count, timeout, where)

    def hung(self):
        """How many calls are hanging right now."""
        with self._state:
            return len(self._hung)

    # ---- listeners ---------------------------------------------------------------------------

    def _apply(self):
        with self._switching:
            if not self._started:
                return
            with self._state:
                mode, options = self._mode, self._options
            kind = "grpc" if mode in GRPC_MODES else "plain" if mode in PLAIN_MODES else "stale"
            if kind == self._kind:
                if kind == "plain":
                    self._plain.set_mode(mode, options.get("payload"))
                return
            self._close_listener()
            {"grpc": self._open_grpc, "plain": self._open_plain, "stale": self._open_stale}[kind](
                mode, options)
            self._kind = kind

    def _close_listener(self):
        if self._kind == "grpc":
            self._release_hung()
            self._server.stop(None).wait()
            self._executor.shutdown(wait=True)
            self._server = self._executor = None
        elif self._kind == "plain":
            self._plain.close()
            self._plain = None
        self._kind = None
        if os.path.lexists(self.path):
            os.unlink(self.path)

    def _open_grpc(self, mode, options):
        self._executor = futures.ThreadPoolExecutor(self._max_workers,
                                                    thread_name_prefix="podresources")
        self._server = grpc.server(self._executor, options=[
            ("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)])
        self._server.add_generic_rpc_handlers([_Handler(self)])
        self._server.add_insecure_port(self.address)
        self._server.start()

    def _open_plain(self, mode, options):
        self._plain = PlainSocketServer(self.path, mode, self._connections, options.get("payload"))
        self._plain.start()

    def _open_stale(self, mode, options):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(self.path)  # never listen(): the file stays, connect() is refused
        sock.close()

    # ---- answering ---------------------------------------------------------------------------

    def _log_call(self, method, request, context, mode):
        remaining = context.time_remaining()
        self._requests.append({
            "method": method,
            "metadata": dict(context.invocation_metadata()),
            "deadline": remaining if remaining is not None and remaining < 1e9 else None,
            "request": request,
            "mode": mode,
        })

    def _list(self, request, context):
        released = threading.Event()
        with self._state:
            mode, options, answer, pods = self._mode, self._options, self._answer, self._pods
            if mode == "hang":  # registered before it is logged: stop() always finds it
                self._hung.add(released)
        self._log_call(LIST_METHOD, request, context, mode)
        if mode == "hang":
            return self._hang(context, released)
        if mode == "error":
            context.abort(options["code"], options["message"])
        if mode == "garbage":
            return GARBAGE if options.get("payload") is None else options["payload"]
        if mode == "oversized":
            return self.codec.oversized(pods, options["size"])
        return answer

    def _hang(self, context, released):
        try:
            if context.add_callback(released.set):  # the client gave up: free the thread
                released.wait(HANG_GUARD)
        finally:
            with self._state:
                self._hung.discard(released)
        context.abort(grpc.StatusCode.UNAVAILABLE, "kubelet double: released a hung call")

    def _release_hung(self):
        with self._state:
            for released in self._hung:
                released.set()


class _Handler(grpc.GenericRpcHandler):
    """Routes List to the double (raw bytes both ways); logs and refuses every other method."""

    def __init__(self, double):
        self._double = double

    def service(self, handler_call_details):
        method = handler_call_details.method
        if method == LIST_METHOD:
            return grpc.unary_unary_rpc_method_handler(self._double._list)
        self._double._requests.append({
            "method": method, "metadata": dict(handler_call_details.invocation_metadata),
            "deadline": None, "request": None, "mode": "unimplemented"})
        return None


def main(argv):
    """Serves until SIGINT/SIGTERM, for manual checks of a client:
    python3 podresources_double.py SOCKET [PODS_JSON_FILE] [MODE]"""
    import json
    import signal
    if not 2 <= len(argv) <= 4:
        sys.stderr.write(main.__doc__ + "\n")
        return 2
    double = PodResourcesDouble(os.path.abspath(argv[1]))
    if len(argv) > 2:
        with open(argv[2], encoding="utf-8") as f:
            double.set_pods(json.load(f))
    if len(argv) > 3:
        double.set_mode(argv[3])
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    with double:
        print("serving %s in mode %s" % (double.address, double.mode), flush=True)
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
