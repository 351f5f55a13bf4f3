#!/usr/bin/env bash
# Install deps, build natively (build/, Release), and run the workload comparison against glibc
# (and the other allocators that bench/compare_workloads.sh knows).
#
#   bash scripts/bench.sh            # 5 runs per workload
#   RUNS=10 bash scripts/bench.sh
#
# Environment: AX_SKIP_DEPS=1 skips scripts/deps.sh; JOBS (default 2) build parallelism;
# AX_CMAKE_ARGS extra cmake configure arguments.
# The table is written to build/workloads.md (by bench/compare_workloads.sh).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=scripts/lib.sh
source "$ROOT/scripts/lib.sh"

BUILD_DIR=build
RUNS=${RUNS:-5}
read -r -a EXTRA_CMAKE_ARGS <<<"${AX_CMAKE_ARGS:-}"

if [[ ${AX_SKIP_DEPS:-0} != 1 ]]; then
  bash "$ROOT/scripts/deps.sh"
fi

ax_configure "$BUILD_DIR" "" "${EXTRA_CMAKE_ARGS[@]}"
ax_build "$BUILD_DIR"

if [[ ! -f bench/compare_workloads.sh ]]; then
  echo "bench.sh: bench/compare_workloads.sh is missing" >&2
  exit 1
fi
bash bench/compare_workloads.sh "$BUILD_DIR" "$RUNS"

table=$ROOT/$BUILD_DIR/workloads.md
if [[ -f $table ]]; then
  printf '\nbench.sh: the table is in %s\n' "$table"
else
  echo "bench.sh: compare_workloads.sh finished but wrote no $table" >&2
  exit 1
fi
