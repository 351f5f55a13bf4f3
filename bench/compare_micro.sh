#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run every Google Benchmark binary (build/bench/bm_*, bm_bulk aside: it measures kernels,
# not allocators) under each allocator through LD_PRELOAD, repetitions interleaved across
# allocators, and report side by side: a markdown table of medians with axmalloc's ratio to
# each peer, a JSON file, and a plot of throughput against thread count.
#
#   bash bench/compare_micro.sh [BUILD_DIR] [REPS]        (defaults: build 3)
#
# Environment: AX_EXTRA_PEERS ("name=/path/lib.so ...", added by ALLOCATORS=all);
# ALLOCATORS (as compare_workloads.sh: default glibc and axmalloc; "all" adds
# the peers installed), BM_FILTER (a --benchmark_filter regex), BM_MIN_TIME (seconds per
# benchmark, default 0.05). Writes BUILD_DIR/results/micro.{md,json} and micro_threads.png.
# bm_st also runs under axmalloc with AXMALLOC_FORCE_MT=1 (column axmalloc-forcemt): the
# single-threaded path against the forced atomic one.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-build}
[[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD
REPS=${2:-3}
OUT=$BUILD/results
RAW=$OUT/micro_raw
mkdir -p "$OUT" "$RAW"
rm -f "$RAW"/*.json

LIBDIR=/usr/lib/$(cc -dumpmachine)
declare -A PEERS=([jemalloc]=$LIBDIR/libjemalloc.so.2 [tcmalloc]=$LIBDIR/libtcmalloc_minimal.so.4
  [mimalloc]=$LIBDIR/libmimalloc.so.2 [tbbmalloc]=$LIBDIR/libtbbmalloc_proxy.so.2)
names=(glibc axmalloc)
libs=("" "$BUILD/libaxmalloc.so")
if [[ ${ALLOCATORS:-} == all ]]; then
  for p in jemalloc tcmalloc mimalloc tbbmalloc; do
    [[ -e ${PEERS[$p]} ]] && names+=("$p") libs+=("${PEERS[$p]}")
  done
  for x in ${AX_EXTRA_PEERS:-}; do names+=("${x%%=*}") libs+=("${x#*=}"); done
elif [[ -n ${ALLOCATORS:-} ]]; then
  names=() libs=()
  for a in $ALLOCATORS; do
    case $a in
    glibc) names+=(glibc) libs+=("") ;;
    axmalloc) names+=(axmalloc) libs+=("$BUILD/libaxmalloc.so") ;;
    *=*) names+=("${a%%=*}") libs+=("${a#*=}") ;;
    *) names+=("$a") libs+=("${PEERS[$a]:?unknown allocator $a}") ;;
    esac
  done
fi
[[ -e $BUILD/libaxmalloc.so ]] || { echo "compare_micro: build first ($BUILD/libaxmalloc.so)" >&2; exit 2; }

bins=()
for b in "$BUILD"/bench/bm_*; do
  [[ -x $b && $(basename "$b") != bm_bulk ]] && bins+=("$b")
done
((${#bins[@]})) || { echo "compare_micro: no bm_* binaries in $BUILD/bench" >&2; exit 2; }

min_time=${BM_MIN_TIME:-0.05}
for ((r = 1; r <= REPS; r++)); do
  for b in "${bins[@]}"; do
    for i in "${!names[@]}"; do
      n=${names[$i]} bn=$(basename "$b")
      printf 'compare_micro: rep %d/%d %s under %s\n' "$r" "$REPS" "$bn" "$n" >&2
      LD_PRELOAD=${libs[$i]} "$b" --benchmark_min_time="${min_time}" \
        ${BM_FILTER:+--benchmark_filter="$BM_FILTER"} --benchmark_format=json \
        >"$RAW/$bn.$n.$r.json" 2>/dev/null ||
        { echo "compare_micro: $bn failed under $n" >&2; exit 1; }
    done
    if [[ $(basename "$b") == bm_st ]]; then # the single-threaded path against forced MT
      printf 'compare_micro: rep %d/%d bm_st under axmalloc with AXMALLOC_FORCE_MT=1\n' "$r" "$REPS" >&2
      AXMALLOC_FORCE_MT=1 LD_PRELOAD=$BUILD/libaxmalloc.so "$b" --benchmark_min_time="${min_time}" \
        ${BM_FILTER:+--benchmark_filter="$BM_FILTER"} --benchmark_format=json >"$RAW/bm_st.axmalloc-forcemt.$r.json" 2>/dev/null
    fi
  done
done

python3 "$ROOT/bench/micro_report.py" "$RAW" "$OUT" "${names[@]}" axmalloc-forcemt
echo "compare_micro: $OUT/micro.md, $OUT/micro.json, $OUT/micro_threads.png" >&2
