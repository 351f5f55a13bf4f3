#!/usr/bin/env bash
# Install deps, build, and run every test: natively, then for AArch64 under qemu-user.
#
#   bash scripts/test.sh
#
# Stages (each runs even when an earlier one failed; the script exits non-zero if any did):
#   native          build/          Release, ctest -j2
#   aarch64/max     build-aarch64/  toolchain/aarch64-linux-gnu.cmake, ctest under qemu-aarch64
#                                   with QEMU_CPU=max (LSE atomics, SVE)
#   aarch64/<cpu>   the same build, ctest again with QEMU_CPU=cortex-a57 (ARMv8.0, no LSE)
#
# The last line is the sum over all stages: `N passed, N failed` (`, N skipped` is appended when
# ctest skipped tests). A stage that fails before ctest reports (configure, build, or a ctest that
# ends without its summary) counts as 1 failed.
#
# Environment (all optional):
#   AX_SKIP_DEPS=1           do not run scripts/deps.sh (no root, or deps known present)
#   AX_SKIP_CROSS=1          native stage only
#   AX_QEMU_CPUS="max cortex-a57"   CPU models for the aarch64 ctest passes
#   AX_TEST_TIMEOUT=300      per-test timeout (s) natively, for tests without a TIMEOUT property
#   AX_QEMU_TEST_TIMEOUT=900 the same under qemu
#   JOBS=2                   build and ctest parallelism
#   AX_CMAKE_ARGS="..."      extra arguments for both cmake configure steps
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=scripts/lib.sh
source "$ROOT/scripts/lib.sh"

JOBS=${JOBS:-2}
NATIVE_DIR=build
CROSS_DIR=build-aarch64
TOOLCHAIN=$ROOT/toolchain/aarch64-linux-gnu.cmake
read -r -a QEMU_CPUS <<<"${AX_QEMU_CPUS:-max cortex-a57}"
read -r -a EXTRA_CMAKE_ARGS <<<"${AX_CMAKE_ARGS:-}"
NATIVE_TIMEOUT=${AX_TEST_TIMEOUT:-300}
QEMU_TIMEOUT=${AX_QEMU_TEST_TIMEOUT:-900}

total_pass=0 total_fail=0 total_skip=0 any_failed=0 stage_t0=
summary=()

log() { printf '\n==== %s\n' "$*"; }

# record <stage> <status> <passed> <failed> <skipped> <seconds>
record() {
  local stage=$1 status=$2 p=$3 f=$4 s=$5 secs=$6
  total_pass=$((total_pass + p)) total_fail=$((total_fail + f)) total_skip=$((total_skip + s))
  [[ $status == ok ]] || any_failed=1
  # Deliberately not of the bare form `N passed, N failed`: only the last line is.
  summary+=("$(printf 'stage %-18s %-6s (%d passed, %d failed, %d skipped; %ds)' \
    "$stage" "$status" "$p" "$f" "$s" "$secs")")
}

# run_ctest <stage> <dir> <timeout> [VAR=value...] -- runs ctest, records the stage.
run_ctest() {
  # The stage's time includes its configure + build when stage_t0 was set before them.
  local stage=$1 dir=$2 timeout=$3 t0=${stage_t0:-$SECONDS} rc=0
  stage_t0=
  shift 3
  local logf=$dir/ctest-${stage//\//-}.log
  log "$stage: ctest ${*}"
  env "$@" ctest --test-dir "$dir" --output-on-failure -j "$JOBS" --timeout "$timeout" \
    --no-tests=error 2>&1 | tee "$logf" || rc=${PIPESTATUS[0]}
  # "100% tests passed, 0 tests failed out of 12" (colour codes stripped, last one wins)
  local line total failed skipped passed
  line=$(sed 's/\x1b\[[0-9;]*m//g' "$logf" | grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' | tail -n 1 || true)
  if [[ -z $line ]]; then
    echo "test.sh: $stage: ctest printed no summary (exit $rc)" >&2
    record "$stage" FAILED 0 1 0 $((SECONDS - t0))
    return
  fi
  failed=$(sed -E 's/.* ([0-9]+) tests? failed out of.*/\1/' <<<"$line")
  total=$(sed -E 's/.*failed out of ([0-9]+).*/\1/' <<<"$line")
  # ctest counts skipped tests as passed in that line; they are listed as "(Skipped)".
  skipped=$(grep -cE '^[[:space:]]+[0-9]+ - .* \(Skipped\)$' "$logf" || true)
  passed=$((total - failed - skipped))
  if ((rc == 0 && failed == 0)); then
    record "$stage" ok "$passed" "$failed" "$skipped" $((SECONDS - t0))
  else
    record "$stage" FAILED "$passed" "$((failed > 0 ? failed : 1))" "$skipped" $((SECONDS - t0))
  fi
}

finish() {
  printf '\n==== summary\n'
  printf '%s\n' "${summary[@]}"
  local extra=""
  ((total_skip == 0)) || extra=", $total_skip skipped"
  printf '%d passed, %d failed%s\n' "$total_pass" "$total_fail" "$extra"
  exit $((any_failed || total_fail > 0))
}

# ---- dependencies -----------------------------------------------------------------------
if [[ ${AX_SKIP_DEPS:-0} != 1 ]]; then
  log "deps"
  t0=$SECONDS
  if ! bash "$ROOT/scripts/deps.sh"; then
    record deps FAILED 0 1 0 $((SECONDS - t0))
    finish
  fi
fi

# ---- native -----------------------------------------------------------------------------
log "native: configure + build ($NATIVE_DIR, Release)"
t0=$SECONDS stage_t0=$SECONDS
if ax_configure "$NATIVE_DIR" "" "${EXTRA_CMAKE_ARGS[@]}" && ax_build "$NATIVE_DIR"; then
  run_ctest native "$NATIVE_DIR" "$NATIVE_TIMEOUT"
else
  record native FAILED 0 1 0 $((SECONDS - t0))
fi

# ---- aarch64 under qemu-user ------------------------------------------------------------
if [[ ${AX_SKIP_CROSS:-0} != 1 ]]; then
  log "aarch64: configure + build ($CROSS_DIR, Release, $(basename "$TOOLCHAIN"))"
  t0=$SECONDS stage_t0=$SECONDS
  if ax_configure "$CROSS_DIR" "$TOOLCHAIN" "${EXTRA_CMAKE_ARGS[@]}" && ax_build "$CROSS_DIR"; then
    for cpu in "${QEMU_CPUS[@]}"; do
      run_ctest "aarch64/$cpu" "$CROSS_DIR" "$QEMU_TIMEOUT" "QEMU_CPU=$cpu"
    done
  else
    record aarch64-build FAILED 0 1 0 $((SECONDS - t0))
  fi
fi

finish
