#!/usr/bin/env bash
# Runs manifold's whole test suite on a fresh Debian 12 machine, as root, without a terminal:
# installs what is missing, builds Debug (build/debug) and ASan+UBSan (build/asan), runs the unit
# tests of the sanitizer build, then every test of the Debug build (unit + integration). Exits
# non-zero if anything fails; the last lines printed are ctest's summary of the Debug run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

jobs=${MANIFOLD_JOBS:-2}

bash test/install-deps.sh

echo "== configure + build: Debug (build/debug)"
cmake -S . -B build/debug -G Ninja -DCMAKE_BUILD_TYPE=Debug
cmake --build build/debug -j "$jobs"

echo "== configure + build: ASan/UBSan (build/asan)"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMANIFOLD_SANITIZE=ON
cmake --build build/asan -j "$jobs" --target unit_tests

status=0
echo "== unit tests under ASan/UBSan"
(cd build/asan && ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
   UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
   ctest --output-on-failure -L unit -j "$jobs") || status=1

echo "== fuzzing every parser for a bounded time under ASan+UBSan (libFuzzer, clang)"
bash test/fuzz/run.sh "${MANIFOLD_FUZZ_SECONDS:-15}" || status=1

echo "== all tests (unit + integration), Debug build"
(cd build/debug && ctest --output-on-failure -j "$jobs") || status=1

exit "$status"
