"""ApiServer: the in-process entry point of the Kubernetes API server double.

It owns the PKI, the object store, access control, faults and the journal, listens for HTTPS on
127.0.0.1 (and on ::1 with the same port when the host has IPv6), and serves a plain-HTTP admin
API on 127.0.0.1 that `apiserver_double.ApiServerDouble` drives from other processes. Tests in the
same process can use the attributes `store`, `routes` (the served API, see routes.py), `access`,
`faults`, `journal` and `watch_settings` directly. `stop()` closes the listeners, ends the watch
streams and closes every open client connection.
"""

from __future__ import annotations

import secrets
import socket
import socketserver
import ssl
import sys
import threading
from typing import Iterable, Optional

from .access import ADMIN_USER, AccessControl
from .api_handler import ApiHandler
from .certs import DEFAULT_CLIENT_CN, Pki, generate_pki
from .faults import FaultSet
from .journal import Journal
from .routes import default_routes
from .store import Store
from .watch import WatchSettings


class _TcpServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    """Threaded TCP listener; skips HTTPServer's reverse DNS lookup of the bind address."""
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, address: tuple, handler: type, core: "ApiServer",
                 family: int = socket.AF_INET) -> None:
        self.address_family = family
        self.core = core
        super().__init__(address, handler)

    def handle_error(self, request, client_address) -> None:  # noqa: ANN001 (stdlib signature)
        self.core.log(f"unhandled error serving {client_address}: {sys.exc_info()[1]!r}")


class ApiServer:
    """The API server double, started with start() and stopped with stop()."""

    def __init__(self, directory: str, port: int = 0, admin_port: int = 0,
                 host: str = "127.0.0.1", ipv6: bool = True,
                 tokens: Optional[Iterable[str]] = None, client_cn: str = DEFAULT_CLIENT_CN,
                 key_type: str = "ec", idle_timeout: float = 120.0,
                 handshake_timeout: float = 10.0, verbose: bool = False,
                 watch_settings: Optional[WatchSettings] = None) -> None:
        self.directory = directory
        self.host = host
        self._requested_port = port
        self._requested_admin_port = admin_port
        self._want_ipv6 = ipv6
        self._client_cn = client_cn
        self._key_type = key_type
        self.idle_timeout = idle_timeout
        self.handshake_timeout = handshake_timeout
        self.verbose = verbose
        initial = list(tokens) if tokens else ["manifold-test-" + secrets.token_hex(16)]
        self.store = Store()
        self.watch_settings = watch_settings or WatchSettings()
        self.routes = default_routes()
        self.access = AccessControl(initial, user=client_cn,
                                    admin_token="admin-" + secrets.token_hex(16))
        self.faults = FaultSet(on_add=self.store.wake_watchers)
        self.journal = Journal()
        self.stopping = threading.Event()
        self.stop_requested = threading.Event()
        self.pki: Optional[Pki] = None
        self.ssl_context: Optional[ssl.SSLContext] = None
        self._servers: list[_TcpServer] = []
        self._threads: list[threading.Thread] = []
        self._serving: set = set()
        self._conn_lock = threading.Lock()
        self._open: set = set()
        self.port = 0
        self.ipv6_port: Optional[int] = None
        self.admin_port = 0
        self.initial_token = initial[0]

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> "ApiServer":
        """Generates the PKI, binds the listeners and starts serving; returns self."""
        from .admin import AdminHandler  # late import: admin depends on this module's class
        self.pki = generate_pki(self.directory, self._client_cn, self._key_type)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(self.pki.server_cert, self.pki.server_key)
        ctx.load_verify_locations(cafile=self.pki.ca_cert)
        ctx.verify_mode = ssl.CERT_OPTIONAL
        ctx.set_alpn_protocols(["http/1.1"])
        self.ssl_context = ctx
        try:
            main = _TcpServer((self.host, self._requested_port), ApiHandler, self,
                              socket.AF_INET6 if ":" in self.host else socket.AF_INET)
            self._servers.append(main)
            self.port = main.server_address[1]
            if self._want_ipv6 and self.host == "127.0.0.1":
                try:
                    six = _TcpServer(("::1", self.port), ApiHandler, self, socket.AF_INET6)
                    self._servers.append(six)
                    self.ipv6_port = self.port
                except OSError as err:
                    self.log(f"no IPv6 listener on [::1]:{self.port}: {err}")
            admin = _TcpServer(("127.0.0.1", self._requested_admin_port), AdminHandler, self)
            self._servers.append(admin)
            self.admin_port = admin.server_address[1]
        except BaseException:
            self.stop()
            raise
        for server in self._servers:
            thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                      name=f"serve-{server.server_address[1]}", daemon=True)
            thread.start()
            self._serving.add(server)
            self._threads.append(thread)
        return self

    def request_stop(self) -> None:
        """Asks the owner of the process (server.py) to stop; safe from any thread."""
        self.stop_requested.set()

    def stop(self) -> None:
        """Stops listening, ends the watch streams, closes every client connection and joins
        the serving threads."""
        self.stopping.set()
        self.stop_requested.set()
        self.store.wake_watchers()
        for server in self._servers:
            if server in self._serving:
                server.shutdown()
            server.server_close()
        self._serving.clear()
        with self._conn_lock:
            conns = list(self._open)
            self._open.clear()
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in self._threads:
            thread.join(timeout=5)
        self._servers.clear()
        self._threads.clear()

    # ---- helpers used by the handlers ------------------------------------------------------

    def track_connection(self, conn: socket.socket) -> None:
        """Remembers an open client connection so stop() can close it."""
        with self._conn_lock:
            self._open.add(conn)

    def untrack_connection(self, conn: socket.socket) -> None:
        """Forgets a closed client connection."""
        with self._conn_lock:
            self._open.discard(conn)

    def log(self, message: str) -> None:
        """Writes a diagnostic line to stderr when verbose."""
        if self.verbose:
            print(f"apiserver-double: {message}", file=sys.stderr, flush=True)

    # ---- addresses -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """HTTPS base URL on the main listener."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"https://{host}:{self.port}"

    @property
    def url6(self) -> Optional[str]:
        """HTTPS base URL on [::1], or None without IPv6."""
        return f"https://[::1]:{self.ipv6_port}" if self.ipv6_port else None

    @property
    def admin_url(self) -> str:
        """Plain-HTTP base URL of the admin API."""
        return f"http://127.0.0.1:{self.admin_port}"

    def info(self) -> dict:
        """Everything a client needs to reach and drive the double (printed as the ready line)."""
        assert self.pki is not None
        return {"url": self.url, "url6": self.url6,
                "url_localhost": f"https://localhost:{self.port}",
                "port": self.port, "admin_url": self.admin_url, "admin_port": self.admin_port,
                "token": self.initial_token, "user": self.access.default_user,
                "admin_token": self.access.admin_token, "admin_user": ADMIN_USER,
                "dir": self.directory, **self.pki.to_dict()}
