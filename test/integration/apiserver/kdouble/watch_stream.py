"""One watch response on the wire, as kube-apiserver streams it.

`200`, `Content-Type: application/json`, `Transfer-Encoding: chunked`, then one JSON event per
line (`{"type":…,"object":…}\\n`), each written and flushed as its own chunk: the watcher's queued
events (synthetic ADDED, history, live), BOOKMARKs every `bookmark_interval` when the client
allowed them, and a final BOOKMARK before the stream ends at `timeoutSeconds` with the terminating
chunk (the connection then stays open for the next request). A watch whose resourceVersion is too
old gets one ERROR event (410 Expired) and ends. The stream also applies the stream faults
(faults.py) at their points, ends promptly when the server stops, and notices a client that went
away. Objects are served as Tables when the request asked for one (`kubectl get -w`).
"""

from __future__ import annotations

import copy
import email.utils
import select
import ssl
import time
import uuid
from typing import Any, Callable, Optional

from . import k8s_status as st
from .faults import Fault
from .negotiation import JSON, PARTIAL_PREFIX, to_partial
from .tables import to_table
from .watch import BOOKMARK, ERROR, PodWatcher, WatchSettings, bookmark

POLL_SECONDS = 0.2  # how often a quiet stream checks for shutdown and a vanished client
PADDING_ANNOTATION = "kdouble.invalid/padding"


class StreamEnded(Exception):
    """The stream is over (how it ended is already in the request log)."""


class WatchStream:
    """Writes one watcher's events to the handler's connection until the stream ends."""

    def __init__(self, handler: Any, watcher: PodWatcher, form: str, entry: dict,
                 encode: Callable[[Any], bytes], settings: WatchSettings) -> None:
        self.handler = handler
        self.core = handler.core
        self.watcher = watcher
        self.form = form
        self.entry = entry
        self.encode = encode
        self.settings = settings
        self.caught_up = 0
        self.last_mark = time.monotonic()
        self.how: Optional[str] = None

    # ---- the stream ------------------------------------------------------------------------

    def run(self) -> None:
        """Serves the stream to its end; never raises for a vanished client."""
        try:
            self._write_head()
            if self.watcher.expired is not None:
                self._send(ERROR, self.watcher.expired)
                self._finish("expired")
                self._terminate()
            else:
                self._loop()
        except StreamEnded:
            pass
        except (OSError, ssl.SSLError):
            self.handler.close_connection = True
        finally:
            self._finish("client_gone")

    def _finish(self, how: str) -> None:
        """Unregisters the watcher and logs how the stream ended, once, before the stream's last
        bytes are written (a client that has seen the end finds both done)."""
        if self.how is None:
            self.how = how
            self.core.store.close_watch(self.watcher)
            self.core.journal.update(self.entry, stream={
                "events": self.watcher.events_sent, "bookmarks": self.watcher.bookmarks_sent,
                "ended": how})

    def _loop(self) -> None:
        store, watcher = self.core.store, self.watcher
        deadline = time.monotonic() + self.settings.timeout_for(watcher.opts.timeout_seconds)
        while True:
            generation = store.watch_generation()
            if self.core.stopping.is_set():
                self._finish("shutdown")
                self._terminate()
                raise StreamEnded("shutdown")
            fault = self.core.faults.stream_fault(watcher.path, watcher.query, at_event=False)
            if fault is not None:
                self._now_fault(fault)
            now = time.monotonic()
            if now >= deadline:
                self._end_cleanly("timeout")
            wait = min(POLL_SECONDS, deadline - now)
            if watcher.opts.allow_bookmarks:
                wait = min(wait, max(0.0, self.last_mark + self.settings.bookmark_interval - now))
            events, rv = store.next_watch_events(watcher, generation, wait)
            self._deliver(events)
            self.caught_up = rv
            if watcher.opts.allow_bookmarks and \
                    time.monotonic() >= self.last_mark + self.settings.bookmark_interval:
                self._bookmark()
            if self._client_gone():
                raise StreamEnded("client_gone")

    def _deliver(self, events: list) -> None:
        for _rv, kind, obj in events:
            fault = self.core.faults.stream_fault(self.watcher.path, self.watcher.query,
                                                  at_event=True)
            if fault is not None and fault.action in ("watch_end", "watch_error"):
                self._now_fault(fault)
            self.watcher.events_sent += 1
            if fault is None:
                self._send(kind, obj)
            else:
                self._event_fault(fault, kind, obj)

    def _end_cleanly(self, how: str) -> None:
        """Sends what is queued, the final bookmark (when allowed) and the last chunk."""
        events, rv = self.core.store.next_watch_events(self.watcher, -1, 0)
        self._deliver(events)
        self.caught_up = rv
        if self.watcher.opts.allow_bookmarks:
            self._bookmark()
        self._finish(how)
        self._terminate()
        raise StreamEnded(how)

    def _bookmark(self) -> None:
        self.watcher.bookmarks_sent += 1
        self._write_line(self.encode(bookmark(self.caught_up)))
        self.last_mark = time.monotonic()

    # ---- faults ----------------------------------------------------------------------------

    def _applied(self, fault: Fault) -> None:
        self.core.journal.update(self.entry, faults=self.entry["faults"] + [fault.id])

    def _now_fault(self, fault: Fault) -> None:
        self._applied(fault)
        if fault.action == "watch_end":
            self._end_cleanly(fault.action)
        self._send(ERROR, st.for_code(fault.status, "pods", verb="watch"))
        self._finish(fault.action)
        self._terminate()
        raise StreamEnded(fault.action)

    def _event_fault(self, fault: Fault, kind: str, obj: Any) -> None:
        self._applied(fault)
        line = self._line(kind, obj)
        if fault.action == "watch_cut":
            cut = fault.truncate_at if fault.truncate_at is not None else len(line) // 2
            self._finish(fault.action)
            self._write_line(line[:max(1, min(cut, len(line) - 1))])
            self.handler.hard_close()
            raise StreamEnded(fault.action)
        if fault.action == "watch_garbage":
            garbage = fault.body.encode("utf-8")
            self._write_line(garbage if garbage.endswith(b"\n") else garbage + b"\n")
            if fault.close:
                self._finish(fault.action)
                self._terminate()
                raise StreamEnded(fault.action)
            self._write_line(line)
            return
        self._write_line(self._padded(kind, obj, fault.size))

    def _padded(self, kind: str, obj: Any, size: int) -> bytes:
        """The event's line grown to `size` bytes by a padding annotation (or top-level field
        when the object has no metadata map)."""
        padded = copy.deepcopy(obj) if isinstance(obj, dict) else {"value": obj}
        target = padded
        meta = padded.get("metadata")
        if isinstance(meta, dict):
            annotations = meta.get("annotations")
            target = meta["annotations"] = dict(annotations) \
                if isinstance(annotations, dict) else {}
        target[PADDING_ANNOTATION] = ""
        base = len(self._line(kind, padded))
        target[PADDING_ANNOTATION] = "x" * max(0, size - base)
        return self._line(kind, padded)

    # ---- the wire --------------------------------------------------------------------------

    def _line(self, kind: str, obj: Any) -> bytes:
        if self.form.startswith(PARTIAL_PREFIX) and kind not in (BOOKMARK, ERROR):
            obj = to_partial(obj, self.form)
        elif self.form != JSON and kind not in (BOOKMARK, ERROR):
            obj = to_table(obj, self.form, self.watcher.kind[1])
        return self.encode({"type": kind, "object": obj})

    def _send(self, kind: str, obj: Any) -> None:
        self._write_line(self._line(kind, obj))

    def _write_head(self) -> None:
        head = ("HTTP/1.1 200 OK\r\n"
                f"Audit-Id: {uuid.uuid4()}\r\n"
                "Cache-Control: no-cache, private\r\n"
                "Content-Type: application/json\r\n"
                f"Date: {email.utils.formatdate(usegmt=True)}\r\n"
                "Transfer-Encoding: chunked\r\n\r\n")
        self.handler.wfile.write(head.encode("latin-1"))
        self.handler.wfile.flush()

    def _write_line(self, data: bytes) -> None:
        """One chunk holding `data`, written and flushed at once."""
        self.handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.handler.wfile.flush()

    def _terminate(self) -> None:
        self.handler.wfile.write(b"0\r\n\r\n")
        self.handler.wfile.flush()

    def _client_gone(self) -> bool:
        """True when the client closed its end (reading anything it sent; a client that sends
        data during a watch loses keep-alive)."""
        sock = self.handler.request
        try:
            readable, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return True
        if not readable:
            return False
        timeout = sock.gettimeout()
        try:
            sock.settimeout(0.0)
            data = sock.recv(65536)
        except (ssl.SSLWantReadError, BlockingIOError):
            return False
        except OSError:
            return True
        finally:
            try:
                sock.settimeout(timeout)
            except OSError:
                pass
        self.handler.close_connection = True
        return not data
