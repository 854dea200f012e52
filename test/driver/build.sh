#!/usr/bin/env bash
# Builds the libcni runtime driver (test/driver) offline, in GOPATH mode, against Debian's
# golang-github-appc-cni-dev sources in /usr/share/gocode. Usage: build.sh OUTPUT_BINARY
# GOCACHE may be set by the caller (CMake points it into the build directory).
set -euo pipefail
out=${1:?usage: build.sh OUTPUT_BINARY}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
libcni=/usr/share/gocode/src/github.com/containernetworking/cni/libcni
if [[ ! -d $libcni ]]; then
  echo "build.sh: $libcni is missing: apt-get install golang-github-appc-cni-dev" >&2
  exit 1
fi
if [[ -z ${GOCACHE:-} ]]; then
  export GOCACHE="$(dirname "$out")/go-cache"
fi
mkdir -p "$(dirname "$out")" "$GOCACHE"
cd "$src"
GOENV=off GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS= GOPROXY=off CGO_ENABLED=0 \
  go build -trimpath -o "$out.tmp" .
mv -f "$out.tmp" "$out"
