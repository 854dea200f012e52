#!/usr/bin/env python3
"""Drives a running API server double from a shell, through its admin API (see README.md).

    python3 ctl.py DIR add-pod NS NAME [--uid UID] [--annotation KEY=VALUE]...
    python3 ctl.py DIR add-nad NS NAME CONFIG_FILE      (CONFIG_FILE: the NAD's spec.config JSON)
    python3 ctl.py DIR requests [--user USER]           (one "METHOD PATH STATUS" line each)

DIR is the `--dir` of a running `server.py`; its ready.json says where the admin API listens
(127.0.0.1, so run this in the network namespace the double runs in). add-pod and add-nad print
one line naming the object they stored, not the whole object.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from apiserver_double import ApiServerDouble  # noqa: E402 (after the path set-up)


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Parses the command line."""
    parser = argparse.ArgumentParser(description="drive a running API server double")
    parser.add_argument("dir", help="the --dir of the running server.py")
    sub = parser.add_subparsers(dest="command", required=True)
    pod = sub.add_parser("add-pod", help="create or replace a pod")
    pod.add_argument("namespace")
    pod.add_argument("name")
    pod.add_argument("--uid")
    pod.add_argument("--annotation", action="append", default=[], metavar="KEY=VALUE")
    nad = sub.add_parser("add-nad", help="create or replace a NetworkAttachmentDefinition")
    nad.add_argument("namespace")
    nad.add_argument("name")
    nad.add_argument("config_file")
    log = sub.add_parser("requests", help="print the request log")
    log.add_argument("--user", help="only requests authenticated as this user")
    return parser.parse_args(argv)


def annotations_of(pairs: list[str]) -> dict:
    """KEY=VALUE strings as a dict; raises ValueError for a pair without '='."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"annotation {pair!r} is not KEY=VALUE")
        out[key] = value
    return out


def main(argv: list[str]) -> int:
    """Runs one command against the double in args.dir."""
    args = parse_args(argv)
    api = ApiServerDouble.attach(args.dir)
    if args.command == "add-pod":
        pod = api.add_pod(args.namespace, args.name, uid=args.uid,
                          annotations=annotations_of(args.annotation) or None)
        print(f"pod {args.namespace}/{args.name} (uid {pod['metadata']['uid']})")
    elif args.command == "add-nad":
        with open(args.config_file, encoding="utf-8") as f:
            api.add_nad(args.namespace, args.name, f.read())
        print(f"network-attachment-definition {args.namespace}/{args.name}")
    else:
        for entry in api.requests():
            if args.user is None or entry["user"] == args.user:
                print(f"{entry['method']} {entry['path']} {entry['status']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
