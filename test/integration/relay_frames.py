"""Hand-made frames of the node agent's relay protocol (relay/relay_protocol.h: a 4-byte big-endian
length, then that many bytes of JSON), for tests that speak to the relay socket as a hostile or a
fake peer would, and a process's peak RSS read from /proc.
"""
import json
import socket

# A generous bound on one exchange with the agent (a hang guard, never a verdict).
EXCHANGE_SECONDS = 60


def request_frame(server, requests, timeout_ms=10000):
    """The bytes of a request frame for the API server `server` ({"method", "target", "headers",
    "body"} each)."""
    payload = json.dumps({"v": 1, "server": server, "timeoutMs": timeout_ms, "requests": requests},
                         separators=(",", ":")).encode()
    return len(payload).to_bytes(4, "big") + payload


def read_exact(sock, size):
    data = b""
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), 1 << 20))
        if not chunk:
            raise EOFError("the peer closed after %d of %d bytes" % (len(data), size))
        data += chunk
    return data


def read_frame(sock):
    """The JSON payload of the next frame on `sock`, parsed."""
    size = int.from_bytes(read_exact(sock, 4), "big")
    return json.loads(read_exact(sock, size))


def exchange(path, frame):
    """Sends `frame` to the relay listening on `path`; returns its answer, parsed."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(EXCHANGE_SECONDS)
        s.connect(path)
        try:
            s.sendall(frame)
        except (BrokenPipeError, ConnectionResetError):
            pass  # it refused before reading everything: its answer is waiting
        return read_frame(s)


def wait_closed(sock):
    """Waits until the peer ends the connection (reading whatever it says before)."""
    sock.settimeout(EXCHANGE_SECONDS)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass


def peak_rss_mb(pid):
    """The peak resident set size (VmHWM) of process `pid`, in MB."""
    with open("/proc/%d/status" % pid, encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    raise AssertionError("no VmHWM for process %d" % pid)


# A fake relay listener, run as `python3 -c FAKE_LISTENER <socket> <record file> <mode>`: binds the
# socket, sets its mode (octal), and for every connection appends to the record file the number of
# bytes the peer sent, then closes it without an answer. Runs until killed.
FAKE_LISTENER = r"""
import os, socket, sys
path, record, mode = sys.argv[1], sys.argv[2], int(sys.argv[3], 8)
s = socket.socket(socket.AF_UNIX)
s.bind(path)
os.chmod(path, mode)
s.listen(16)
open(record, "a").close()
while True:
    c, _ = s.accept()
    c.settimeout(5)
    got = 0
    try:
        while True:
            data = c.recv(65536)
            if not data:
                break
            got += len(data)
    except OSError:
        pass
    with open(record, "a") as f:
        f.write("connection: %d bytes\n" % got)
    c.close()
"""
