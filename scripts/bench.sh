#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install deps, build what the benchmarks need (build/, Release), then compare axmalloc with
# glibc and the Debian-packaged peers installed (jemalloc, tcmalloc, mimalloc, tbbmalloc):
#   1. the workloads (bench/workloads), preloaded, plus axmalloc linked in statically;
#      wl_threads and wl_thread_churn once more confined to one CPU;
#   2. the Google Benchmark micro-benchmarks (bench/bm_*), preloaded;
#   3. instructions per operation under callgrind (bench/callgrind/budget.sh);
#   4. the same counted on AArch64 under qemu-aarch64 (bench/qemu/arm_vs_x86.sh: the cross
#      builds build-aarch64{,-lse,-llsc}, library only).
# Steps 1 and 2 time RUNS (5) interleaved runs of everything and report medians [min-max],
# what is within the noise, and how many runs other load on the machine disturbed
# (bench/report.py). It says how long it expects to take before it starts, from the times of
# the previous run on this machine (build/results/estimate.tsv) or those of the last
# published run (bench/estimate.tsv), and after every run how long is left: about 12 minutes
# on a quiet 2-core machine (checked: the workloads' 2 runs took 2:39 against 2:49
# estimated, the micro-benchmarks' run 38 s against 44 s), up to a fifth more on a busy one.
#
#   bash scripts/bench.sh             results in build/results/ (RESULTS.md, JSON, PNG);
#                                     no tracked file changes
#   bash scripts/bench.sh --publish   the same, then copies RESULTS.md, the plots and the
#                                     estimate into bench/ (to commit); refuses a checkout
#                                     with changes, whose commit a reader cannot rebuild
#   bash scripts/bench.sh --estimate  only print the estimate
#
# Environment: RUNS (5); AX_SKIP_DEPS=1 skips scripts/deps.sh; JOBS (2) build parallelism;
# AX_CMAKE_ARGS extra cmake configure arguments; WORKLOADS and ALLOCATORS as in
# bench/compare_workloads.sh (defaults below); BM_FILTER and BM_MIN_TIME as in
# bench/compare_micro.sh; AX_BUSY, AX_RETRY (bench/runlib.sh); AX_SKIP_ARM=1 skips step 4;
# AX_EXTRA_PEERS (allocators Debian does not package: bench/peers.sh builds snmalloc,
# mimalloc 3 and rpmalloc from their release tags and prints the line; not in the default
# report, which a reader must be able to rebuild from Debian packages alone).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# The commit the results are from, before anything is written (a clean checkout stays clean:
# every output below goes to build/, which git ignores, until --publish).
DESCRIBE=$(git describe --always --dirty 2>/dev/null || echo unknown)
export AX_BENCH_T0=$EPOCHREALTIME
# shellcheck source=scripts/lib.sh
source "$ROOT/scripts/lib.sh"
# shellcheck source=bench/runlib.sh
source "$ROOT/bench/runlib.sh"

publish=0 estimate_only=0
for arg in "$@"; do
  case $arg in
    --publish) publish=1 ;;
    --estimate) estimate_only=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench.sh: unknown argument '$arg' (--publish, --estimate)" >&2; exit 2 ;;
  esac
done
if ((publish)) && [[ $DESCRIBE == *-dirty && ${AX_PUBLISH_DIRTY:-0} != 1 ]]; then
  echo "bench.sh: --publish on a checkout with changes ($DESCRIBE): commit or stash first" >&2
  exit 2
fi

BUILD_DIR=build
RES=$ROOT/$BUILD_DIR/results
export RUNS=${RUNS:-5}
export ALLOCATORS=${ALLOCATORS:-all axmalloc-static}
# Every workload, the long ones shortened so that 5 runs of 7 allocators take about 7 minutes
# on 2 cores (85 s a run with 1 CPU of other load, bench/estimate.tsv; at the defaults, all
# allocators, 3c4e777's run took per run: wl_largebuf 66 s at its
# default 2000 iterations, jemalloc 19 s and mimalloc 17 s of it; wl_vecgrow 13 s;
# wl_oneblock 8 s, mimalloc 5.7 s; wl_prodcons 6.6 s; wl_gc_handoff 5.4 s). Each keeps its
# pattern: wl_largebuf still replaces its 20 live buffers 25 times over.
# wl_bigbuf:512,1,2,1024,200 is issue 44's large-buffer setup (2 x 512 MiB touched and copied,
# 200 callocs of 8 MiB a thread): where huge pages cost more than small ones (a VM whose host
# backs memory lazily) or less, its time and its faults show what the THP policy chose.
# The thread-count workloads once more on one CPU (the first this process may use).
cpu=0
command -v taskset >/dev/null && cpu=$(taskset -pc $$ | sed -n 's/.*: *\([0-9]*\).*/\1/p')
export WORKLOADS=${WORKLOADS:-wl_bigbuf wl_bigbuf:512,1,2,1024,200 wl_binarytrees wl_bitset:20000000,10 wl_churn \
wl_gc_handoff:500000 wl_largebuf:500 wl_larson wl_oneblock:5000000 wl_prodcons:10000000 \
wl_rounds wl_scratch wl_strings:100000,10 wl_vecgrow:1 wl_threads wl_thread_churn \
wl_threads@cpus=${cpu:-0} wl_thread_churn@cpus=${cpu:-0}}
# The micro-benchmarks: of bm_pairs the LIFO and random orders at 8 B - 256 KiB (FIFO and
# 32 KiB / 1 MiB add 33 benchmarks, 5 s a run per allocator), of bm_calloc 4 KiB, 256 KiB and
# 16 MiB in its three states; every other benchmark.
export BM_FILTER=${BM_FILTER-'^(facade|realloc|remote|st)/|^pairs/(lifo|random)/(8|64|512|4096|262144)/|^calloc/[a-z]+/(4096|262144|16777216)/'}
read -r -a EXTRA_CMAKE_ARGS <<<"${AX_CMAKE_ARGS:-}"
arm=1
[[ ${AX_SKIP_ARM:-0} != 1 ]] && command -v aarch64-linux-gnu-gcc >/dev/null &&
  command -v qemu-aarch64 >/dev/null || arm=0

if [[ ${AX_SKIP_DEPS:-0} != 1 ]]; then
  bash "$ROOT/scripts/deps.sh"
fi

# ---- the estimate --------------------------------------------------------------------------
# Per-run medians of the previous run here (build/results/estimate.tsv) over those of the
# last published run (bench/estimate.tsv); steps by their total.
ax_est_load "$ROOT/bench/estimate.tsv" "$RES/estimate.tsv"
step_ms() { # STEP DEFAULT_S
  local v=${AX_EST[step|$1|-]:-}
  echo "${v:-$(($2 * 1000))}"
}
EST_CALLGRIND=$(step_ms callgrind 120)
EST_ARM=0
((arm)) && EST_ARM=$(step_ms arm 240)

# Only the targets the benchmarks run (a full build adds the tests: minutes on 2 cores).
echo "bench.sh: building the library, workloads and benchmarks (configure and build from" \
  "scratch: 20 s on 2 cores)" >&2
ax_configure "$BUILD_DIR" "" "${EXTRA_CMAKE_ARGS[@]}" >/dev/null
t_step=$EPOCHREALTIME
mapfile -t targets < <(cmake --build "$BUILD_DIR" --target help |
  sed -n 's/^\(\.\.\. \)\{0,1\}\(\(wl\|bm\)_[a-z_]*\)\(: .*\)\{0,1\}$/\2/p' | grep -v '_obj$\|^bm_bulk$' | sort -u)
cmake --build "$BUILD_DIR" -j "${JOBS:-2}" --target axmalloc "${targets[@]}" >/dev/null
T_BUILD=$(awk -v a="$t_step" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')

read -r EST_WL MISS_WL < <(AX_ESTIMATE_ONLY=1 bash bench/compare_workloads.sh "$BUILD_DIR" "$RUNS" 2>/dev/null)
read -r EST_MICRO MISS_MICRO < <(AX_ESTIMATE_ONLY=1 ALLOCATORS=all bash bench/compare_micro.sh "$BUILD_DIR" "$RUNS" 2>/dev/null)
guessed=
((MISS_WL + MISS_MICRO == 0)) ||
  guessed="; $((MISS_WL + MISS_MICRO)) kinds of run never measured, guessed at 1 s a workload, 8 s a benchmark program"
total=$((EST_WL + EST_MICRO + EST_CALLGRIND + EST_ARM))
echo "bench.sh: axmalloc $DESCRIBE; built in ${T_BUILD} s; expected about $(ax_fmt_min "$total") more:" \
  "workloads $(ax_fmt_min "$EST_WL"), micro-benchmarks $(ax_fmt_min "$EST_MICRO")," \
  "callgrind $(ax_fmt_min "$EST_CALLGRIND"), AArch64 $(ax_fmt_min "$EST_ARM") (${RUNS} runs;" \
  "per-run times of ${AX_EST_SOURCE:-no earlier run: guesses}$guessed; up to a fifth more on a busy" \
  "machine, whose disturbed runs are repeated)" >&2
((estimate_only)) && exit 0
mkdir -p "$RES"

declare -A T_STEP=()
step_begin() { # N WHAT LEFT_MS (the estimate of this step and those after it)
  t_step=$EPOCHREALTIME
  local el=$(((${EPOCHREALTIME/./} - ${AX_BENCH_T0/./}) / 1000))
  echo "bench.sh: [$1/4] $2 ($(ax_fmt_min "$el") elapsed, about $(ax_fmt_min "$3") left)" >&2
}
step_end() {
  T_STEP[$1]=$(awk -v a="$t_step" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
}

step_begin 1 "workloads, $RUNS interleaved runs, allocators: $ALLOCATORS" "$total"
wl_status=0
AX_ETA_AFTER_MS=$((EST_MICRO + EST_CALLGRIND + EST_ARM)) \
  bash bench/compare_workloads.sh "$BUILD_DIR" "$RUNS" >/dev/null || wl_status=$?
step_end workloads
step_begin 2 "micro-benchmarks, $RUNS interleaved runs" $((EST_MICRO + EST_CALLGRIND + EST_ARM))
AX_ETA_AFTER_MS=$((EST_CALLGRIND + EST_ARM)) ALLOCATORS=all BM_MIN_TIME=${BM_MIN_TIME:-0.05} \
  bash bench/compare_micro.sh "$BUILD_DIR" "$RUNS"
step_end micro
step_begin 3 "instructions per operation (callgrind)" $((EST_CALLGRIND + EST_ARM))
bash bench/callgrind/budget.sh "$BUILD_DIR" >"$RES/instructions.md"
step_end callgrind
if ((arm)); then
  step_begin 4 "instructions per operation on AArch64 (qemu-aarch64)" "$EST_ARM"
  for mode in runtime lse llsc; do
    dir=build-aarch64
    [[ $mode = runtime ]] || dir=build-aarch64-$mode
    ax_configure "$dir" "$ROOT/toolchain/aarch64-linux-gnu.cmake" -DAX_AARCH64_ATOMICS=$mode \
      "${EXTRA_CMAKE_ARGS[@]}" >/dev/null
    cmake --build "$dir" -j "${JOBS:-2}" --target axmalloc >/dev/null
  done
  bash bench/qemu/arm_vs_x86.sh "$BUILD_DIR" build-aarch64 >"$RES/arm_vs_x86.md"
  step_end arm
else
  echo "bench.sh: [4/4] skipped (AX_SKIP_ARM=1, or no aarch64-linux-gnu-gcc or qemu-aarch64)" >&2
  echo "(not measured: AX_SKIP_ARM=1, or no aarch64-linux-gnu-gcc or qemu-aarch64)" >"$RES/arm_vs_x86.md"
fi

# The next run's estimate: this run's per-run medians and step totals.
load=$(awk -F'\t' 'FNR > 1 && $8 != "" { o += $8; s += $4 } END { if (s) printf "%.2f", o / s }' \
  "$RES/workloads_runs.tsv" "$RES/micro_runs.tsv")
{
  echo "# per-run seconds (kind, name, allocator, median) measured by scripts/bench.sh on" \
    "$(date -u '+%Y-%m-%d'), $(nproc) CPUs, axmalloc $DESCRIBE, other load ${load:-?} CPUs on average"
  cat "$RES/estimate_workloads.tsv" "$RES/estimate_micro.tsv" 2>/dev/null
  for s in callgrind arm; do [[ -z ${T_STEP[$s]:-} ]] || printf 'step\t%s\t-\t%s\n' "$s" "${T_STEP[$s]}"; done
} >"$RES/estimate.tsv.new"
mv "$RES/estimate.tsv.new" "$RES/estimate.tsv"

# ---- RESULTS.md ----------------------------------------------------------------------------
ver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "not installed"; }
elapsed=$(awk -v a="$AX_BENCH_T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", (b - a) * 1000 }')
{
  echo "# Benchmark results"
  echo
  echo "Made by \`bash scripts/bench.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC') from axmalloc" \
    "\`$DESCRIBE\` in $(ax_fmt_min "$elapsed") (expected $(ax_fmt_min "$total") after the build," \
    "workloads $(ax_fmt_min "${T_STEP[workloads]%.*}000"), micro-benchmarks" \
    "$(ax_fmt_min "${T_STEP[micro]%.*}000")). Every run's numbers are in build/results/" \
    "(*_runs.tsv, *.json) after a run of your own."
  echo
  echo "- CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, $(uname -m)"
  echo "- OS page size: $(getconf PAGESIZE) B; kernel $(uname -r)"
  echo "- glibc $(ldd --version | head -1 | awk '{print $NF}'); jemalloc $(ver libjemalloc2);" \
    "tcmalloc $(ver libtcmalloc-minimal4); mimalloc $(ver libmimalloc2.0); tbbmalloc $(ver libtbbmalloc2)"
  for x in ${AX_EXTRA_PEERS:-}; do echo "- extra peer ${x%%=*}: ${x#*=} (bench/peers.sh)"; done
  echo "- a run is disturbed when $AX_BUSY_NOTE (the CPU time all CPUs were busy, /proc/stat," \
    "minus the run's own); it is repeated once, and left out while its cell has 3 quiet runs"
  echo
  echo "## Workloads (wall time)"
  echo
  echo "Arguments as run (bench/workloads/README.md): \`$WORKLOADS\`."
  echo
  cat "$RES/workloads.md"
  echo
  echo "![Wall time relative to axmalloc](time.png)"
  echo
  echo "![Peak RSS relative to axmalloc](rss.png)"
  echo
  echo "## Micro-benchmarks (Google Benchmark, time per iteration)"
  echo
  echo "\`--benchmark_min_time=${BM_MIN_TIME:-0.05}\`, \`--benchmark_filter='$BM_FILTER'\`."
  echo
  cat "$RES/micro.md"
  echo
  echo "![Throughput against threads](micro_threads.png)"
  echo
  echo "## Instructions per operation (callgrind)"
  echo
  cat "$RES/instructions.md"
  echo
  echo "## Instructions per operation, AArch64 against x86-64"
  echo
  cat "$RES/arm_vs_x86.md"
} >"$RES/RESULTS.md"

echo "bench.sh: done in $(ax_fmt_min "$elapsed") (expected $(ax_fmt_min "$total") after the build);" \
  "results in $RES (RESULTS.md, *.json, *_runs.tsv, *.png)" >&2
if ((publish)); then
  mkdir -p "$ROOT/bench/results"
  sed 's/](\(time\|rss\|micro_threads\)\.png)/](results\/\1.png)/' "$RES/RESULTS.md" >"$ROOT/bench/RESULTS.md"
  cp "$RES"/time.png "$RES"/rss.png "$RES"/micro_threads.png "$ROOT/bench/results/" 2>/dev/null || true
  cp "$RES/estimate.tsv" "$ROOT/bench/estimate.tsv"
  echo "bench.sh: published bench/RESULTS.md, bench/results/*.png, bench/estimate.tsv (commit them)" >&2
fi
exit "$wl_status"
