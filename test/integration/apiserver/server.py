#!/usr/bin/env python3
"""Runs the Kubernetes API server double as a process (see README.md).

    python3 server.py --dir <tmpdir> --port 0 [--admin-port 0] [--token T]... [--rbac manifold]
                      [--bookmark-interval S] [--watch-timeout S] [--watch-history N]
                      [--disable-group G]...

It generates its PKI into --dir, starts serving, writes two kubeconfigs for shell users
(<dir>/kubeconfig: manifold's identity with the first token; <dir>/admin.kubeconfig: the admin
identity kubectl uses), then announces readiness twice: one line `READY {json}` on stdout (the
only stdout output) and the same JSON in <dir>/ready.json (written atomically). It runs until
SIGTERM/SIGINT or `POST /admin/shutdown`, then stops cleanly.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kdouble.access import manifold_rbac  # noqa: E402 (after the path set-up)
from kdouble.certs import DEFAULT_CLIENT_CN  # noqa: E402
from kdouble.core import ApiServer  # noqa: E402
from kdouble.kubeconfig import render_kubeconfig  # noqa: E402
from kdouble.watch import DEFAULT_BOOKMARK_INTERVAL, DEFAULT_HISTORY, WatchSettings  # noqa: E402


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Parses the command line."""
    parser = argparse.ArgumentParser(description="Kubernetes API server double for tests")
    parser.add_argument("--dir", required=True, help="directory for the PKI and ready.json")
    parser.add_argument("--port", type=int, default=0, help="HTTPS port (0 = ephemeral)")
    parser.add_argument("--admin-port", type=int, default=0, help="admin HTTP port (0 = ephemeral)")
    parser.add_argument("--host", default="127.0.0.1", help="HTTPS bind address")
    parser.add_argument("--no-ipv6", action="store_true", help="do not also listen on [::1]")
    parser.add_argument("--token", action="append", default=[], help="a valid bearer token")
    parser.add_argument("--client-cn", default=DEFAULT_CLIENT_CN, help="client certificate CN")
    parser.add_argument("--key-type", choices=("ec", "rsa"), default="ec")
    parser.add_argument("--rbac", choices=("none", "manifold"), default="none",
                        help="enforce manifold's ClusterRole as an RBAC allow-list")
    parser.add_argument("--disable-group", action="append", default=[], metavar="GROUP",
                        help="serve this API group as absent (404), e.g. resource.k8s.io")
    parser.add_argument("--idle-timeout", type=float, default=120.0,
                        help="seconds before an idle keep-alive connection is closed")
    parser.add_argument("--bookmark-interval", type=float, default=DEFAULT_BOOKMARK_INTERVAL,
                        help="seconds between BOOKMARK events on watches that allow them")
    parser.add_argument("--watch-timeout", type=float, default=0.0,
                        help="seconds a watch without timeoutSeconds lasts (0: random 30-60 min)")
    parser.add_argument("--watch-history", type=int, default=DEFAULT_HISTORY,
                        help="pod events kept for watches from an older resourceVersion")
    parser.add_argument("--verbose", action="store_true", help="diagnostics on stderr")
    args = parser.parse_args(argv)
    if args.bookmark_interval <= 0 or args.watch_timeout < 0 or args.watch_history < 0:
        parser.error("--bookmark-interval must be > 0, --watch-timeout and --watch-history >= 0")
    return args


def write_ready_file(directory: str, info: dict) -> None:
    """Writes <dir>/ready.json atomically so a watcher never sees a partial file."""
    tmp = os.path.join(directory, ".ready.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(info, f)
    os.replace(tmp, os.path.join(directory, "ready.json"))


def write_kubeconfigs(directory: str, info: dict) -> dict:
    """Writes the manifold and admin kubeconfigs (0600); returns their paths by info key."""
    paths = {}
    for key, name, user, token in (("kubeconfig", "kubeconfig", "manifold", info["token"]),
                                   ("admin_kubeconfig", "admin.kubeconfig", "admin",
                                    info["admin_token"])):
        path = os.path.join(directory, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(render_kubeconfig(info["url"], token=token, ca_file=info["ca_cert"],
                                      user=user))
        paths[key] = path
    return paths


def main(argv: list[str]) -> int:
    """Starts the double, announces it and serves until asked to stop."""
    args = parse_args(argv)
    core = ApiServer(args.dir, port=args.port, admin_port=args.admin_port, host=args.host,
                     ipv6=not args.no_ipv6, tokens=args.token or None, client_cn=args.client_cn,
                     key_type=args.key_type, idle_timeout=args.idle_timeout,
                     verbose=args.verbose,
                     watch_settings=WatchSettings(args.bookmark_interval, args.watch_timeout))
    core.store.set_history_limit(args.watch_history)
    if args.rbac == "manifold":
        core.access.set_rbac(manifold_rbac())
    core.routes.set_disabled_groups(args.disable_group)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: core.request_stop())
    core.start()
    try:
        info = core.info()
        info.update(write_kubeconfigs(args.dir, info))
        write_ready_file(args.dir, info)
        sys.stdout.write("READY " + json.dumps(info) + "\n")
        sys.stdout.flush()
        while not core.stop_requested.wait(timeout=1.0):
            pass
    finally:
        core.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
