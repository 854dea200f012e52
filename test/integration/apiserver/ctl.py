#!/usr/bin/env python3
"""Drives a running API server double from a shell, through its admin API (see README.md).

    python3 ctl.py DIR add-pod NS NAME [--uid UID] [--annotation KEY=VALUE]...
    python3 ctl.py DIR add-nad NS NAME CONFIG_FILE      (CONFIG_FILE: the NAD's spec.config JSON)
    python3 ctl.py DIR add-object RESOURCE NAME FILE [--namespace NS]
                                        (RESOURCE: resourceclaims or resourceslices; FILE: JSON)
    python3 ctl.py DIR requests [--user USER]           (one "METHOD PATH STATUS" line each)
    python3 ctl.py DIR watches                          (one "ID USER PATH?QUERY" line per stream)
    python3 ctl.py DIR compact                          (drop the watch history; prints the RV)
    python3 ctl.py DIR fault ACTION [--path RE] [--query RE] [--watch | --no-watch]
                                    [--status N] [--count N | --forever] [--skip N]
    python3 ctl.py DIR clear-faults

DIR is the `--dir` of a running `server.py`; its ready.json says where the admin API listens
(127.0.0.1, so run this in the network namespace the double runs in). add-pod, add-nad and
add-object print one line naming the object they stored, not the whole object (add-object's FILE
is the object as kubectl would create it, spec and status included, stored as given); fault
prints the new fault's id.
"""

from __future__ import annotations

import argparse
import json
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
    obj = sub.add_parser("add-object", help="create or replace a ResourceClaim/ResourceSlice")
    obj.add_argument("resource", help="resourceclaims or resourceslices")
    obj.add_argument("name")
    obj.add_argument("object_file", help="the object as JSON (spec, status, labels…)")
    obj.add_argument("--namespace", help="the namespace of a namespaced kind")
    log = sub.add_parser("requests", help="print the request log")
    log.add_argument("--user", help="only requests authenticated as this user")
    sub.add_parser("watches", help="print the open watch streams")
    sub.add_parser("compact", help="drop the pod watch history (older watches get 410)")
    fault = sub.add_parser("fault", help="add a fault (e.g. watch_end, watch_cut, status)")
    fault.add_argument("action")
    fault.add_argument("--path", default=".*", help="regex on the request path")
    fault.add_argument("--query", help="regex on the percent-decoded query string")
    fault.add_argument("--watch", action=argparse.BooleanOptionalAction, default=None,
                       help="only watch requests (--watch) or only others (--no-watch)")
    fault.add_argument("--status", type=int, help="HTTP status (status) or ERROR code")
    fault.add_argument("--count", type=int, default=1)
    fault.add_argument("--forever", action="store_true", help="until removed (no count)")
    fault.add_argument("--skip", type=int, default=0)
    sub.add_parser("clear-faults", help="remove every fault")
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
    elif args.command == "add-object":
        with open(args.object_file, encoding="utf-8") as f:
            stored = api.add_object(args.resource, args.name, json.load(f),
                                    namespace=args.namespace)
        where = f"{args.namespace}/{args.name}" if args.namespace else args.name
        print(f"{args.resource} {where} (resourceVersion "
              f"{stored['metadata']['resourceVersion']})")
    elif args.command == "requests":
        for entry in api.requests():
            if args.user is None or entry["user"] == args.user:
                print(f"{entry['method']} {entry['path']} {entry['status']}")
    elif args.command == "watches":
        for watch in api.watches():
            query = f"?{watch['query']}" if watch["query"] else ""
            print(f"{watch['id']} {watch['user']} {watch['path']}{query}")
    elif args.command == "compact":
        print(api.compact())
    elif args.command == "fault":
        print(api.add_fault(**fault_options(args)))
    else:
        api.clear_faults()
    return 0


def fault_options(args: argparse.Namespace) -> dict:
    """The add_fault arguments of the `fault` command."""
    options = {"path": args.path, "action": args.action, "skip": args.skip,
               "count": None if args.forever else args.count}
    for key in ("query", "watch", "status"):
        if getattr(args, key) is not None:
            options[key] = getattr(args, key)
    return options


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
