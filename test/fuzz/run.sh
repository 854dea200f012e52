#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan; see test/fuzz/CMakeLists.txt) and runs each one
# for a bounded time, starting from a temporary copy of its seed corpus in test/fuzz/corpus/<target>
# (the committed corpus is never modified), up to MANIFOLD_JOBS targets at a time. Prints one
# summary line per target (executions, coverage) and exits non-zero if any target found a crash, a
# leak, an uncaught exception, a sanitizer report, a timeout (> 5 s for one input) or an
# out-of-memory (> 2 GiB). Crash inputs are copied to <build>/artifacts/<target>/ and the end of
# the fuzzer's report is printed.
#
# Usage: test/fuzz/run.sh [seconds-per-target] [target...]   (default: 20 s, every target)
# Environment: MANIFOLD_FUZZ_BUILD (build dir, default build/fuzz; a build already configured with
# MANIFOLD_FUZZ=ON, such as CI's ASan build, is used as it is, otherwise it is configured as an
# optimised fuzzing build), MANIFOLD_JOBS (build jobs and targets run at once, default 2),
# MANIFOLD_FUZZ_CXX / MANIFOLD_FUZZ_CC (compilers, default clang++ / clang),
# MANIFOLD_FUZZ_ARGS (extra libFuzzer flags, e.g. "-jobs=2 -workers=2").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

seconds=${1:-20}
shift || true
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 [seconds-per-target] [target...]" >&2
  exit 2
fi
build=${MANIFOLD_FUZZ_BUILD:-build/fuzz}
jobs=${MANIFOLD_JOBS:-2}
cxx=${MANIFOLD_FUZZ_CXX:-clang++}
cc=${MANIFOLD_FUZZ_CC:-clang}
read -r -a extra_args <<<"${MANIFOLD_FUZZ_ARGS:-}"
if ! command -v "$cxx" >/dev/null && command -v clang++-14 >/dev/null; then
  cxx=clang++-14
  cc=clang-14
fi
if ! command -v "$cxx" >/dev/null; then
  echo "fuzz: $cxx not found; install clang and libclang-rt-14-dev (test/install-deps.sh does)" >&2
  exit 2
fi

# Every target with its largest input (bytes): a few times the largest real document of its kind.
declare -A max_len=(
  [stdin_config]=16384
  [cni_args]=4096
  [networks_annotation]=16384
  [nad_config]=16384
  [delegate_result]=8192
  [kubeconfig]=8192
  [api_response]=16384
  [cache_file]=16384
  [iptables_save]=32768
  [watch_stream]=16384
  [device_checkpoint]=16384
  [device_info]=4096
  [pod_resources]=16384
  [relay_frame]=16384
  [multi_network_policy]=16384
)
# The libFuzzer dictionary of each target (test/fuzz/<name>.dict).
declare -A dict=(
  [stdin_config]=json
  [cni_args]=cni_args
  [networks_annotation]=annotation
  [nad_config]=json
  [delegate_result]=json
  [kubeconfig]=yaml
  [api_response]=json
  [cache_file]=json
  [iptables_save]=iptables
  [watch_stream]=json
  [device_checkpoint]=json
  [device_info]=json
  [pod_resources]=protobuf
  [relay_frame]=json
  [multi_network_policy]=json
)
order=(stdin_config cni_args networks_annotation nad_config delegate_result kubeconfig api_response
       cache_file iptables_save watch_stream device_checkpoint device_info pod_resources relay_frame
       multi_network_policy)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${order[@]}")
for t in "${targets[@]}"; do
  if [ -z "${max_len[$t]:-}" ]; then
    echo "unknown fuzz target '$t' (known: ${order[*]})" >&2
    exit 2
  fi
done

if grep -qs '^MANIFOLD_FUZZ:BOOL=ON$' "$build/CMakeCache.txt"; then
  echo "== build: fuzz targets in $build (configured with MANIFOLD_FUZZ=ON)"
else
  echo "== configure + build: fuzz targets ($build, $cxx, -O2, -fsanitize=fuzzer,address,undefined)"
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_C_COMPILER="$cc" -DMANIFOLD_SANITIZE=ON -DMANIFOLD_FUZZ=ON -DMANIFOLD_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" -j "$jobs" --target "${targets[@]/#/fuzz_}"

work=$(mktemp -d "${TMPDIR:-/tmp}/manifold-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Runs one target; writes its summary line to $work/<t>/line and its verdict to $work/<t>/verdict.
fuzz_one() {
  local t=$1 corpus="$work/$1/corpus" artifacts="$work/$1/artifacts" log="$work/$1/log" status=0
  mkdir -p "$corpus" "$artifacts"
  cp -R "test/fuzz/corpus/$t/." "$corpus/"
  # TMPDIR: files a target creates (the cache target's cniDir) go away with $work, even after a crash.
  TMPDIR="$work/$t" "$build/fuzz_$t" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 -max_len="${max_len[$t]}" \
    -dict="test/fuzz/${dict[$t]}.dict" -print_final_stats=1 -artifact_prefix="$artifacts/" "${extra_args[@]}" \
    "$corpus" >"$log" 2>&1 || status=$?

  local execs rate cov ft units seeds verdict=ok
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2 || true)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2 || true)
  units=$(grep -o 'corp: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2 || true)
  seeds=$(find "test/fuzz/corpus/$t" -type f | wc -l)
  if [ "$status" -ne 0 ] || [ -n "$(ls -A "$artifacts")" ]; then
    verdict=FAILED
    local keep="$build/artifacts/$t"
    mkdir -p "$keep"
    cp -R "$artifacts/." "$keep/" 2>/dev/null || true
    {
      echo "---- fuzz_$t failed (exit $status); crash inputs kept in $keep; end of its report:"
      grep -v '^#[0-9]' "$log" | tail -n 60
      echo "----"
    } >"$work/$t/report"
  fi
  printf 'fuzz %-20s %-6s execs=%s (%s/s) cov=%s ft=%s corpus=%s (seeds %s) time=%ss\n' "$t" "$verdict" \
    "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${units:-?}" "$seeds" "$seconds" >"$work/$t/line"
  echo "$verdict" >"$work/$t/verdict"
}

echo "== fuzzing ${#targets[@]} target(s), ${seconds} s each, $jobs at a time"
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait || true

failed=()
summary=()
for t in "${targets[@]}"; do
  [ -f "$work/$t/report" ] && cat "$work/$t/report"
  line=$(cat "$work/$t/line" 2>/dev/null || printf 'fuzz %-20s FAILED (no result)' "$t")
  summary+=("$line")
  [ "$(cat "$work/$t/verdict" 2>/dev/null)" = ok ] || failed+=("$t")
done

echo "== fuzz summary"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzzing FAILED: ${failed[*]}"
  exit 1
fi
echo "fuzzing passed: ${#targets[@]} target(s), ${seconds} s each"
