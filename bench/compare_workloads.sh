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
#                 all      = default plus every peer installed on this machine, plus
#                            the AX_EXTRA_PEERS
#   AX_EXTRA_PEERS  space-separated "name=/path/to/lib.so" of allocators Debian does not
#               package (snmalloc, mimalloc 3, rpmalloc built elsewhere), added by "all"
#                 jemalloc | tcmalloc | mimalloc | tbbmalloc | axmalloc-static
#               A path may carry environment settings after it, each after an @:
#               "axthp=build/libaxmalloc.so@AXMALLOC_THP=always" runs that library so.
#               Default: "default". The first allocator is the reference: its
#               checksums are the expected ones and ratios are reference/other.
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
#   RESULTS_DIR results folder (default: BUILD_DIR/results): workloads.md (the table),
#               workloads.json (per workload and allocator: every run time, median, peak
#               RSS, median minor page faults, time ratios to glibc and to axmalloc), times.dat and rss.dat (the
#               medians as columns), and the PNG plots bench/plot.sh makes from them
#               (needs gnuplot; skipped with a note without it)
#
# Runs are interleaved (for run: for workload: for allocator) so machine noise hits all
# allocators alike. Progress goes to stderr; the table goes to stdout and to
# BUILD_DIR/workloads.md. Exit status: 0 if every run succeeded with the reference
# checksum, 1 if any run crashed, timed out or printed a different checksum, 2 on usage
# errors (missing build, unknown allocator).
set -uo pipefail
export LC_ALL=C

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

# ---- running -------------------------------------------------------------------------
declare -A TIMES=() RSS=() FLT=() SUM=() FAILED=()
NFAIL=0

# run_one WORKLOAD ALLOCATOR RUN: one timed run; records time, RSS, checksum or failure.
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
  local t0=$EPOCHREALTIME rc
  if [[ -n $TIME_BIN ]]; then
    "$TIME_BIN" -f '%M %R' -o "$tf" timeout -k 5 "$WL_TIMEOUT" "${cmd[@]}" >"$out" 2>"$err" </dev/null
  else
    timeout -k 5 "$WL_TIMEOUT" "${cmd[@]}" >"$out" 2>"$err" </dev/null
  fi
  rc=$?
  local t1=$EPOCHREALTIME
  local us=$(( 10#${t1/./} - 10#${t0/./} ))
  local secs; secs=$(printf '%d.%06d' $((us / 1000000)) $((us % 1000000)))
  local rss_kb flt; read -r rss_kb flt < <(tail -n 1 "$tf" 2>/dev/null)
  [[ $rss_kb =~ ^[0-9]+$ ]] || rss_kb=
  [[ $flt =~ ^[0-9]+$ ]] || flt=
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
  TIMES[$key]+="$secs "
  [[ -n $rss_kb ]] && RSS[$key]+="$rss_kb "
  [[ -n $flt ]] && FLT[$key]+="$flt "
  printf '[%d/%d] %-16s %-16s %8.3f s %8s  %s\n' "$run" "$RUNS" "$wl" "$a" "$secs" \
    "${rss_kb:+$((rss_kb / 1024)) MiB}" "$sum" >&2
}

echo "compare_workloads: ${#WLS[@]} workloads x ${#ALLOC_NAMES[@]} allocators x $RUNS runs" >&2
for a in "${ALLOC_NAMES[@]}"; do
  echo "  $a: ${ALLOC_PATH[$a]:-(no preload)}${ALLOC_ENV[$a]:+ with ${ALLOC_ENV[$a]//@/ }}" >&2
done
for ((run = 1; run <= RUNS; run++)); do
  for wl in "${WLS[@]}"; do
    for a in "${ALLOC_NAMES[@]}"; do
      [[ -v "FAILED[$wl|$a]" ]] && continue
      # The reference must have produced the expected checksum before others are judged.
      if [[ $a != "$REF" && ! -v SUM[$wl] ]]; then continue; fi
      run_one "$wl" "$a" "$run"
    done
  done
done

# ---- report --------------------------------------------------------------------------
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {
  if (NR == 0) exit; if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2] + v[NR/2+1]) / 2 }'; }
maxof() { tr ' ' '\n' | grep . | sort -g | tail -n 1; }

table() {
  local a wl hdr="| workload |" sep="|---|"
  for a in "${ALLOC_NAMES[@]}"; do hdr+=" $a median s |"; sep+="---:|"; done
  for a in "${ALLOC_NAMES[@]:1}"; do hdr+=" ratio $REF/$a |"; sep+="---:|"; done
  for a in "${ALLOC_NAMES[@]}"; do hdr+=" $a peak RSS MiB |"; sep+="---:|"; done
  for a in "${ALLOC_NAMES[@]}"; do hdr+=" $a minor faults |"; sep+="---:|"; done
  echo "$hdr"; echo "$sep"
  declare -A MED=() LOGSUM=() NLOG=()
  for wl in "${WLS[@]}"; do
    local row="| $wl |"
    for a in "${ALLOC_NAMES[@]}"; do
      if [[ -v "FAILED[$wl|$a]" ]]; then MED[$a]=; row+=" FAIL |"; continue; fi
      MED[$a]=$(median <<<"${TIMES[$wl|$a]:-}")
      row+=" $(awk -v m="${MED[$a]}" 'BEGIN { if (m == "") print "-"; else printf "%.3f", m }') |"
    done
    for a in "${ALLOC_NAMES[@]:1}"; do
      if [[ -n ${MED[$REF]} && -n ${MED[$a]} ]]; then
        local r; r=$(awk -v x="${MED[$REF]}" -v y="${MED[$a]}" 'BEGIN { printf "%.3f", x / y }')
        row+=" $r |"
        LOGSUM[$a]=$(awk -v s="${LOGSUM[$a]:-0}" -v r="$r" 'BEGIN { printf "%.9f", s + log(r) }')
        NLOG[$a]=$(( ${NLOG[$a]:-0} + 1 ))
      else
        row+=" - |"
      fi
    done
    for a in "${ALLOC_NAMES[@]}"; do
      local m; m=$(maxof <<<"${RSS[$wl|$a]:-}")
      row+=" $(awk -v k="$m" 'BEGIN { if (k == "") print "-"; else printf "%.1f", k / 1024 }') |"
    done
    for a in "${ALLOC_NAMES[@]}"; do
      local f; f=$(median <<<"${FLT[$wl|$a]:-}")
      row+=" $(awk -v k="$f" 'BEGIN { if (k == "") print "-"; else printf "%.0f", k }') |"
    done
    echo "$row"
  done
  if (( ${#ALLOC_NAMES[@]} > 1 )); then
    local row="| **geomean** |"
    for a in "${ALLOC_NAMES[@]}"; do row+=" |"; done
    for a in "${ALLOC_NAMES[@]:1}"; do
      if (( ${NLOG[$a]:-0} > 0 )); then
        row+=" **$(awk -v s="${LOGSUM[$a]}" -v n="${NLOG[$a]}" 'BEGIN { printf "%.3f", exp(s / n) }')** |"
      else row+=" - |"; fi
    done
    for a in "${ALLOC_NAMES[@]}"; do row+=" | |"; done
    echo "$row"
    echo
    for a in "${ALLOC_NAMES[@]:1}"; do
      (( ${NLOG[$a]:-0} > 0 )) || continue
      awk -v s="${LOGSUM[$a]}" -v n="${NLOG[$a]}" -v a="$a" -v r="$REF" 'BEGIN {
        printf "Geometric mean of %s/%s time ratios over %d workloads: %.3f (>1 means %s faster)\n",
               r, a, n, exp(s / n), a }'
    done
  fi
}

{
  echo "## Workloads: $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -m), $(nproc) CPUs, $RUNS runs each"
  echo
  table
  if (( NFAIL > 0 )); then
    echo
    echo "**FAILURES ($NFAIL):**"
    for k in "${!FAILED[@]}"; do echo "- ${k%%|*} under ${k#*|}: ${FAILED[$k]}"; done | sort
  fi
} | tee "$BUILD_DIR/workloads.md"

# ---- results folder: markdown, JSON, .dat columns, plots ---------------------------------
jstr() { local s=${1//\\/\\\\}; s=${s//\"/\\\"}; printf '"%s"' "$s"; }
jnum() { [[ -n $1 ]] && printf '%s' "$1" || printf 'null'; }
ratio() { [[ -n $1 && -n $2 ]] && awk -v x="$1" -v y="$2" 'BEGIN { printf "%.4f", x / y }'; }
write_results() {
  mkdir -p "$RESULTS_DIR" || return 1
  cp "$BUILD_DIR/workloads.md" "$RESULTS_DIR/workloads.md"
  declare -A MEDS=() PEAK=() FLTS=()
  local wl a
  for wl in "${WLS[@]}"; do
    for a in "${ALLOC_NAMES[@]}"; do
      MEDS[$wl|$a]=; PEAK[$wl|$a]=; FLTS[$wl|$a]=
      [[ -v "FAILED[$wl|$a]" ]] && continue
      MEDS[$wl|$a]=$(median <<<"${TIMES[$wl|$a]:-}")
      PEAK[$wl|$a]=$(maxof <<<"${RSS[$wl|$a]:-}")
      FLTS[$wl|$a]=$(median <<<"${FLT[$wl|$a]:-}")
    done
  done
  {
    echo "{"
    echo "  \"date\": $(jstr "$(date -u '+%Y-%m-%dT%H:%M:%SZ')"),"
    echo "  \"machine\": $(jstr "$(uname -m)"), \"cpus\": $(nproc), \"runs\": $RUNS,"
    echo "  \"reference\": $(jstr "$REF"),"
    echo "  \"notes\": \"times in seconds (wall clock), peak RSS in KiB (max over runs); time_ratio_to_X = median / median of X (> 1 means slower than X); null = not measured or failed\","
    echo "  \"allocators\": ["
    local i=0 sep
    for a in "${ALLOC_NAMES[@]}"; do
      sep=,; (( ++i == ${#ALLOC_NAMES[@]} )) && sep=
      echo "    {\"name\": $(jstr "$a"), \"preload\": $(jstr "${ALLOC_PATH[$a]}"), \"env\": $(jstr "${ALLOC_ENV[$a]//@/ }")}$sep"
    done
    echo "  ],"
    echo "  \"workloads\": {"
    local j=0 wsep
    for wl in "${WLS[@]}"; do
      wsep=,; (( ++j == ${#WLS[@]} )) && wsep=
      echo "    $(jstr "$wl"): {"
      echo "      \"checksum\": $(jstr "${SUM[$wl]:-}"),"
      echo "      \"allocators\": {"
      i=0
      for a in "${ALLOC_NAMES[@]}"; do
        sep=,; (( ++i == ${#ALLOC_NAMES[@]} )) && sep=
        local times; times=$(tr ' ' '\n' <<<"${TIMES[$wl|$a]:-}" | grep . | paste -sd, | sed 's/,/, /g')
        local rg="" rx="" fail=null
        [[ -v "MEDS[$wl|glibc]" ]] && rg=$(ratio "${MEDS[$wl|$a]}" "${MEDS[$wl|glibc]}")
        [[ -v "MEDS[$wl|axmalloc]" ]] && rx=$(ratio "${MEDS[$wl|$a]}" "${MEDS[$wl|axmalloc]}")
        [[ -v "FAILED[$wl|$a]" ]] && fail=$(jstr "${FAILED[$wl|$a]}")
        echo "        $(jstr "$a"): {\"times_s\": [$times], \"median_s\": $(jnum "${MEDS[$wl|$a]}"), \"peak_rss_kib\": $(jnum "${PEAK[$wl|$a]}"), \"minor_faults_median\": $(jnum "${FLTS[$wl|$a]}"), \"time_ratio_to_glibc\": $(jnum "$rg"), \"time_ratio_to_axmalloc\": $(jnum "$rx"), \"failed\": $fail}$sep"
      done
      echo "      }"
      echo "    }$wsep"
    done
    echo "  }"
    echo "}"
  } >"$RESULTS_DIR/workloads.json"
  # Columns for gnuplot: workload, then one column per allocator (NaN = missing).
  local f
  for f in times rss; do
    {
      printf 'workload'; printf ' %s' "${ALLOC_NAMES[@]}"; echo
      for wl in "${WLS[@]}"; do
        printf '%s' "$wl"
        for a in "${ALLOC_NAMES[@]}"; do
          if [[ $f = times ]]; then printf ' %s' "${MEDS[$wl|$a]:-NaN}"
          elif [[ -n ${PEAK[$wl|$a]} ]]; then awk -v k="${PEAK[$wl|$a]}" 'BEGIN { printf " %.1f", k / 1024 }'
          else printf ' NaN'; fi
        done
        echo
      done
    } >"$RESULTS_DIR/$f.dat"
  done
  if command -v gnuplot >/dev/null; then
    bash "$(dirname "${BASH_SOURCE[0]}")/plot.sh" "$RESULTS_DIR" >&2 ||
      echo "compare_workloads: plotting failed (bench/plot.sh $RESULTS_DIR)" >&2
  else
    echo "compare_workloads: gnuplot not found (apt-get install gnuplot-nox): no plots" >&2
  fi
  echo "compare_workloads: results in $RESULTS_DIR: workloads.md workloads.json times.dat rss.dat $(cd "$RESULTS_DIR" && ls *.png 2>/dev/null | tr '\n' ' ')" >&2
}
write_results || echo "compare_workloads: could not write the results folder $RESULTS_DIR" >&2

if (( NFAIL > 0 )); then
  echo "compare_workloads: FAILED: $NFAIL run(s) crashed, timed out or gave a wrong checksum (see above)" >&2
  exit 1
fi
echo "compare_workloads: all checksums match $REF; table written to $BUILD_DIR/workloads.md" >&2
