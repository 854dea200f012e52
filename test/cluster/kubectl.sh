#!/usr/bin/env bash
# kubectl (the node's own, v1.34) with the test node's admin kubeconfig, in its network namespace.
set -euo pipefail
exec python3 "$(dirname "${BASH_SOURCE[0]}")/node.py" kubectl "$@"
