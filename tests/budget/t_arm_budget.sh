#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# t_arm_budget.sh LIBAXMALLOC -- AArch64 instruction budgets (issue 13): counts the guest
# instructions of axmalloc's hot operations under qemu-aarch64 (bench/callgrind/budget.sh
# --qemu, the TCG plugin bench/qemu/insn_count.c built with the host's cc) and fails when
# any exceeds bench/qemu/budget.<atomics>-<cpu>.txt by more than 10%. The CPU is $QEMU_CPU
# (the ctest pass's, default max), <atomics> the build's AX_AARCH64_ATOMICS.
# Skips (exit 77) where no budget is recorded (a build run on another CPU than its budget's)
# and in passes that force another path (an AXMALLOC_* variable set: their counts differ by
# design). After an intended change of a fast path rewrite the budgets with, per build:
#   bash bench/callgrind/budget.sh --qemu max --write build-aarch64   (and cortex-a57; the
#   -lse build on max, the -llsc build on cortex-a57)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LIB=${1:?usage: t_arm_budget.sh libaxmalloc.so}
CPU=${QEMU_CPU:-max}
if env | grep -q '^AXMALLOC_'; then
  echo "t_arm_budget: skipped: $(env | grep '^AXMALLOC_' | tr '\n' ' ')forces another path"
  exit 77
fi
atomics=$(sed -n 's/^AX_AARCH64_ATOMICS:[A-Z]*=//p' "$(dirname "$LIB")/CMakeCache.txt")
BUDGET=$ROOT/bench/qemu/budget.$atomics-$CPU.txt
if [[ ! -r $BUDGET ]]; then
  echo "t_arm_budget: skipped: no budget for the $atomics build on $CPU ($BUDGET)"
  exit 77
fi
exec bash "$ROOT/bench/callgrind/budget.sh" --qemu "$CPU" --check "$LIB" "$BUDGET"
