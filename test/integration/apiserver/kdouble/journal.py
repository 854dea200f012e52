"""The double's request log and connection registry.

Every HTTPS request is recorded (before its response is written, so a test that has read the
response always finds the entry) with its connection id and its index on that connection, which is
how tests assert keep-alive reuse. A watch is recorded when its stream starts; `update` later adds
how the stream went (events and bookmarks sent, stream faults applied, how it ended). Every TCP
connection is recorded too, including TLS handshakes that failed, so tests can assert that a
client rejected the server (or was rejected).
"""

from __future__ import annotations

import copy
import threading
import time
from typing import Any, Optional


class Journal:
    """Thread-safe, append-only (until cleared) record of connections and requests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: list[dict] = []
        self._connections: dict[int, dict] = {}
        self._next_conn = 1
        self._next_seq = 1

    def open_connection(self, peer: Any) -> int:
        """Registers a new TCP connection and returns its id."""
        with self._lock:
            conn_id = self._next_conn
            self._next_conn += 1
            self._connections[conn_id] = {
                "id": conn_id, "peer": list(peer[:2]) if isinstance(peer, tuple) else str(peer),
                "opened": time.time(), "open": True, "tls": "pending", "error": None,
                "client_cert_cn": None, "tls_version": None, "tls_resumed": False, "requests": 0}
            return conn_id

    def connection_tls(self, conn_id: int, ok: bool, error: Optional[str] = None,
                       cert_cn: Optional[str] = None, version: Optional[str] = None,
                       resumed: bool = False) -> None:
        """Records the outcome of the connection's TLS handshake (and whether it resumed a session)."""
        with self._lock:
            conn = self._connections.get(conn_id)
            if conn is not None:
                conn.update(tls="ok" if ok else "failed", error=error, client_cert_cn=cert_cn,
                            tls_version=version, tls_resumed=resumed)

    def close_connection(self, conn_id: int) -> None:
        """Marks the connection closed."""
        with self._lock:
            conn = self._connections.get(conn_id)
            if conn is not None:
                conn["open"] = False

    def next_seq(self, conn_id: int) -> tuple[int, int]:
        """Returns (global request sequence number, index of the request on its connection)."""
        with self._lock:
            seq = self._next_seq
            self._next_seq += 1
            conn = self._connections.get(conn_id)
            index = 0
            if conn is not None:
                conn["requests"] += 1
                index = conn["requests"]
            return seq, index

    def record(self, entry: dict) -> None:
        """Appends a finished request entry."""
        with self._lock:
            self._requests.append(entry)

    def update(self, entry: dict, **fields: Any) -> None:
        """Changes fields of an entry already recorded (a watch stream's progress)."""
        with self._lock:
            entry.update(fields)

    def requests(self) -> list[dict]:
        """Returns the request entries in arrival order."""
        with self._lock:
            return sorted(copy.deepcopy(self._requests), key=lambda e: e["seq"])

    def connections(self) -> list[dict]:
        """Returns every known connection in opening order."""
        with self._lock:
            return [copy.deepcopy(c) for _, c in sorted(self._connections.items())]

    def clear(self) -> None:
        """Forgets the request entries and the connections that are already closed."""
        with self._lock:
            self._requests.clear()
            self._connections = {k: c for k, c in self._connections.items() if c["open"]}
