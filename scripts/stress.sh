#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Long stress run of tests/t_stress (threads in rounds, blocks handed between threads,
# every block verified), natively or for AArch64 under qemu-user.
#
#   bash scripts/stress.sh [seconds=600] [threads=8]                   # native
#   bash scripts/stress.sh --qemu max [seconds] [threads]              # aarch64, QEMU_CPU=max
#   bash scripts/stress.sh --qemu cortex-a57 3600 16                   # ARMv8.0 (LL/SC)
#
# Builds build-stress/ (native) or build-stress-aarch64/ (toolchain/aarch64-linux-gnu.cmake),
# Release, then runs t_stress until the time is up (rounds of 100 x scale operations per
# thread; hours are fine: it prints progress every minute). The last line is t_stress's
# summary: threads, rounds, operations, seconds. Exits non-zero on any failure.
#
# Environment: AX_STRESS_SCALE (default 100 natively, 10 under qemu), JOBS (build
# parallelism, default 2), AX_CMAKE_ARGS (extra configure arguments).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib.sh
source "$ROOT/scripts/lib.sh"

cpu=
if [[ ${1:-} == --qemu ]]; then
  cpu=${2:?"--qemu needs a CPU model (max, cortex-a57, ...)"}
  shift 2
fi
seconds=${1:-600}
threads=${2:-8}
read -r -a extra <<<"${AX_CMAKE_ARGS:-}"

if [[ -z $cpu ]]; then
  dir=$ROOT/build-stress
  ax_configure "$dir" "" "${extra[@]}" >/dev/null
  run=()
  scale=${AX_STRESS_SCALE:-100}
else
  dir=$ROOT/build-stress-aarch64
  ax_configure "$dir" "$ROOT/toolchain/aarch64-linux-gnu.cmake" "${extra[@]}" >/dev/null
  run=(env "QEMU_CPU=$cpu" qemu-aarch64 -L /usr/aarch64-linux-gnu)
  scale=${AX_STRESS_SCALE:-10}
fi
cmake --build "$dir" -j "${JOBS:-2}" --target t_stress

echo "stress.sh: ${cpu:+qemu $cpu, }$threads threads, $seconds s, scale $scale ($dir)"
# rounds=1: the duration decides how many rounds run
AX_STRESS_SECONDS=$seconds "${run[@]}" "$dir/tests/t_stress" "$threads" 1 "$scale"
