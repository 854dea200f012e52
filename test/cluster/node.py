#!/usr/bin/env python3
"""The test node's command line (as root; the wrappers up.sh, down.sh and kubectl.sh call it):

  node.py up --bins DIR [--manifold BIN | --no-manifold] [--image NAME]
      brings the node up from the binaries build.sh made, and installs manifold with BIN (the
      static release binary) as its image's /manifold, unless --no-manifold
  node.py down [--keep-logs DIR]
      tears it down (also after a failed up) and checks the machine against up's snapshot;
      exits 1 if anything is left
  node.py kubectl ARGS...   kubectl with the node's admin kubeconfig
  node.py exec ARGS...      a command inside the node's network and mount namespaces
  node.py status            whether the node is up, and where

MANIFOLD_NODE_DIR names the node's tree (default /var/tmp/manifold-node).
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from node import down, up  # noqa: E402
from node.control import Node  # noqa: E402
from node.namespaces import NodeError  # noqa: E402


def _up(args):
    node = up.up(None, os.path.abspath(args.bins),
                 None if args.no_manifold else os.path.abspath(args.manifold), args.image)
    print("kubectl: test/cluster/kubectl.sh (admin kubeconfig %s, in the node's network "
          "namespace)" % node.layout.admin_kubeconfig)
    return 0


def _down(args):
    checked, problems = down.down(None, args.keep_logs)
    for line in problems:
        print("down: %s" % line, file=sys.stderr)
    if problems:
        print("down: %d difference(s) from before up" % len(problems))
    elif checked:
        print("down: the machine is as it was before up")
    else:
        print("down: no node was recorded here; nothing of one is left")
    return 1 if problems else 0


def _passthrough(argv):
    try:
        return subprocess.run(argv).returncode
    except KeyboardInterrupt:
        return 130


def _inside(command, args):
    """kubectl and exec pass every argument on (argparse would take their options as its own)."""
    try:
        node = Node()
        return _passthrough(node.kubectl_argv(*args) if command == "kubectl" else node.argv(args))
    except NodeError as e:
        print("%s: %s" % (command, e), file=sys.stderr)
        return 1


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("kubectl", "exec"):
        return _inside(sys.argv[1], sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up")
    p_up.add_argument("--bins", required=True)
    p_up.add_argument("--manifold", default="build/debug/static/manifold")
    p_up.add_argument("--no-manifold", action="store_true")
    p_up.add_argument("--image")
    p_down = sub.add_parser("down")
    p_down.add_argument("--keep-logs")
    for name in ("kubectl", "exec"):
        sub.add_parser(name).add_argument("args", nargs="*")
    sub.add_parser("status")
    args = parser.parse_args()
    try:
        if args.command == "up":
            return _up(args)
        if args.command == "down":
            return _down(args)
        node = Node()
        if args.command == "status":
            print("up" if node.is_up() else "down", node.layout.root)
            return 0 if node.is_up() else 1
        return _inside(args.command, args.args)
    except NodeError as e:
        print("%s: %s" % (args.command, e), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
