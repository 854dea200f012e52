#!/usr/bin/env python3
"""Tiny TCP listener and client standing in for a service-mesh proxy, an app and remote servers in
manifold's scoping tests. Standard library only.

    scoping_listener.py serve LABEL HOST PORT
        Binds HOST:PORT (IPv6 when HOST contains ':', IPV6_V6ONLY set), prints "ready" on stdout,
        then answers every connection with one line
            "<LABEL> local=<addr:port> orig=<addr:port> peer=<addr:port>"
        where orig is the connection's original destination read with SO_ORIGINAL_DST (optname 80
        on SOL_IP, or IP6T_SO_ORIGINAL_DST 80 on SOL_IPV6), "none" when conntrack has no entry.
        Runs until killed.

    scoping_listener.py connect HOST PORT [--bind ADDR] [--timeout SECONDS]
        Connects (from ADDR when given), prints the line the server sent, or "timeout",
        "refused", "unreachable <errno name>" or "closed". Exit status 0 in every one of these
        cases: the outcome is the output.

Addresses are printed as a.b.c.d:port or [v6]:port.
"""
import errno
import socket
import struct
import sys

SO_ORIGINAL_DST = 80


def fmt(host, port):
    return "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)


def original_dst(conn, family):
    try:
        if family == socket.AF_INET:
            raw = conn.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
            port = struct.unpack_from("!H", raw, 2)[0]
            return fmt(socket.inet_ntop(socket.AF_INET, raw[4:8]), port)
        raw = conn.getsockopt(socket.IPPROTO_IPV6, SO_ORIGINAL_DST, 28)
        port = struct.unpack_from("!H", raw, 2)[0]
        return fmt(socket.inet_ntop(socket.AF_INET6, raw[8:24]), port)
    except OSError:
        return "none"


def serve(label, host, port):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    srv = socket.socket(family, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        srv.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    srv.bind((host, port))
    srv.listen(64)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        conn, peer = srv.accept()
        with conn:
            local = conn.getsockname()
            line = "%s local=%s orig=%s peer=%s\n" % (
                label, fmt(local[0], local[1]), original_dst(conn, family), fmt(peer[0], peer[1]))
            try:
                conn.sendall(line.encode())
            except OSError:
                pass


def connect(host, port, bind=None, timeout=5.0):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        if bind:
            sock.bind((bind, 0))
        sock.connect((host, port))
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
        return data.decode().strip() or "closed"
    except socket.timeout:
        return "timeout"
    except ConnectionRefusedError:
        return "refused"
    except OSError as exc:
        return "unreachable %s" % errno.errorcode.get(exc.errno, str(exc.errno))
    finally:
        sock.close()


def main(argv):
    if len(argv) >= 5 and argv[1] == "serve":
        serve(argv[2], argv[3], int(argv[4]))
        return 0
    if len(argv) >= 4 and argv[1] == "connect":
        bind, timeout = None, 5.0
        rest = argv[4:]
        while rest:
            if rest[0] == "--bind" and len(rest) > 1:
                bind = rest[1]
            elif rest[0] == "--timeout" and len(rest) > 1:
                timeout = float(rest[1])
            else:
                sys.stderr.write("unknown argument %s\n" % rest[0])
                return 2
            rest = rest[2:]
        print(connect(argv[2], int(argv[3]), bind, timeout))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
