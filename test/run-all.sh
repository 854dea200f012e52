#!/usr/bin/env bash
# Runs manifold's whole test suite on a fresh Debian 12 machine, as root, without a terminal:
# installs what is missing, builds Debug (build/debug) and ASan+UBSan (build/asan), runs the unit
# tests of the sanitizer build and a representative subset of the integration tests with the
# sanitizer-built manifold, fuzzes the parsers, then every test of the Debug build (unit +
# integration). Exits non-zero if anything fails; the last lines printed are ctest's summary of
# the Debug run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

jobs=${MANIFOLD_JOBS:-2}

bash test/install-deps.sh

echo "== configure + build: Debug (build/debug)"
cmake -S . -B build/debug -G Ninja -DCMAKE_BUILD_TYPE=Debug
cmake --build build/debug -j "$jobs"

echo "== configure + build: ASan/UBSan (build/asan)"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMANIFOLD_SANITIZE=ON
cmake --build build/asan -j "$jobs" --target unit_tests manifold cni_driver

status=0
echo "== unit tests under ASan/UBSan"
(cd build/asan && ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
   UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
   ctest --output-on-failure -L unit -j "$jobs") || status=1

echo "== integration subset with the ASan/UBSan manifold (core, k8s, scoping, security)"
# Every sanitizer report of a manifold process goes to a file in $asan_logs (log_path), never only
# to a stderr that a test expecting a CNI error might not look at; any file there fails the run.
asan_logs=$(mktemp -d /tmp/manifold-asan-logs.XXXXXX)
asan_subset='^integration: test_(core_lifecycle|core_rollback|core_bad_input|k8s_selection|k8s_bad_responses|scoping_lifecycle|security)$'
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
   ctest --output-on-failure --no-tests=error -R "$asan_subset" -j "$jobs") || status=1
if [[ -n $(ls -A "$asan_logs") ]]; then
  echo "sanitizer reports of the ASan/UBSan manifold:" >&2
  for report in "$asan_logs"/*; do
    echo "--- $report" >&2
    cat "$report" >&2
  done
  status=1
fi
rm -rf "$asan_logs"

echo "== fuzzing every parser for a bounded time under ASan+UBSan (libFuzzer, clang)"
bash test/fuzz/run.sh "${MANIFOLD_FUZZ_SECONDS:-15}" || status=1

echo "== all tests (unit + integration), Debug build"
(cd build/debug && ctest --output-on-failure -j "$jobs") || status=1

exit "$status"
