#!/usr/bin/env bash
# Brings the test node up with manifold installed, in one command (as root, from anywhere):
# builds the node's binaries unless the cache has them (build.sh), then node.py up with the static
# release binary (MANIFOLD_STATIC_BIN, default build/debug/static/manifold, which CI builds).
# Arguments go to node.py up (e.g. --no-manifold, --image localhost/manifold:dev).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
bins=$(bash "$here/build.sh")
exec python3 "$here/node.py" up --bins "$bins" \
  --manifold "${MANIFOLD_STATIC_BIN:-$repo/build/debug/static/manifold}" "$@"
