"""The HTTPS request handler: TLS, HTTP/1.1 keep-alive, auth, faults and the served resources.

One handler instance serves one TCP connection (the TLS handshake runs in the connection's own
thread, so a stuck client cannot stall accept()). Each request is processed as kube-apiserver
would: faults first (they model the network and overload in front of the server), then
authentication (401), authorization (403), content negotiation (406; JSON or a Table), then the
route table (routes.py: 404/405 for anything not served, 415/400 for a body that cannot be decoded)
or, for non-resource paths, version, health and discovery. Responses are compact JSON with Go's
HTML escaping, a correct Content-Length and real `Status` bodies for errors; each is logged before
it is written. A watch is logged when it starts and then streamed by watch_stream.py. A request
that arrived before the answer to the previous one on its connection was written is logged as
`pipelined`: it cost the client no round trip of its own. A request on a connection whose TLS
handshake resumed an earlier session is logged as `tls_resumed`.
"""

from __future__ import annotations

import copy
import email.utils
import http
import http.server
import json
import socket
import ssl
import time
import uuid
from typing import Any, Optional
from urllib.parse import urlsplit

from . import discovery, k8s_status as st
from .access import RequestInfo, resolve_request
from .certs import certificate_cn
from .faults import Fault, apply_set
from .negotiation import JSON, PARTIAL_PREFIX, media_type, negotiate, to_partial
from .objects import concurrent_write
from .patch import PATCH_TYPES
from .routes import Call
from .tables import to_table
from .watch import PodWatcher
from .watch_stream import WatchStream

MAX_BODY_BYTES = 3 * 1024 * 1024
DRAIN_LIMIT_BYTES = 64 * 1024 * 1024
VERSION_INFO = {"major": "1", "minor": "30", "gitVersion": "v1.30.0-manifold-double",
                "gitCommit": "0000000000000000000000000000000000000000",
                "gitTreeState": "clean", "buildDate": "2024-01-01T00:00:00Z",
                "goVersion": "go1.22.0", "compiler": "gc", "platform": "linux/amd64"}


def encode_json(obj: Any) -> bytes:
    """Serializes like Go's encoding/json: compact, HTML-escaped, newline-terminated."""
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    for raw, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                     ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, esc)
    return text.encode("utf-8") + b"\n"


class Response:
    """An HTTP response under construction; `watch` makes it a watch stream (in `form`)."""

    def __init__(self, code: int, obj: Any = None, body: Optional[bytes] = None,
                 content_type: str = "application/json",
                 headers: Optional[dict] = None, watch: Optional[PodWatcher] = None,
                 form: str = JSON) -> None:
        self.code = code
        self.obj = obj
        self.body = body if body is not None else (encode_json(obj) if obj is not None else b"")
        self.content_type = content_type
        self.headers = dict(headers or {})
        self.watch = watch
        self.form = form


class BodyError(Exception):
    """A request body that cannot be read; carries the response to send before closing."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.code)
        self.response = response


class ApiHandler(http.server.BaseHTTPRequestHandler):
    """Serves one client connection of the API server double."""

    protocol_version = "HTTP/1.1"
    error_content_type = "text/plain; charset=utf-8"
    error_message_format = "%(code)d %(message)s"

    # ---- connection lifecycle --------------------------------------------------------------

    def setup(self) -> None:
        core = self.server.core
        self.core = core
        self.conn_id = core.journal.open_connection(self.client_address)
        self.tls_ok = False
        self.tls_resumed = False
        self.cert_user: Optional[str] = None
        self.next_pipelined = False
        raw = self.request
        raw.settimeout(core.handshake_timeout)
        # As Go's net package does for every TCP connection of kube-apiserver: answers to pipelined
        # requests go out as they are written, not held back by Nagle's algorithm.
        try:
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        if self._plain_http(raw):
            return
        try:
            self.request = core.ssl_context.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError) as err:
            core.journal.connection_tls(self.conn_id, False, error=str(err))
            return
        self.tls_ok = True
        self.tls_resumed = bool(self.request.session_reused)
        self.cert_user = certificate_cn(self.request.getpeercert())
        core.journal.connection_tls(self.conn_id, True, cert_cn=self.cert_user,
                                    version=self.request.version(), resumed=self.tls_resumed)
        core.track_connection(self.request)
        self.timeout = core.idle_timeout
        super().setup()

    def _plain_http(self, raw: socket.socket) -> bool:
        """Answers a plain-HTTP client the way Go's TLS server does; True if it was one."""
        try:
            first = raw.recv(8, socket.MSG_PEEK)
        except OSError:
            return False
        if not first or not first[:3].isalpha():
            return False
        try:
            # Consume the request head so closing does not reset the connection under the reply.
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                chunk = raw.recv(65536)
                if not chunk:
                    break
                head += chunk
            raw.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n"
                        b"Client sent an HTTP request to an HTTPS server.\n")
        except OSError:
            pass
        self.core.journal.connection_tls(self.conn_id, False, error="plain HTTP request")
        return True

    def handle(self) -> None:
        if not self.tls_ok:
            return
        try:
            super().handle()
        except (OSError, ssl.SSLError):
            self.close_connection = True

    def finish(self) -> None:
        if self.tls_ok:
            try:
                super().finish()
            except (OSError, ssl.SSLError):
                pass
            self.core.untrack_connection(self.request)
            try:
                self.request.close()
            except OSError:
                pass
        self.core.journal.close_connection(self.conn_id)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        self.core.log(f"conn {getattr(self, 'conn_id', '?')}: " + (format % args))

    # ---- request entry points --------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 (stdlib naming)
        self._serve()

    do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = do_OPTIONS = do_GET

    def _serve(self) -> None:
        started = time.time()
        seq, index = self.core.journal.next_seq(self.conn_id)
        url = urlsplit(self.path)
        path, query = url.path or "/", url.query
        info = resolve_request(self.command, path, query)
        auth_kind, user = self.core.access.authenticate(self.cert_user,
                                                        self.headers.get("Authorization"),
                                                        self.core.store.get_pod)
        entry: dict = {"seq": seq, "conn": self.conn_id, "conn_request": index,
                       "method": self.command, "path": path, "query": query, "verb": info.verb,
                       "headers": {k.lower(): v for k, v in self.headers.items()},
                       "auth": auth_kind, "user": user, "body": "", "status": None,
                       "outcome": "ok", "faults": [], "started": started, "duration_ms": None,
                       "pipelined": self.next_pipelined, "tls_resumed": self.tls_resumed}
        self.next_pipelined = False
        try:
            body = self._read_body()
        except BodyError as err:
            self.close_connection = True
            self._finish(entry, started, err.response)
            return
        entry["body"] = body.decode("utf-8", errors="replace")
        selection = self.core.faults.select(self.command, path, query,
                                            watch=info.verb == "watch")
        entry["faults"] = selection.applied
        if selection.delay_ms:
            self.core.stopping.wait(selection.delay_ms / 1000.0)
        fault = selection.terminal
        if fault is not None and fault.action == "drop":
            entry["outcome"] = "dropped"
            self._finish(entry, started, None)
            self.hard_close()
            return
        if fault is not None and fault.action in ("status", "raw"):
            entry["outcome"] = "fault"
            self._finish(entry, started, self._fault_response(fault, info, user))
            return
        if fault is not None and fault.action == "conflict":
            concurrent_write(self.core.store, info)
        response = self._process(info, query, body, user)
        self._finish(entry, started, self._mangle(response, fault, entry))

    def _finish(self, entry: dict, started: float, response: Optional[Response]) -> None:
        entry["duration_ms"] = round((time.time() - started) * 1000.0, 3)
        if response is not None:
            entry["status"] = response.code
        if response is not None and response.watch is not None:
            response.watch.seq = entry["seq"]
            entry["stream"] = {"events": 0, "bookmarks": 0, "ended": None}
            self.core.journal.record(entry)
            WatchStream(self, response.watch, response.form, entry, encode_json,
                        self.core.watch_settings).run()
            return
        self.core.journal.record(entry)
        if response is None:
            return
        partial = len(response.body) // 2 if entry["outcome"] == "reset" else None
        # Checked before the answer is written: a client that waits for each answer cannot have
        # sent its next request yet, a pipelining one sent it with this one.
        self.next_pipelined = self._input_waiting()
        try:
            self._write(response, partial)
        except (OSError, ssl.SSLError):
            self.close_connection = True
            return
        if partial is not None:
            self.hard_close()

    def _input_waiting(self) -> bool:
        """True when bytes of a further request have arrived (buffered, or readable at once)."""
        sock = self.request
        timeout = sock.gettimeout()
        try:
            sock.settimeout(0)
            # Returns what is buffered without reading; with nothing buffered, reads once without
            # blocking (keeping what arrives for the next request).
            return len(self.rfile.peek(1)) > 0
        except (OSError, ValueError):  # SSLWantReadError, BlockingIOError: nothing has arrived
            return False
        finally:
            try:
                sock.settimeout(timeout)
            except OSError:
                pass

    # ---- body, faults, writing -------------------------------------------------------------

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._read_chunked()
        length_text = self.headers.get("Content-Length")
        if length_text is None:
            return b""
        try:
            length = int(length_text)
            if length < 0:
                raise ValueError(length_text)
        except ValueError:
            raise BodyError(Response(400, st.bad_request(
                f"invalid Content-Length {length_text!r}"))) from None
        if length > MAX_BODY_BYTES:
            # Drain what the client is sending (within reason) so that closing afterwards does
            # not reset the connection and destroy the 413 before the client reads it.
            remaining = length if length <= DRAIN_LIMIT_BYTES else 0
            while remaining > 0:
                chunk = self.rfile.read(min(remaining, 65536))
                if not chunk:
                    break
                remaining -= len(chunk)
            raise BodyError(Response(413, st.entity_too_large(MAX_BODY_BYTES)))
        data = self.rfile.read(length)
        if len(data) != length:
            raise BodyError(Response(400, st.bad_request("unexpected EOF in request body")))
        return data

    def _read_chunked(self) -> bytes:
        data = bytearray()
        while True:
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise BodyError(Response(400, st.bad_request("malformed chunked encoding"))) \
                    from None
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(data)
            if len(data) + size > MAX_BODY_BYTES:
                raise BodyError(Response(413, st.entity_too_large(MAX_BODY_BYTES)))
            data += self.rfile.read(size)
            self.rfile.readline(16)

    def _fault_response(self, fault: Fault, info: RequestInfo, user: Optional[str]) -> Response:
        headers = {}
        if fault.retry_after is not None:
            headers["Retry-After"] = str(fault.retry_after)
        if fault.action == "raw":
            return Response(fault.status, body=fault.body.encode("utf-8"),
                            content_type=fault.content_type, headers=headers)
        if fault.body_format == "text":
            text = ("Too many requests, please try again later.\n" if fault.status == 429
                    else f"{http.HTTPStatus(fault.status).phrase}\n")
            headers["X-Content-Type-Options"] = "nosniff"
            return Response(fault.status, body=text.encode(), headers=headers,
                            content_type="text/plain; charset=utf-8")
        if fault.status == 403:
            obj = st.forbidden(user or "system:anonymous", info.verb, info.resource,
                               info.subresource, info.group, info.namespace, info.name)
        else:
            obj = st.for_code(fault.status, info.resource, info.name, info.group,
                              fault.retry_after, info.verb)
        return Response(fault.status, obj, headers=headers)

    def _mangle(self, response: Response, fault: Optional[Fault], entry: dict) -> Response:
        if fault is None or fault.action not in ("wrong_type", "truncate", "reset"):
            return response
        entry["outcome"] = {"wrong_type": "mangled", "truncate": "truncated",
                            "reset": "reset"}[fault.action]
        if fault.action == "wrong_type" and response.obj is not None:
            response.obj = apply_set(copy.deepcopy(response.obj), fault.set)
            response.body = encode_json(response.obj)
        elif fault.action == "truncate":
            cut = fault.truncate_at if fault.truncate_at is not None else len(response.body) // 2
            response.body = response.body[:max(0, cut)]
        return response

    def _write(self, response: Response, partial: Optional[int]) -> None:
        try:
            phrase = http.HTTPStatus(response.code).phrase
        except ValueError:
            phrase = ""
        lines = [f"HTTP/1.1 {response.code} {phrase}",
                 f"Audit-Id: {uuid.uuid4()}",
                 "Cache-Control: no-cache, private",
                 f"Content-Type: {response.content_type}"]
        lines += [f"{k}: {v}" for k, v in response.headers.items()]
        lines.append(f"Date: {email.utils.formatdate(usegmt=True)}")
        lines.append(f"Content-Length: {len(response.body)}")
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        body = b"" if self.command == "HEAD" else response.body
        if partial is not None:
            body = body[:partial]
        self.wfile.write(head + body)
        self.wfile.flush()

    def hard_close(self) -> None:
        self.close_connection = True
        try:
            self.request.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # ---- the API itself --------------------------------------------------------------------

    def _process(self, info: RequestInfo, query: str, body: bytes,
                 user: Optional[str]) -> Response:
        if user is None:
            return Response(401, st.unauthorized())
        denied = self.core.access.authorize(info, user)
        if denied is not None:
            return Response(403, denied)
        form = negotiate(self.headers.get("Accept"),
                         table_ok=info.is_resource and info.verb in ("get", "list", "watch"),
                         list_request=info.verb == "list")
        if form is None:
            return Response(406, st.not_acceptable())
        if not info.is_resource:
            return self._non_resource(info)
        route = self.core.routes.find(info)
        if route is None:
            return Response(404, st.path_not_found())
        handler = route.verbs.get(info.verb)
        if handler is None:
            return Response(405, st.method_not_allowed())
        call = Call(info, query, content_type=media_type(self.headers.get("Content-Type")),
                    user=user)
        if info.verb in ("update", "create", "patch"):
            refusal = self._decode_body(call, body)
            if refusal is not None:
                return refusal
        code, obj = handler(self.core.store, call)
        if isinstance(obj, PodWatcher):
            return Response(code, watch=obj, form=form)
        if form.startswith(PARTIAL_PREFIX) and code == 200:
            obj = to_partial(obj, form)
        elif form != JSON and code == 200:
            obj = to_table(obj, form, info.resource)
        return Response(code, obj)

    def _decode_body(self, call: Call, body: bytes) -> Optional[Response]:
        """Decodes a write's JSON body into call.body; returns the 415/400 refusal instead."""
        patch = call.info.verb == "patch"
        if patch and call.content_type not in PATCH_TYPES or \
                not patch and call.content_type not in ("", "application/json"):
            return Response(415, st.unsupported_media_type(
                self.headers.get("Content-Type") or "",
                PATCH_TYPES if patch else ("application/json",)))
        what = "error decoding patch" if patch else "couldn't get version/kind; json parse error"
        try:
            call.body = json.loads(body.decode("utf-8")) if body else None
        except (UnicodeDecodeError, ValueError) as err:
            return Response(400, st.bad_request(f"{what}: {err}"))
        if call.body is None:
            return Response(400, st.bad_request(f"{what}: unexpected end of JSON input"))
        return None

    def _non_resource(self, info: RequestInfo) -> Response:
        if info.verb not in ("get", "head"):
            return Response(405, st.method_not_allowed())
        if info.path in ("/version", "/version/"):
            return Response(200, VERSION_INFO)
        if info.path in ("/healthz", "/livez", "/readyz"):
            return Response(200, body=b"ok", content_type="text/plain; charset=utf-8")
        host, port = self.server.server_address[:2]
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        doc = discovery.document(info.path, self.core.routes, address)
        return Response(200, doc) if doc is not None else Response(404, st.path_not_found())
