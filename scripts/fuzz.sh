#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build the allocator fuzz harness (fuzz/) with clang and libFuzzer, and fuzz axmalloc for a
# bounded time.
#
#   bash scripts/fuzz.sh [seconds]        # default 120 s in all, split over the runs
#
# Runs (each over its own copy of fuzz/corpus, -max_total_time = seconds / number of runs):
#   default    the allocator as configured
#   purge0     AXMALLOC_PURGE_DELAY_MS=0: empty pages are purged at once, so purged memory
#              is reused (and must read back as the live blocks' data, or as calloc's zeroes)
#   checked    AXMALLOC_CHECK=1: checked mode
# The last line is `fuzz: N inputs, M allocator operations, K crashes`: N from libFuzzer's
# stat::number_of_executed_units, M counted by the harness (every malloc-family call of both
# threads). Exits non-zero when a run crashed or did not finish; crashing inputs are written
# to build-fuzz/crashes/<run>-crash-*. To look at one:
#   build-fuzz/fuzz/fuzz_replay FILE                       # replays it without libFuzzer
#   FUZZ_ALLOC_TRACE=1 build-fuzz/fuzz/fuzz_replay FILE    # ... printing every operation
#
# Needs clang and libFuzzer (Debian 12: clang, libclang-rt-14-dev, which has
# libclang_rt.fuzzer-<arch>.a) besides scripts/deps.sh's set; installs them with apt-get when
# missing (root or sudo), unless AX_SKIP_DEPS=1.
#
# Environment (all optional):
#   AX_FUZZ_RUNS="default purge0 checked"   which runs
#   AX_FUZZ_ARGS="..."                       extra libFuzzer flags for every run
#   JOBS=2                                   build parallelism
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=scripts/lib.sh
source "$ROOT/scripts/lib.sh"

SECONDS_TOTAL=${1:-120}
if ! [[ $SECONDS_TOTAL =~ ^[0-9]+$ ]] || ((SECONDS_TOTAL < 1)); then
  echo "usage: scripts/fuzz.sh [seconds]" >&2
  exit 2
fi
DIR=build-fuzz
read -r -a RUNS <<<"${AX_FUZZ_RUNS:-default purge0 checked}"
read -r -a EXTRA <<<"${AX_FUZZ_ARGS:-}"

# ---- dependencies ---------------------------------------------------------------------------
fuzzer_lib() {
  local dir
  dir=$(clang --print-runtime-dir 2>/dev/null) || return 1
  [[ -f $dir/libclang_rt.fuzzer-$(uname -m).a ]]
}
if [[ ${AX_SKIP_DEPS:-0} != 1 ]]; then
  bash "$ROOT/scripts/deps.sh"
  if ! command -v clang >/dev/null 2>&1 || ! fuzzer_lib; then
    SUDO=()
    ((EUID == 0)) || SUDO=(sudo)
    echo "fuzz.sh: installing clang libclang-rt-14-dev"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q update
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q install -y clang libclang-rt-14-dev
  fi
fi
if ! command -v clang >/dev/null 2>&1 || ! fuzzer_lib; then
  echo "fuzz.sh: clang or libFuzzer missing (Debian: clang libclang-rt-14-dev)" >&2
  exit 1
fi

# ---- build ------------------------------------------------------------------------------------
# Tests and benchmarks off: only the harness is needed, and this build's allocator is compiled
# a second time with coverage instrumentation for fuzz_alloc alone (fuzz/CMakeLists.txt).
CC=clang CXX=clang++ ax_configure "$DIR" "" -DAX_BUILD_FUZZ=ON -DAX_BUILD_TESTS=OFF \
  -DAX_BUILD_BENCH=OFF >/dev/null
cmake --build "$DIR" -j "${JOBS:-2}" --target fuzz_alloc fuzz_replay

# ---- fuzz -------------------------------------------------------------------------------------
per_run=$((SECONDS_TOTAL / ${#RUNS[@]}))
((per_run >= 1)) || per_run=1
mkdir -p "$DIR/crashes"
total_inputs=0 total_ops=0 crashes=0 failed=0

for run in "${RUNS[@]}"; do
  case $run in
    default) env_vars=() ;;
    purge0) env_vars=(AXMALLOC_PURGE_DELAY_MS=0) ;;
    checked) env_vars=(AXMALLOC_CHECK=1) ;;
    *) echo "fuzz.sh: unknown run '$run'" >&2; exit 2 ;;
  esac
  corpus=$DIR/corpus-$run
  mkdir -p "$corpus"
  cp -n fuzz/corpus/* "$corpus"/ || true # keeps what earlier runs found, adds new seeds
  log=$DIR/fuzz-$run.log
  echo "fuzz.sh: run $run (${env_vars[*]:-no options}) for ${per_run}s; log $log"
  rc=0
  # -max_len: a few hundred operations; -rss_limit_mb: the harness caps live blocks at
  # 256 MiB, the allocator's caches add up to about 1 GiB; -timeout: one input, generous
  # for a loaded 2-core machine.
  env "${env_vars[@]}" "$DIR/fuzz/fuzz_alloc" -max_total_time="$per_run" -max_len=2048 \
    -rss_limit_mb=4096 -timeout=120 -print_final_stats=1 \
    -artifact_prefix="$DIR/crashes/$run-" "${EXTRA[@]}" "$corpus" >"$log" 2>&1 || rc=$?
  inputs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  ops=$(sed -n 's/^fuzz_alloc: [0-9]* inputs, \([0-9]*\) allocator operations$/\1/p' "$log" |
    tail -1)
  if ((rc != 0)); then
    failed=1
    if grep -q "^SUMMARY: libFuzzer\|^==[0-9]*== ERROR: libFuzzer" "$log"; then
      crashes=$((crashes + 1))
    fi
    echo "fuzz.sh: run $run FAILED (exit $rc):"
    grep -E "^fuzz_alloc: |^axmalloc: |ERROR: libFuzzer|^SUMMARY|Test unit written" "$log" |
      head -20
  fi
  echo "fuzz.sh: run $run: ${inputs:-?} inputs, ${ops:-?} allocator operations"
  total_inputs=$((total_inputs + ${inputs:-0}))
  total_ops=$((total_ops + ${ops:-0}))
done

echo "fuzz: $total_inputs inputs, $total_ops allocator operations, $crashes crashes"
exit "$failed"
