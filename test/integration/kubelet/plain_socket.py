"""PlainSocketServer: a unix stream socket that is not a gRPC server, for the double's fault modes.

It listens on the kubelet socket's path in place of the gRPC server and treats every connection
it accepts according to its current mode (read at accept time, so it can change while it runs):

  reset         waits until the client has sent something, then closes the connection without
                reading it: unread data makes the kernel report ECONNRESET to the client
  http-garbage  writes a payload that is not HTTP/2 (an HTTP/1.1 answer by default), shuts down
                its sending side (the client reads the bytes, then EOF), reads the client's bytes
                until the client closes, then closes
  silent        accepts and then never reads nor writes (a kubelet hung at the transport level);
                the connection stays open until close()

One thread runs a selector loop over the listener, the connections and a wake-up socket pair;
close() wakes it, joins it and closes every socket (the caller removes the socket file). Each
accepted connection is appended to a CallLog as {"mode", "received"}: the first bytes read from
the client (http-garbage), or peeked without consuming them (reset), or b"" (silent).
"""
import selectors
import socket
import threading

MODES = ("reset", "http-garbage", "silent")
HTTP_GARBAGE = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 11\r\n\r\nnot http/2\n"
KEEP = 4096  # bytes of what a client sent that the log keeps


class PlainSocketServer:
    """A threaded non-gRPC unix socket listener; see the module docstring."""

    def __init__(self, path, mode, log, payload=None):
        self.path = path
        self.setting = None  # (mode, payload), replaced as a whole: the loop thread reads it
        self.set_mode(mode, payload)
        self._log = log
        self._selector = selectors.DefaultSelector()
        self._listener = None
        self._wake_r, self._wake_w = socket.socketpair()
        self._conns = {}  # socket -> log entry
        self._thread = None

    def set_mode(self, mode, payload=None):
        """How the next connections are treated; payload: what http-garbage writes."""
        if mode not in MODES:
            raise ValueError("not a plain-socket mode: %r" % mode)
        self.setting = (mode, HTTP_GARBAGE if payload is None else payload)

    def start(self):
        """Binds and listens on path, then serves in a thread."""
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.path)
        self._listener.listen(64)
        self._listener.setblocking(False)
        self._selector.register(self._listener, selectors.EVENT_READ, self._accept)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._thread = threading.Thread(target=self._run, name="plain-socket", daemon=True)
        self._thread.start()

    def close(self):
        """Stops the loop and closes the listener and every connection."""
        if self._thread is not None:
            self._wake_w.send(b"x")
            self._thread.join()
            self._thread = None
        for conn in list(self._conns):
            self._drop(conn)
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    def _run(self):
        while True:
            for key, _ in self._selector.select():
                if key.data is None:
                    return
                key.data(key.fileobj)

    def _accept(self, listener):
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            return
        mode, payload = self.setting
        self._conns[conn] = self._log.append({"mode": mode, "received": b""})
        if mode == "reset":
            self._selector.register(conn, selectors.EVENT_READ, self._reset)
        elif mode == "http-garbage":
            self._answer_garbage(conn, payload)
        # silent: kept open, never watched

    def _answer_garbage(self, conn, payload):
        """Writes the payload, shuts down the sending side, then reads until the client closes."""
        try:
            conn.setblocking(True)
            conn.sendall(payload)  # small: the socket buffer takes it at once
            conn.shutdown(socket.SHUT_WR)
            conn.setblocking(False)
        except OSError:  # the client went away first
            self._drop(conn)
            return
        self._selector.register(conn, selectors.EVENT_READ, self._drain)

    def _reset(self, conn):
        """The client sent something (or closed): close without consuming it."""
        try:
            peeked = conn.recv(KEEP, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except OSError:
            peeked = b""
        self._log.update(self._conns[conn], received=peeked)
        self._drop(conn)

    def _drain(self, conn):
        """Reads what the client sends until it closes."""
        try:
            data = conn.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        entry = self._conns[conn]
        if not data:
            self._drop(conn)
            return
        if len(entry["received"]) < KEEP:
            self._log.update(entry, received=(entry["received"] + data)[:KEEP])

    def _drop(self, conn):
        if conn in self._conns:
            del self._conns[conn]
            try:
                self._selector.unregister(conn)
            except (KeyError, ValueError):
                pass
            conn.close()
