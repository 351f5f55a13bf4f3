#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# compare_workloads.sh [BUILD_DIR] [RUNS] -- time the bench/workloads programs under
# glibc and axmalloc (and optionally peer allocators), check that every run prints the
# same checksum as the reference allocator, and print a markdown table of medians.
#
#   BUILD_DIR  CMake build directory (default: build); workloads are taken from
#              BUILD_DIR/bench/workloads, axmalloc from BUILD_DIR/libaxmalloc.so
#   RUNS       runs per workload and allocator (default: 5)
#
# Environment:
#   ALLOCATORS  space-separated list of allocators, each "name=preload-path" (an empty
#               path means no preload, the path "static" means run <workload>_static,
#               which has axmalloc linked in), or one of the words
#                 default  = "glibc= axmalloc=BUILD_DIR/libaxmalloc.so"
#                 all      = default plus every Debian-packaged peer installed here, plus
#                            the AX_EXTRA_PEERS
#                 jemalloc | tcmalloc | mimalloc | tbbmalloc | axmalloc-static
#               A path may carry environment settings after it, each after an @:
#               "axthp=build/libaxmalloc.so@AXMALLOC_THP=always" runs that library so.
#               Default: "default". The first allocator is the reference for checksums
#               (its are the expected ones); the report's ratios are to axmalloc.
#   AX_EXTRA_PEERS  space-separated "name=/path/to/lib.so" of allocators Debian does not
#               package, added by "all": bench/peers.sh builds snmalloc, mimalloc 3 and
#               rpmalloc from their release tags and prints this line
#   WORKLOADS   space-separated workloads to run (default: "all"), each one of
#                 all    every wl_* binary of BUILD_DIR/bench/workloads, default arguments
#                 NAME[:ARGS][@cpus=LIST]
#               ARGS are the program's arguments separated by commas,
#               "wl_larson:50000,100,2,20000,16,1024"; @cpus=LIST confines the process to
#               those CPUs (taskset -c LIST, a list as taskset takes it: 0 or 0,2 or 0-3),
#               "wl_threads@cpus=0" runs wl_threads on one CPU, every allocator alike.
#               The table names each as written: "all wl_threads@cpus=0" adds that row to
#               the default ones.
#   WL_TIMEOUT  seconds before one run is killed and counted as failed (default: 120)
#   AX_COMPACT  1: compact the kernel's memory before every run (root: /proc/sys/vm/
#               compact_memory), so that no run pays for the fragmentation the one before it
#               left: a huge page fault (transparent huge pages) compacts when no free huge
#               page is left, and a run after 1 GiB freed in 4 KiB pages took 9x as long
#   RESULTS_DIR results folder (default: BUILD_DIR/results): workloads_runs.tsv (every run:
#               time, peak RSS, faults, CPU time, the other load, disturbed or not, status),
#               and what bench/report.py makes of it: workloads.md (the tables: medians
#               [min-max], ratios to axmalloc, what is within the noise), workloads.json,
#               time.png and rss.png (needs gnuplot), estimate_workloads.tsv
#   AX_BUSY     other load (CPUs, averaged over a run) above which a run is disturbed
#               (default 0.25; bench/runlib.sh)
#   AX_RETRY    1 (default): a disturbed run is repeated at once, both kept (0: never)
#   AX_ESTIMATE_ONLY  1: print the estimated milliseconds of the runs and exit
#
# Runs are interleaved (for run: for workload: for allocator) so machine noise hits all
# allocators alike. Progress, with the time left, goes to stderr; the tables go to stdout.
# Exit status: 0 if every run succeeded with the reference checksum, 1 if any run crashed,
# timed out or printed a different checksum, 2 on usage errors (missing build, unknown
# allocator).
set -uo pipefail
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/runlib.sh
source "$HERE/runlib.sh"

usage() { awk 'NR > 1 { if (!/^#/) exit; sub(/^# ?/, ""); print }' "$0"; }
die() { echo "compare_workloads: error: $*" >&2; exit 2; }

case "${1:-}" in -h|--help) usage; exit 0;; esac
BUILD_DIR=${1:-build}
RUNS=${2:-5}
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer, got '$RUNS'"
[[ -d $BUILD_DIR ]] || die "build directory '$BUILD_DIR' not found (cmake -S . -B build && cmake --build build -j2)"
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
WL_DIR=$BUILD_DIR/bench/workloads
WL_TIMEOUT=${WL_TIMEOUT:-120}
RESULTS_DIR=${RESULTS_DIR:-$BUILD_DIR/results}
(( BASH_VERSINFO[0] >= 5 )) || die "needs bash >= 5 (EPOCHREALTIME)"

# ---- allocators ----------------------------------------------------------------------
multiarch=$(gcc -print-multiarch 2>/dev/null || true)
[[ -n $multiarch ]] || multiarch="$(uname -m)-linux-gnu"
LIBDIR=/usr/lib/$multiarch
declare -A PEER=(
  [jemalloc]=$LIBDIR/libjemalloc.so.2
  [tcmalloc]=$LIBDIR/libtcmalloc_minimal.so.4
  [mimalloc]=$LIBDIR/libmimalloc.so.2
  [tbbmalloc]=$LIBDIR/libtbbmalloc_proxy.so.2
)
PEER_ORDER=(jemalloc tcmalloc mimalloc tbbmalloc)

ALLOC_NAMES=()
declare -A ALLOC_PATH=() ALLOC_ENV=()
add_alloc() { # name path[@VAR=value...]
  [[ -v ALLOC_PATH[$1] ]] && return
  ALLOC_NAMES+=("$1")
  ALLOC_PATH[$1]=${2%%@*}
  ALLOC_ENV[$1]=
  [[ $2 != *@* ]] || ALLOC_ENV[$1]=${2#*@}
}
for tok in ${ALLOCATORS:-default}; do
  case $tok in
    default) add_alloc glibc ""; add_alloc axmalloc "$BUILD_DIR/libaxmalloc.so" ;;
    all)
      add_alloc glibc ""; add_alloc axmalloc "$BUILD_DIR/libaxmalloc.so"
      for p in "${PEER_ORDER[@]}"; do
        if [[ -e ${PEER[$p]} ]]; then add_alloc "$p" "${PEER[$p]}"
        else echo "compare_workloads: $p not installed (${PEER[$p]}), skipped" >&2; fi
      done
      for x in ${AX_EXTRA_PEERS:-}; do add_alloc "${x%%=*}" "${x#*=}"; done ;;
    glibc) add_alloc glibc "" ;;
    axmalloc) add_alloc axmalloc "$BUILD_DIR/libaxmalloc.so" ;;
    axmalloc-static) add_alloc axmalloc-static static ;;
    *=*) add_alloc "${tok%%=*}" "${tok#*=}" ;;
    *)
      [[ -v PEER[$tok] ]] || die "unknown allocator '$tok' (use name=/path/to/lib.so)"
      add_alloc "$tok" "${PEER[$tok]}" ;;
  esac
done
for a in "${ALLOC_NAMES[@]}"; do
  p=${ALLOC_PATH[$a]}
  [[ -z $p || $p == static ]] && continue
  if [[ ! -e $p ]]; then
    [[ $a == axmalloc ]] && die "'$p' not found: build axmalloc first (cmake --build $BUILD_DIR -j2)"
    die "allocator $a: '$p' not found"
  fi
  ALLOC_PATH[$a]=$(realpath "$p")
done
REF=${ALLOC_NAMES[0]}

# ---- workloads -----------------------------------------------------------------------
# wl_parse NAME[:ARGS][@cpus=LIST]: sets WL_PROG (the program's name), WL_ARGS (its
# arguments) and WL_PIN (the command confining it, empty for none); dies on a bad option.
wl_parse() {
  local spec=${1%%@*} opt=
  [[ $1 != *@* ]] || opt=${1#*@}
  WL_PROG=${spec%%:*} WL_ARGS=() WL_PIN=()
  [[ $spec != *:* ]] || IFS=, read -r -a WL_ARGS <<<"${spec#*:}"
  if [[ -n $opt ]]; then
    [[ $opt =~ ^cpus=[0-9][0-9,-]*$ ]] ||
      die "workload '$1': unknown option '@$opt' (the one option is @cpus=LIST, e.g. @cpus=0)"
    WL_PIN=(taskset -c "${opt#cpus=}")
  fi
}
WLS=()
add_wl() { local w; for w in "${WLS[@]}"; do [[ $w == "$1" ]] && return; done; WLS+=("$1"); }
for w in ${WORKLOADS:-all}; do
  if [[ $w == all ]]; then
    for f in "$WL_DIR"/wl_*; do
      [[ -f $f && -x $f && $f != *_static ]] || continue
      add_wl "$(basename "$f")"
    done
    continue
  fi
  wl_parse "$w"
  [[ -x $WL_DIR/$WL_PROG ]] || die "workload '$WL_PROG' not found in $WL_DIR"
  if (( ${#WL_PIN[@]} )); then
    command -v taskset >/dev/null || die "workload '$w' needs taskset (apt-get install util-linux)"
  fi
  add_wl "$w"
done
(( ${#WLS[@]} )) || die "no workloads in $WL_DIR (build the project first)"
for a in "${ALLOC_NAMES[@]}"; do
  [[ ${ALLOC_PATH[$a]} == static ]] || continue
  for w in "${WLS[@]}"; do
    wl_parse "$w"
    [[ -x $WL_DIR/${WL_PROG}_static ]] || die "$WL_DIR/${WL_PROG}_static not found"
  done
done

TIME_BIN=/usr/bin/time
if [[ ! -x $TIME_BIN ]]; then
  echo "compare_workloads: $TIME_BIN not found (apt-get install time): peak RSS not measured" >&2
  TIME_BIN=
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# ---- the estimate --------------------------------------------------------------------------
ax_est_load "$HERE/estimate.tsv" "$RESULTS_DIR/estimate.tsv"
EST_ROUND=0
for wl in "${WLS[@]}"; do
  for a in "${ALLOC_NAMES[@]}"; do ax_est wl "$wl" "$a"; EST_ROUND=$((EST_ROUND + AX_EST_V)); done
done
EST_NOTE=$(ax_est_note $((${#WLS[@]} * ${#ALLOC_NAMES[@]})))
if [[ ${AX_ESTIMATE_ONLY:-0} == 1 ]]; then # scripts/bench.sh asks for the plan's estimate
  echo "$((EST_ROUND * RUNS)) $AX_EST_MISS"
  exit 0
fi

# ---- running -------------------------------------------------------------------------
declare -A SUM=() FAILED=()
NFAIL=0 NDIST=0 NRETRY=0
# AX_RETRY (1): a disturbed run is run once more at once, both kept (the report prefers the
# quiet one); at most a fifth of the runs are repeated, so a machine busy throughout costs
# 20% more time, not twice as much.
AX_RETRY=${AX_RETRY:-1}
RUNS_TSV=$RESULTS_DIR/workloads_runs.tsv
mkdir -p "$RESULTS_DIR"
printf 'round\tname\tallocator\tseconds\trss_kib\tminor_faults\tcpu_s\tother_cpu_s\trunning_before\trunning_after\tdisturbed\tstatus\n' >"$RUNS_TSV"

# run_one WORKLOAD ALLOCATOR RUN: one timed run; records time, RSS, checksum or failure, and
# the other load; sets RUN_DISTURBED.
run_one() {
  local wl=$1 a=$2 run=$3 key="$1|$2" path=${ALLOC_PATH[$2]}
  local out=$TMP/out err=$TMP/err tf=$TMP/time
  local -a cmd envs=()
  wl_parse "$wl"
  local bin=$WL_DIR/$WL_PROG
  [[ -z ${ALLOC_ENV[$2]} ]] || IFS=@ read -r -a envs <<<"${ALLOC_ENV[$2]}"
  # taskset first: it sets the affinity and execs env, which execs the program (one process).
  if [[ $path == static ]]; then cmd=("${WL_PIN[@]}" env -u LD_PRELOAD "${envs[@]}" "${bin}_static" "${WL_ARGS[@]}")
  elif [[ -z $path ]]; then cmd=("${WL_PIN[@]}" env -u LD_PRELOAD "${envs[@]}" "$bin" "${WL_ARGS[@]}")
  else cmd=("${WL_PIN[@]}" env "LD_PRELOAD=$path" "${envs[@]}" "$bin" "${WL_ARGS[@]}"); fi
  : >"$tf"
  [[ ${AX_COMPACT:-0} != 1 ]] || echo 1 >/proc/sys/vm/compact_memory 2>/dev/null ||
    { echo "compare_workloads: AX_COMPACT=1 needs root (/proc/sys/vm/compact_memory)" >&2; AX_COMPACT=0; }
  ax_load_sample
  local busy0=$AX_BUSY_MS run0=$AX_RUNNING t0=$EPOCHREALTIME rc
  if [[ -n $TIME_BIN ]]; then
    "$TIME_BIN" -f '%M %R %U %S' -o "$tf" timeout -k 5 "$WL_TIMEOUT" "${cmd[@]}" >"$out" 2>"$err" </dev/null
  else
    timeout -k 5 "$WL_TIMEOUT" "${cmd[@]}" >"$out" 2>"$err" </dev/null
  fi
  rc=$?
  local t1=$EPOCHREALTIME
  ax_load_sample
  local us=$(( 10#${t1/./} - 10#${t0/./} ))
  local secs; secs=$(printf '%d.%06d' $((us / 1000000)) $((us % 1000000)))
  local rss_kb flt ut st cpu=; read -r rss_kb flt ut st < <(tail -n 1 "$tf" 2>/dev/null)
  [[ $rss_kb =~ ^[0-9]+$ ]] || rss_kb=
  [[ $flt =~ ^[0-9]+$ ]] || flt=
  [[ $ut =~ ^[0-9.]+$ && $st =~ ^[0-9.]+$ ]] && cpu=$(awk -v u="$ut" -v s="$st" 'BEGIN { printf "%.2f", u + s }')
  ax_other_load "$busy0" "$AX_BUSY_MS" "$cpu" "$secs"
  RUN_DISTURBED=$AX_DISTURBED
  local sum="" problem=""
  if (( rc == 124 )); then
    problem="timed out after ${WL_TIMEOUT}s"
  elif (( rc > 128 )); then
    problem="killed by SIG$(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128)))"
    (( rc == 137 )) && problem+=" (timeout ${WL_TIMEOUT}s + 5s, or out of memory)"
  elif (( rc != 0 )); then
    problem="exit status $rc"
  elif grep -q 'cannot be preloaded' "$err"; then
    problem="LD_PRELOAD=$path was not loaded"
  else
    sum=$(tail -n 1 "$out")
    if [[ ! $sum =~ ^checksum\ [0-9]+$ || $(wc -l <"$out") -ne 1 ]]; then
      problem="stdout is not one 'checksum <n>' line"
    elif [[ -v SUM[$wl] && ${SUM[$wl]} != "$sum" ]]; then
      problem="CHECKSUM MISMATCH: '$sum', reference $REF gave '${SUM[$wl]}'"
    fi
  fi
  printf '%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n' "$run" "$wl" "$a" "$secs" "$rss_kb" \
    "$flt" "$cpu" "$AX_OTHER_S" "$run0" "$AX_RUNNING" "$RUN_DISTURBED" "${problem:-ok}" >>"$RUNS_TSV"
  if [[ -n $problem ]]; then
    FAILED[$key]=$problem
    NFAIL=$((NFAIL + 1))
    {
      echo "!!! FAILED: $wl under $a (run $run): $problem"
      echo "!!! command: ${cmd[*]}"
      echo "--- stdout (tail):"; tail -n 5 "$out"
      echo "--- stderr (tail):"; tail -n 15 "$err"
      echo "---"
    } >&2
    return
  fi
  [[ -v SUM[$wl] ]] || SUM[$wl]=$sum
  ax_est wl "$wl" "$a"
  ax_eta_tick "$AX_EST_V"
  local mark=
  ((RUN_DISTURBED)) && mark=" DISTURBED (other load ${AX_OTHER_S} CPU-s)"
  printf '[%d/%d] %-22s %-16s %8.3f s %8s %s%s\n' "$run" "$RUNS" "$wl" "$a" "$secs" \
    "${rss_kb:+$((rss_kb / 1024)) MiB}" "$AX_ETA_LINE" "$mark" >&2
}

echo "compare_workloads: ${#WLS[@]} workloads x ${#ALLOC_NAMES[@]} allocators x $RUNS runs," \
  "about $(ax_fmt_min $((EST_ROUND * RUNS))) (estimate: ${AX_EST_SOURCE:-none}$EST_NOTE)" >&2
for a in "${ALLOC_NAMES[@]}"; do
  echo "  $a: ${ALLOC_PATH[$a]:-(no preload)}${ALLOC_ENV[$a]:+ with ${ALLOC_ENV[$a]//@/ }}" >&2
done
ax_eta_start $((EST_ROUND * RUNS))
for ((run = 1; run <= RUNS; run++)); do
  for wl in "${WLS[@]}"; do
    for a in "${ALLOC_NAMES[@]}"; do
      [[ -v "FAILED[$wl|$a]" ]] && continue
      # The reference must have produced the expected checksum before others are judged.
      if [[ $a != "$REF" && ! -v SUM[$wl] ]]; then continue; fi
      run_one "$wl" "$a" "$run"
      if ((RUN_DISTURBED)); then
        NDIST=$((NDIST + 1))
        if ((AX_RETRY > 0 && NRETRY * 5 < RUNS * ${#WLS[@]} * ${#ALLOC_NAMES[@]})) &&
          [[ ! -v "FAILED[$wl|$a]" ]]; then
          NRETRY=$((NRETRY + 1))
          run_one "$wl" "$a" "$run"
        fi
      fi
    done
  done
done
echo "compare_workloads: $NDIST disturbed runs ($NRETRY repeated)" >&2

# ---- report: bench/report.py ------------------------------------------------------------
mkdir -p "$RESULTS_DIR"
python3 "$HERE/report.py" workloads "$RUNS_TSV" "$RESULTS_DIR" ||
  { echo "compare_workloads: bench/report.py failed on $RUNS_TSV" >&2; exit 1; }
cat "$RESULTS_DIR/workloads.md"
echo "compare_workloads: results in $RESULTS_DIR: workloads.md workloads.json workloads_runs.tsv $(for f in time.png rss.png; do [[ ! -e $RESULTS_DIR/$f ]] || printf '%s ' "$f"; done)" >&2

if (( NFAIL > 0 )); then
  echo "compare_workloads: FAILED: $NFAIL run(s) crashed, timed out or gave a wrong checksum (see above)" >&2
  exit 1
fi
echo "compare_workloads: all checksums match $REF" >&2
