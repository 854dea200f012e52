#!/usr/bin/env bash
# Runs manifold's whole test suite on a fresh Debian 12 machine, as root, without a terminal:
# installs what is missing, builds ASan+UBSan with clang (build/asan, which also holds the libFuzzer
# targets) and Debug with clang (build/debug, with the static release binary that g++ builds in
# build/debug/static), lib/ and plugin/ as unity builds everywhere (MANIFOLD_UNITY), runs every
# unit and integration test against the sanitizer build (any sanitizer report fails the run),
# fuzzes the parsers, then the tests that need a binary without sanitizers (valgrind, callgrind,
# the static proof, the benchmark's quick mode) against the Debug build, and last the scenarios on a
# real single-node Kubernetes (test/cluster/: built from pinned upstream modules, cached per machine,
# brought up with manifold installed by its DaemonSet, torn down and checked). Everything builds
# with -Wall -Wextra (clang everything, g++ lib/ and plugin/). Exits non-zero if anything fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

jobs=${MANIFOLD_JOBS:-2}

# Each stage's header carries the minutes and seconds since the start, so a slow stage shows.
stage() { printf '== [%02d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

stage "installing what is missing"
bash test/install-deps.sh

# The test node's Go modules are fetched while the C++ trees build: downloading is I/O, and a warm
# machine has them already. The node's build itself waits for the cluster stage (test/cluster/).
mkdir -p build
(bash test/cluster/build.sh --download && bash test/cluster/build-module.sh multus --download &&
  bash test/cluster/build-module.sh deviceplugin --download) >build/cluster-download.log 2>&1 &
cluster_download=$!

# Line tables are all the debug information CI needs (file:line in sanitizer, valgrind and gdb
# stacks); full DWARF costs a fifth of the build time. clang builds the sanitizer tree: it compiles
# it in about half the time g++ does, and its coverage instrumentation lets the same objects serve
# the tests and the fuzzers (MANIFOLD_FUZZ).
stage "configure + build: ASan/UBSan (build/asan, clang): everything the suite runs, and the fuzz targets"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMANIFOLD_SANITIZE=ON -DMANIFOLD_FUZZ=ON \
  "-DMANIFOLD_GO_CACHE=$PWD/build/go-cache" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_C_FLAGS_DEBUG=-gline-tables-only -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only \
  -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld
cmake --build build/asan -j "$jobs" --target all fuzz_all

# The Debug tree's manifold serves valgrind (which cannot run an ASan binary, and reports GCC's -Os
# code as reading empty std::optionals) and the syscall-counting crash suite; its static release
# sub-build is g++'s, the compiler the release binary ships from. DWARF 4: valgrind 3.19 cannot read
# the DWARF 5 forms clang 14 writes. Both trees share one Go build cache (MANIFOLD_GO_CACHE), so this tree's
# libcni driver is a cache hit.
# The static release binary links a TLS-client build of Debian's OpenSSL source package
# (lib/openssl.cmake): 2 MB smaller than with the distribution's libcrypto.a.
stage "fetching Debian's OpenSSL source for the static release binary (build/openssl-source)"
bash lib/fetch-openssl-source.sh build/openssl-source

stage "configure + build: Debug (build/debug, clang) and the static release binary (build/debug/static, g++)"
cmake -S . -B build/debug "-DMANIFOLD_OPENSSL_SOURCE=$PWD/build/openssl-source" -G Ninja -DCMAKE_BUILD_TYPE=Debug "-DMANIFOLD_GO_CACHE=$PWD/build/go-cache" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  "-DCMAKE_C_FLAGS_DEBUG=-gline-tables-only -gdwarf-4" "-DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only -gdwarf-4" \
  -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DMANIFOLD_STATIC_C_COMPILER=gcc -DMANIFOLD_STATIC_CXX_COMPILER=g++
cmake --build build/debug -j "$jobs" --target manifold cni_driver manifold_static benchexec apireplay

# Tests that need a binary without sanitizers: valgrind and callgrind cannot run an ASan binary,
# the static proof (test_static_*: its root filesystem, its own OpenSSL's TLS) and the benchmark
# measure the static release binary, and the crash suite
# (test_crash_*) counts manifold's system calls, which ASan multiplies. Everything else runs
# against the ASan/UBSan build.
unsanitized='valgrind|test_static_|^bench: |test_crash_'

status=0
stage "all unit and integration tests with the ASan/UBSan build"
# Every sanitizer report of a manifold process goes to a file in $asan_logs (log_path), never only
# to a stderr that a test expecting a CNI error might not look at; any file there fails the run.
asan_logs=$(mktemp -d /tmp/manifold-asan-logs.XXXXXX)
# Probe: the sanitizer runtime of this manifold does write to log_path (verbosity=1 always logs).
asan_probe=$(mktemp -d /tmp/manifold-asan-probe.XXXXXX)
ASAN_OPTIONS="log_path=$asan_probe/asan:verbosity=1" build/asan/manifold version >/dev/null 2>&1 || true
if [[ -z $(ls -A "$asan_probe") ]]; then
  echo "build/asan/manifold does not write sanitizer reports to log_path (not an ASan build?)" >&2
  status=1
fi
rm -rf "$asan_probe"
(cd build/asan && ASAN_OPTIONS="log_path=$asan_logs/asan:detect_leaks=1:halt_on_error=1" \
   UBSAN_OPTIONS="log_path=$asan_logs/ubsan:print_stacktrace=1:halt_on_error=1" \
   ctest --output-on-failure --no-tests=error -E "$unsanitized" -LE cluster -j "$jobs") || status=1
if [[ -n $(ls -A "$asan_logs") ]]; then
  echo "sanitizer reports:" >&2
  for report in "$asan_logs"/*; do
    echo "--- $report" >&2
    cat "$report" >&2
  done
  status=1
fi
rm -rf "$asan_logs"

stage "fuzzing every parser for a bounded time under ASan+UBSan (libFuzzer, clang)"
MANIFOLD_FUZZ_BUILD=build/asan bash test/fuzz/run.sh "${MANIFOLD_FUZZ_SECONDS:-15}" || status=1

stage "valgrind, callgrind, static binary and benchmark tests, Debug build"
(cd build/debug && ctest --output-on-failure --no-tests=error -R "$unsanitized" -LE cluster -j "$jobs") || status=1

# The real single-node Kubernetes (test/cluster/): its binaries built from the pinned upstream
# modules (cached per machine, keyed by the pins: a warm run builds nothing), the node brought up
# with manifold installed by its own DaemonSet from the static release binary, the scenarios run
# through kubectl, and the node torn down, always, with down's check that the machine is as it was
# before up. A node left by an interrupted run is torn down first.
cluster_stage() {
  local bins rc=0
  # One node per machine: whoever brings one up by hand holds this lock too (README).
  exec 9>/run/lock/manifold-node.lock
  flock 9
  stage "cluster: building the test node's binaries (test/cluster/build.sh; cached per machine)"
  wait "$cluster_download" || { cat build/cluster-download.log >&2; return 1; }
  bins=$(bash test/cluster/build.sh) || return 1
  # The scenarios' own modules (Multus thin, the test device plugin): built here, not in a test.
  bash test/cluster/build-module.sh multus >/dev/null || return 1
  bash test/cluster/build-module.sh deviceplugin >/dev/null || return 1
  python3 test/cluster/node.py down >/dev/null 2>&1 || true
  stage "cluster: node up with manifold installed (test/cluster/node.py up)"
  trap 'python3 test/cluster/node.py down --keep-logs build/cluster-logs' EXIT
  if python3 test/cluster/node.py up --bins "$bins" --manifold build/debug/static/manifold; then
    stage "cluster: scenarios on the node (ctest -L cluster)"
    (cd build/debug && ctest --output-on-failure --no-tests=error -L cluster) || rc=1
  else
    rc=1
  fi
  stage "cluster: node down, machine checked against its state before up (build/cluster-logs)"
  trap - EXIT
  python3 test/cluster/node.py down --keep-logs build/cluster-logs || rc=1
  return "$rc"
}
cluster_stage || status=1

stage "done: exit status $status"
exit "$status"
