#!/usr/bin/env python3
"""TCP and UDP listener and client for manifold's MultiNetworkPolicy tests. Standard library only.

    policy_probe.py serve LABEL HOST SPEC...
        SPEC is tcp:PORT or udp:PORT. Binds every SPEC on HOST (IPv6 when HOST contains ':',
        IPV6_V6ONLY set), prints "ready" on stdout, then answers each TCP connection, and each UDP
        datagram (to its sender, from the port it came to), with one line
            "<LABEL> <proto>:<port> peer=<addr>"
        Runs until killed.

    policy_probe.py connect PROTO HOST PORT [--bind ADDR] [--sport PORT] [--timeout SECONDS]
        Connects over tcp (or sends one datagram over udp) from ADDR:PORT when given and prints
        the line the server sent, or "timeout", "refused", "unreachable <errno name>" (an ICMP
        error or a local refusal: EHOSTUNREACH for ICMP administratively prohibited over IPv4,
        EACCES over IPv6, EPERM when the sender's own firewall dropped it) or "closed". Exit status
        0 in every one of these cases: the outcome is the output.

Addresses are printed as a.b.c.d:port or [v6]:port.
"""
import errno
import select
import socket
import sys


def fmt(host, port):
    return "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)


def family_of(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def bind_all(host, specs):
    sockets = {}
    for spec in specs:
        proto, port = spec.split(":")
        kind = socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM
        sock = socket.socket(family_of(host), kind)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family_of(host) == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((host, int(port)))
        if proto == "tcp":
            sock.listen(64)
        sockets[sock] = (proto, int(port))
    return sockets


def serve(label, host, specs):
    sockets = bind_all(host, specs)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        readable, _, _ = select.select(list(sockets), [], [])
        for sock in readable:
            proto, port = sockets[sock]
            try:
                if proto == "tcp":
                    conn, peer = sock.accept()
                    with conn:
                        conn.sendall(("%s tcp:%d peer=%s\n" % (label, port, fmt(peer[0], peer[1]))).encode())
                else:
                    _, peer = sock.recvfrom(2048)
                    sock.sendto(("%s udp:%d peer=%s\n" % (label, port, fmt(peer[0], peer[1]))).encode(), peer)
            except OSError:
                pass


def outcome_of(exc):
    if isinstance(exc, socket.timeout):
        return "timeout"
    if isinstance(exc, ConnectionRefusedError):
        return "refused"
    return "unreachable %s" % errno.errorcode.get(exc.errno, str(exc.errno))


def connect(proto, host, port, bind=None, sport=0, timeout=5.0):
    kind = socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM
    sock = socket.socket(family_of(host), kind)
    sock.settimeout(timeout)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if bind or sport:
            sock.bind((bind or ("::" if ":" in host else "0.0.0.0"), sport))
        sock.connect((host, port))
        if proto == "udp":
            sock.send(b"probe\n")
            return sock.recv(2048).decode().strip() or "closed"
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
        return data.decode().strip() or "closed"
    except OSError as exc:
        return outcome_of(exc)
    finally:
        sock.close()


def main(argv):
    if len(argv) >= 5 and argv[1] == "serve":
        serve(argv[2], argv[3], argv[4:])
        return 0
    if len(argv) >= 5 and argv[1] == "connect":
        options = {"--bind": None, "--sport": "0", "--timeout": "5"}
        rest = argv[5:]
        while rest:
            if rest[0] not in options or len(rest) < 2:
                sys.stderr.write("unknown argument %s\n" % rest[0])
                return 2
            options[rest[0]] = rest[1]
            rest = rest[2:]
        print(connect(argv[2], argv[3], int(argv[4]), options["--bind"], int(options["--sport"]),
                      float(options["--timeout"])))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
