#!/usr/bin/env bash
# Proves the static release build: builds the Release binary with MANIFOLD_STATIC=ON into
# build/release-static (incremental; unit tests and the Go driver are not built there), then runs
# test/integration/test_static_rootfs.py against it as root: ldd/ELF check, and VERSION, ADD, CHECK
# and DEL through Debian's bridge in a chroot holding no shared library. Its OpenSSL is the
# TLS-client build of Debian's source package (lib/fetch-openssl-source.sh into
# build/openssl-source, then lib/openssl.cmake), as the shipped binary's is.
#
#   test/static-check.sh                 build, then run the rootfs test
#   test/static-check.sh BINARY          run the rootfs test on an existing static binary
#   test/static-check.sh --build-only    build only; prints the binary's path as the last line
#
# MANIFOLD_JOBS sets the build parallelism (default 2); MANIFOLD_STATIC_DIR the build directory;
# MANIFOLD_OPENSSL_SOURCE an OpenSSL source tree to build instead of fetching Debian's.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_only=0
binary=
for arg in "$@"; do
  case $arg in
    --build-only) build_only=1 ;;
    -h|--help) sed -n '2,14p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) binary=$arg ;;
  esac
done

if [[ -z $binary ]]; then
  dir=${MANIFOLD_STATIC_DIR:-$repo/build/release-static}
  openssl_source=${MANIFOLD_OPENSSL_SOURCE:-$repo/build/openssl-source}
  [[ -n ${MANIFOLD_OPENSSL_SOURCE:-} ]] || bash "$repo/lib/fetch-openssl-source.sh" "$openssl_source" >&2
  cmake -S "$repo" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMANIFOLD_STATIC=ON \
        -DMANIFOLD_BUILD_TESTS=OFF "-DMANIFOLD_OPENSSL_SOURCE=$openssl_source" >&2
  cmake --build "$dir" -j "${MANIFOLD_JOBS:-2}" --target manifold >&2
  binary=$dir/manifold
fi
binary=$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")
if [[ $build_only == 1 ]]; then
  echo "$binary"
  exit 0
fi
size=$(stat -c %s "$binary")
echo "static binary: $binary ($size bytes)" >&2
export MANIFOLD_STATIC_OPENSSL_SOURCE=${openssl_source:-${MANIFOLD_STATIC_OPENSSL_SOURCE:-}}
MANIFOLD_STATIC_BIN=$binary exec /usr/bin/python3 -B "$repo/test/integration/test_static_rootfs.py"
