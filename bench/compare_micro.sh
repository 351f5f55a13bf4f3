#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run every Google Benchmark binary (build/bench/bm_*, bm_bulk aside: it measures kernels,
# not allocators) under each allocator through LD_PRELOAD, runs interleaved across
# allocators (for each run: every binary, every allocator in turn), and report side by side
# (bench/report.py): per binary a table of axmalloc's time and each peer's time relative to
# it, median [min-max], with what is within the noise; a JSON file; a plot of throughput
# against thread count.
#
#   bash bench/compare_micro.sh [BUILD_DIR] [RUNS]        (defaults: build 5)
#
# Environment: ALLOCATORS (as compare_workloads.sh: default glibc and axmalloc; "all" adds
# the Debian-packaged peers installed and AX_EXTRA_PEERS, "name=/path/lib.so ...", see
# bench/peers.sh), BM_FILTER (a --benchmark_filter regex, default all), BM_MIN_TIME
# (seconds per benchmark, default 0.05), AX_BUSY and AX_RETRY (as compare_workloads.sh),
# AX_ESTIMATE_ONLY=1 (print the estimated milliseconds and exit). Writes
# BUILD_DIR/results/micro_runs.tsv (every program run: time, CPU time, other load, disturbed),
# micro_raw/ (Google Benchmark's JSON of each), micro.{md,json} and micro_threads.png.
# bm_st also runs under axmalloc with AXMALLOC_FORCE_MT=1 (column axmalloc-forcemt): the
# single-threaded path against the forced atomic one.
set -euo pipefail
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source=bench/runlib.sh
source "$HERE/runlib.sh"
BUILD=${1:-build}
[[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD
RUNS=${2:-5}
OUT=${RESULTS_DIR:-$BUILD/results}
RAW=$OUT/micro_raw

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

# The plan, allocator by allocator: bm_st once more under axmalloc forced multi-threaded.
plan_bin=() plan_name=() plan_lib=() plan_env=()
for b in "${bins[@]}"; do
  for i in "${!names[@]}"; do
    plan_bin+=("$b") plan_name+=("${names[$i]}") plan_lib+=("${libs[$i]}") plan_env+=("")
  done
  if [[ $(basename "$b") == bm_st ]]; then
    plan_bin+=("$b") plan_name+=(axmalloc-forcemt) plan_lib+=("$BUILD/libaxmalloc.so")
    plan_env+=(AXMALLOC_FORCE_MT=1)
  fi
done
min_time=${BM_MIN_TIME:-0.05}
# A program's time depends on the filter and the time per benchmark: estimates are kept under
# "bm:<checksum of both>".
EST_KIND=bm:$(printf '%s|%s' "${BM_FILTER:-}" "$min_time" | cksum | cut -d' ' -f1)
ax_est_load "$HERE/estimate.tsv" "$OUT/estimate.tsv"
EST_ROUND=0
for j in "${!plan_bin[@]}"; do
  ax_est "$EST_KIND" "$(basename "${plan_bin[$j]}")" "${plan_name[$j]}"
  EST_ROUND=$((EST_ROUND + AX_EST_V))
done
EST_NOTE=$(ax_est_note ${#plan_bin[@]})
if [[ ${AX_ESTIMATE_ONLY:-0} == 1 ]]; then
  echo "$((EST_ROUND * RUNS)) $AX_EST_MISS"
  exit 0
fi

mkdir -p "$OUT" "$RAW"
rm -f "$RAW"/*.json
RUNS_TSV=$OUT/micro_runs.tsv
printf 'round\tname\tallocator\tseconds\trss_kib\tminor_faults\tcpu_s\tother_cpu_s\trunning_before\trunning_after\tdisturbed\tstatus\n' >"$RUNS_TSV"
AX_RETRY=${AX_RETRY:-1}
NDIST=0 NRETRY=0

# run_bm PLAN_INDEX ROUND [ATTEMPT]: one run of one binary under one allocator, its JSON in
# RAW/<binary>.<allocator>.<round>.json (a repeated run's: ...<round>.2.json); sets
# RUN_DISTURBED.
run_bm() {
  local j=$1 r=$2 b=${plan_bin[$1]} n=${plan_name[$1]} bn tf json
  bn=$(basename "$b") tf=$(mktemp)
  json=$RAW/$bn.$n.$r${3:+.$3}.json
  local -a envs=()
  [[ -z ${plan_env[$j]} ]] || envs=("${plan_env[$j]}")
  ax_load_sample
  local busy0=$AX_BUSY_MS run0=$AX_RUNNING t0=${EPOCHREALTIME/./} status=ok
  /usr/bin/time -f '%U %S' -o "$tf" env LD_PRELOAD="${plan_lib[$j]}" "${envs[@]}" "$b" \
    --benchmark_min_time="${min_time}" ${BM_FILTER:+--benchmark_filter="$BM_FILTER"} \
    --benchmark_format=json >"$json" 2>/dev/null || status="$bn failed under $n"
  local t1=${EPOCHREALTIME/./}
  ax_load_sample
  local secs ut st cpu
  secs=$(printf '%d.%06d' $(((t1 - t0) / 1000000)) $(((t1 - t0) % 1000000)))
  read -r ut st <"$tf" || true
  rm -f "$tf"
  cpu=$(awk -v u="${ut:-}" -v s="${st:-}" 'BEGIN { if (u != "" && s != "") printf "%.2f", u + s }')
  ax_other_load "$busy0" "$AX_BUSY_MS" "$cpu" "$secs"
  RUN_DISTURBED=$AX_DISTURBED
  printf '%d\t%s\t%s\t%s\t\t\t%s\t%s\t%s\t%s\t%d\t%s\n' "$r" "$bn" "$n" "$secs" "$cpu" \
    "$AX_OTHER_S" "$run0" "$AX_RUNNING" "$RUN_DISTURBED" "$status" >>"$RUNS_TSV"
  [[ $status == ok ]] || { echo "compare_micro: $status" >&2; exit 1; }
  ax_est "$EST_KIND" "$bn" "$n"
  ax_eta_tick "$AX_EST_V"
  local mark=
  ((RUN_DISTURBED)) && mark=" DISTURBED (other load ${AX_OTHER_S} CPU-s)"
  printf '[%d/%d] %-10s %-17s %7.2f s %s%s\n' "$r" "$RUNS" "$bn" "$n" "$secs" "$AX_ETA_LINE" "$mark" >&2
}

echo "compare_micro: ${#bins[@]} programs x ${#names[@]} allocators x $RUNS runs," \
  "about $(ax_fmt_min $((EST_ROUND * RUNS))) (estimate: ${AX_EST_SOURCE:-none}$EST_NOTE)" >&2
ax_eta_start $((EST_ROUND * RUNS))
for ((r = 1; r <= RUNS; r++)); do
  for j in "${!plan_bin[@]}"; do
    run_bm "$j" "$r"
    if ((RUN_DISTURBED)); then
      NDIST=$((NDIST + 1))
      if ((AX_RETRY > 0 && NRETRY * 5 < RUNS * ${#plan_bin[@]})); then
        NRETRY=$((NRETRY + 1))
        run_bm "$j" "$r" 2
      fi
    fi
  done
done
echo "compare_micro: $NDIST disturbed runs ($NRETRY repeated)" >&2

python3 "$HERE/report.py" micro "$RUNS_TSV" "$RAW" "$OUT"
sed -i "s/^bm\t/$EST_KIND\t/" "$OUT/estimate_micro.tsv"
echo "compare_micro: $OUT/micro.md, $OUT/micro.json, $OUT/micro_threads.png" >&2
