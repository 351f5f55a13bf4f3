#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install deps, build natively (build/, Release), then compare axmalloc with glibc and every
# peer installed (jemalloc, tcmalloc, mimalloc, tbbmalloc) side by side:
#   1. the seed workloads (bench/workloads), preloaded, plus axmalloc linked in statically;
#      wl_threads and wl_thread_churn (many more threads than cores) once more with the
#      process confined to one CPU (its first allowed one: "wl_threads@cpus=0");
#   2. the Google Benchmark micro-benchmarks (bench/bm_*), preloaded;
#   3. instructions per operation under callgrind (bench/callgrind/budget.sh);
#   4. the same counted on AArch64 under qemu-aarch64 (bench/qemu/arm_vs_x86.sh: the cross
#      builds build-aarch64{,-lse,-llsc}, library only, on the CPUs whose atomics they run).
# Writes build/results/ (markdown, JSON, PNG plots) and bench/RESULTS.md (the summary with
# the machine, versions, page size and date). About 9 minutes on 2 cores.
#
#   bash scripts/bench.sh
#   RUNS=5 MICRO_REPS=3 bash scripts/bench.sh
#
# Environment: AX_SKIP_DEPS=1 skips scripts/deps.sh; JOBS (default 2) build parallelism;
# AX_CMAKE_ARGS extra cmake configure arguments; ALLOCATORS and WORKLOADS as in
# compare_workloads.sh (default WORKLOADS: "all" plus the two confined runs above);
# AX_EXTRA_PEERS="name=/path/lib.so ..." adds allocators Debian does not package (snmalloc,
# mimalloc 3, rpmalloc built from their sources wherever they are) to every comparison:
#   AX_EXTRA_PEERS="mimalloc3=/opt/mi3/libmimalloc.so snmalloc=/opt/sn/libsnmallocshim.so" \
#     bash scripts/bench.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=scripts/lib.sh
source "$ROOT/scripts/lib.sh"

BUILD_DIR=build
RUNS=${RUNS:-3}
MICRO_REPS=${MICRO_REPS:-2}
export ALLOCATORS=${ALLOCATORS:-all axmalloc-static}
# The thread-count workloads once more on one CPU: every thread time-sliced on it (the first
# CPU this process may use, 0 unless a cpuset says otherwise).
if command -v taskset >/dev/null; then
  cpu=$(taskset -pc $$ | sed -n 's/.*: *\([0-9]*\).*/\1/p') || cpu=0
  export WORKLOADS=${WORKLOADS:-all wl_threads@cpus=${cpu:-0} wl_thread_churn@cpus=${cpu:-0}}
else
  echo "bench.sh: no taskset (util-linux): the one-CPU runs are skipped" >&2
fi
read -r -a EXTRA_CMAKE_ARGS <<<"${AX_CMAKE_ARGS:-}"

if [[ ${AX_SKIP_DEPS:-0} != 1 ]]; then
  bash "$ROOT/scripts/deps.sh"
fi
ax_configure "$BUILD_DIR" "" "${EXTRA_CMAKE_ARGS[@]}"
ax_build "$BUILD_DIR"
RES=$ROOT/$BUILD_DIR/results
mkdir -p "$RES"

echo "bench.sh: [1/3] workloads, $RUNS interleaved runs, allocators: $ALLOCATORS" >&2
bash bench/compare_workloads.sh "$BUILD_DIR" "$RUNS"
echo "bench.sh: [2/3] micro-benchmarks, $MICRO_REPS repetitions" >&2
ALLOCATORS=all BM_MIN_TIME=${BM_MIN_TIME:-0.05} bash bench/compare_micro.sh "$BUILD_DIR" "$MICRO_REPS" >/dev/null
echo "bench.sh: [3/4] instructions per operation (callgrind)" >&2
bash bench/callgrind/budget.sh "$BUILD_DIR" >"$RES/instructions.md"
echo "bench.sh: [4/4] instructions per operation on AArch64 (qemu-aarch64)" >&2
if command -v aarch64-linux-gnu-gcc >/dev/null && command -v qemu-aarch64 >/dev/null; then
  for mode in runtime lse llsc; do
    dir=build-aarch64
    [[ $mode = runtime ]] || dir=build-aarch64-$mode
    ax_configure "$dir" "$ROOT/toolchain/aarch64-linux-gnu.cmake" -DAX_AARCH64_ATOMICS=$mode \
      "${EXTRA_CMAKE_ARGS[@]}" >/dev/null
    cmake --build "$dir" -j "${JOBS:-2}" --target axmalloc >/dev/null
  done
  bash bench/qemu/arm_vs_x86.sh "$BUILD_DIR" build-aarch64 >"$RES/arm_vs_x86.md"
else
  echo "(no aarch64-linux-gnu-gcc or qemu-aarch64: not measured)" >"$RES/arm_vs_x86.md"
fi

# ---- bench/RESULTS.md --------------------------------------------------------------------
ver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "not installed"; }
{
  echo "# Latest benchmark results"
  echo
  echo "Made by \`bash scripts/bench.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'). Plots and JSON:"
  echo "\`build/results/\` (time.png, rss.png, micro_threads.png, workloads.json, micro.json)."
  echo
  echo "- CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, $(uname -m)"
  echo "- OS page size: $(getconf PAGESIZE) B; kernel $(uname -r)"
  echo "- glibc $(ldd --version | head -1 | awk '{print $NF}'); jemalloc $(ver libjemalloc2);" \
    "tcmalloc $(ver libtcmalloc-minimal4); mimalloc $(ver libmimalloc2.0); tbbmalloc $(ver libtbbmalloc2)"
  echo "- axmalloc $(git -C "$ROOT" describe --always --dirty 2>/dev/null)"
  for x in ${AX_EXTRA_PEERS:-}; do echo "- extra peer ${x%%=*}: ${x#*=}"; done
  echo
  echo "## Workloads (wall time, median of $RUNS interleaved runs)"
  echo
  cat "$RES/workloads.md"
  echo
  echo "## Micro-benchmarks (Google Benchmark, median of $MICRO_REPS runs)"
  echo
  cat "$RES/micro.md"
  echo
  echo "## Instructions per operation (callgrind)"
  echo
  cat "$RES/instructions.md"
  echo
  echo "## Instructions per operation, AArch64 against x86-64"
  echo
  cat "$RES/arm_vs_x86.md"
} >"$ROOT/bench/RESULTS.md"

printf '\nbench.sh: summary in %s; tables, JSON and plots in %s\n' "$ROOT/bench/RESULTS.md" "$RES"
