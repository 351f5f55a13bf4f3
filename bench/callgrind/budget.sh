#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Instruction budgets: instruction counts per allocator operation (hot malloc+free pairs,
# calloc of recycled memory, realloc growth steps, remote frees), deterministic. x86-64 counts
# come from callgrind; AArch64 counts (--qemu CPU) from qemu-aarch64 with a TCG plugin that
# counts executed guest instructions (bench/qemu/insn_count.c).
#
#   bash bench/callgrind/budget.sh [BUILD_DIR]             table: axmalloc and every installed peer
#   bash bench/callgrind/budget.sh --write [BUILD_DIR]     axmalloc only; rewrite the budget file
#   bash bench/callgrind/budget.sh --counts [BUILD_DIR]    axmalloc only; lines "name|label|count"
#   bash bench/callgrind/budget.sh --check LIB [BUDGET]    axmalloc (LIB) only; exit 1 when an
#                                                          operation exceeds BUDGET (default:
#                                                          the budget file) by more than the
#                                                          tolerance
#   --qemu CPU first: count an AArch64 build (BUILD_DIR or LIB's directory is a cross build,
#   toolchain/aarch64-linux-gnu.cmake) under qemu-aarch64 -cpu CPU. Its budget file is
#   bench/qemu/budget.<atomics>-<CPU>.txt, <atomics> the build's AX_AARCH64_ATOMICS (runtime,
#   lse, llsc); the table has glibc and axmalloc only (no AArch64 peers here).
#   The x86-64 budget file is bench/callgrind/budget.txt.
#
# Every operation is counted as (Ir(run B) - Ir(run A)) / units, where runs A and B differ only
# in the number of operations (see ops.c), so start-up, thread creation and exit cancel out.
# The loop's own few instructions (call, volatile store, counter) remain in every column.
#
# Environment: AX_BUDGET_N (operations per run A, default 20000; run B does twice as many),
# AX_BUDGET_TOLERANCE (percent, default 5 for callgrind, 10 under qemu), CC (default cc: the
# x86 ops program, and the qemu plugin), AX_CROSS_CC (default aarch64-linux-gnu-gcc),
# AX_QEMU (default qemu-aarch64), AX_QEMU_SYSROOT (default /usr/aarch64-linux-gnu),
# AX_BUDGET_JOBS (parallel runs, default nproc), AX_EXTRA_PEERS ("name=/path/lib.so ...": more
# columns in the table, allocators Debian does not package).
set -euo pipefail
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
N=${AX_BUDGET_N:-20000}
JOBS=${AX_BUDGET_JOBS:-$(nproc)}
QCPU=
if [[ ${1:-} = --qemu ]]; then
  QCPU=${2:?--qemu needs a CPU model (max, cortex-a57, ...)}
  shift 2
fi
TOL=${AX_BUDGET_TOLERANCE:-$([[ -n $QCPU ]] && echo 10 || echo 5)}
MODE=table BUDGET= BUILD=build LIB=
case "${1:-}" in
  --write) MODE=write; BUILD=${2:-build} ;;
  --counts) MODE=counts; BUILD=${2:-build} ;;
  --check) MODE=check; LIB=${2:?--check needs the path of libaxmalloc.so}; BUDGET=${3:-} ;;
  -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) BUILD=${1:-build} ;;
esac
if [[ -z $LIB ]]; then
  [[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD
  LIB=$BUILD/libaxmalloc.so
fi
[[ -e $LIB ]] || { echo "budget: $LIB not found (build axmalloc first)" >&2; exit 2; }
LIB=$(realpath "$LIB")

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
BIN=$TMP/ops
if [[ -z $QCPU ]]; then
  command -v valgrind >/dev/null || { echo "budget: valgrind not found (apt-get install valgrind)" >&2; exit 2; }
  ${CC:-cc} -O2 -fno-builtin -pthread -o "$BIN" "$HERE/ops.c" -lstdc++
  OUT_FILE=$HERE/budget.txt
  COUNTER="callgrind ($(valgrind --version))"
else
  QEMU=${AX_QEMU:-qemu-aarch64} SYSROOT=${AX_QEMU_SYSROOT:-/usr/aarch64-linux-gnu}
  command -v "$QEMU" >/dev/null || { echo "budget: $QEMU not found (apt-get install qemu-user)" >&2; exit 2; }
  atomics=$(sed -n 's/^AX_AARCH64_ATOMICS:[A-Z]*=//p' "$(dirname "$LIB")/CMakeCache.txt" 2>/dev/null || true)
  [[ -n $atomics ]] || { echo "budget: $(dirname "$LIB") is not an AArch64 build (no AX_AARCH64_ATOMICS in its CMakeCache.txt)" >&2; exit 2; }
  OUT_FILE=$ROOT/bench/qemu/budget.$atomics-$QCPU.txt
  ${AX_CROSS_CC:-aarch64-linux-gnu-gcc} -O2 -fno-builtin -pthread -o "$BIN" "$HERE/ops.c" -lstdc++
  ${CC:-cc} -O2 -shared -fPIC -fvisibility=hidden -o "$TMP/insn_count.so" "$ROOT/bench/qemu/insn_count.c"
  COUNTER="$QEMU -cpu $QCPU ($($QEMU --version | head -n 1)), bench/qemu/insn_count.c"
fi
BUDGET=${BUDGET:-$OUT_FILE}
export QCPU QEMU SYSROOT

# Guarded sampling (on by default) is off in the runs unless AXMALLOC_GUARD is set: a sample
# costs about 2,700 instructions (the first in a process about 22,500 more: the pool, the fault
# handler, the unwinder's first lookups), and whether a run of 20,000 4 KiB operations takes one
# more than the other moves its row by 1 to 2. The rows hold the countdown that decides where
# samples fall (2 instructions a refill and a cache hit); the samples' own cost is measured
# apart (docs/design/09-modes-guard.md).
export AXMALLOC_GUARD=${AXMALLOC_GUARD:-0}

# count <lib or empty> <out file> <ops args...>: the instructions of one run of ops
count() {
  local lib=$1 out=$2; shift 2
  if [[ -z $QCPU ]]; then
    local log; log=$(LD_PRELOAD=$lib valgrind --tool=callgrind --callgrind-out-file=/dev/null \
                       "$BIN" "$@" 2>&1) || { echo "$log"; return 1; }
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' <<<"$log" >"$out"
  else
    local pre=(); [[ -z $lib ]] || pre=(-E "LD_PRELOAD=$lib")
    "$QEMU" -cpu "$QCPU" -L "$SYSROOT" -plugin "$TMP/insn_count.so,outfile=$out" "${pre[@]}" \
      "$BIN" "$@" 2>&1
  fi
}
export -f count

# ---- allocators ------------------------------------------------------------------------
declare -a NAMES=(axmalloc) LIBS=("$LIB")
NOTES=()
if [[ $MODE = table && -n $QCPU ]]; then
  NAMES=(glibc axmalloc) LIBS=("" "$LIB")
elif [[ $MODE = table ]]; then
  LIBDIR=/usr/lib/$(${CC:-cc} -dumpmachine)
  NAMES=(glibc axmalloc) LIBS=("" "$LIB")
  for peer in mimalloc=libmimalloc.so.2 jemalloc=libjemalloc.so.2 \
              tcmalloc=libtcmalloc_minimal.so.4 tbbmalloc=libtbbmalloc_proxy.so.2 ${AX_EXTRA_PEERS:-}; do
    name=${peer%%=*} so=${peer#*=}
    [[ $so = /* ]] || so=$LIBDIR/$so
    if [[ ! -e $so ]]; then NOTES+=("$name: not installed ($so), skipped"); continue; fi
    # A peer must load and work under valgrind: run the pair once and look for its symbols.
    out=$(LD_PRELOAD=$so valgrind --tool=callgrind --callgrind-out-file="$TMP/probe.out" \
            "$BIN" pair 10 64 2>&1) || { NOTES+=("$name: fails under valgrind, skipped: $(tail -n 1 <<<"$out")"); continue; }
    if ! callgrind_annotate --threshold=100 "$TMP/probe.out" 2>/dev/null | grep -c "$(basename "$so")" >/dev/null; then
      NOTES+=("$name: its malloc is not called under valgrind ($so), skipped"); continue
    fi
    NAMES+=("$name") LIBS+=("$so")
  done
fi

# ---- operations: name | label | args of run A | args of run B | units (B - A) ------------
N2=$((2 * N))
NC=$(( N / 20 > 0 ? N / 20 : 1 )) # 64 KiB callocs: ~65k instructions each, fewer suffice
OPS=(
  "pair_16|malloc+free 16 B (warm page)|pair $N 16|pair $N2 16|$N"
  "pair_64|malloc+free 64 B (warm page)|pair $N 64|pair $N2 64|$N"
  "pair_256|malloc+free 256 B (warm page)|pair $N 256|pair $N2 256|$N"
  "pair_1024|malloc+free 1024 B (warm page)|pair $N 1024|pair $N2 1024|$N"
  "empty_16|malloc+free 16 B (each free empties the page)|empty $N 16|empty $N2 16|$N"
  "empty_64|malloc+free 64 B (each free empties the page)|empty $N 64|empty $N2 64|$N"
  "empty_256|malloc+free 256 B (each free empties the page)|empty $N 256|empty $N2 256|$N"
  "empty_1024|malloc+free 1024 B (each free empties the page)|empty $N 1024|empty $N2 1024|$N"
  "pair_4096|malloc+free 4 KiB (warm page)|pair $N 4096|pair $N2 4096|$N"
  "pair_65536|malloc+free 64 KiB (warm page)|pair $N 65536|pair $N2 65536|$N"
  "random_4096|free + malloc 4 KiB at random among 1,024 live|random $N 4096|random $N2 4096|$N"
  "random_65536|free + malloc 64 KiB at random among 1,024 live|random $N 65536|random $N2 65536|$N"
  "new_48|operator new+delete 48 B (warm page)|new $N 48|new $N2 48|$N"
  "sized_48|operator new+sized delete 48 B (warm page)|sized $N 48|sized $N2 48|$N"
  "calloc_256|calloc+free 256 B (recycled)|calloc $N 256|calloc $N2 256|$N"
  "calloc_65536|calloc+free 64 KiB (recycled)|calloc $NC 65536|calloc $((2 * NC)) 65536|$NC"
  "realloc_grow16|realloc +16 B, same class (976..1024 B)|grow16 $N 3|grow16 $N 6|$((3 * N))"
  "realloc_double|realloc doubling step (64 B..4 KiB)|double $N 0|double $N 6|$((6 * N))"
  "remote_free|remote free 64 B (freeing thread)|remote $N $N2|remote $N2 $N2|$N"
)

# Every valgrind run is one line of a job list, run JOBS at a time.
: >"$TMP/jobs"
for i in "${!NAMES[@]}"; do
  for op in "${OPS[@]}"; do
    IFS='|' read -r name _ a b _ <<<"$op"
    echo "$i $name A $a" >>"$TMP/jobs"
    echo "$i $name B $b" >>"$TMP/jobs"
  done
done
export BIN TMP
runjob() { # i name A|B args...
  local i=$1 name=$2 ab=$3; shift 3
  local lib; lib=$(sed -n "$((i + 1))p" "$TMP/libs")
  local out; out=$(count "$lib" "$TMP/ir.$i.$name.$ab" "$@") ||
    { echo "budget: ops $* failed under ${lib:-glibc}: $out" >&2; exit 1; }
}
export -f runjob
printf '%s\n' "${LIBS[@]}" >"$TMP/libs"
xargs -P "$JOBS" -L 1 bash -c 'runjob "$@"' _ <"$TMP/jobs" || { echo "budget: a valgrind run failed" >&2; exit 2; }

per_op() { # i name units
  local a b; a=$(cat "$TMP/ir.$1.$2.A") b=$(cat "$TMP/ir.$1.$2.B")
  awk -v a="$a" -v b="$b" -v u="$3" 'BEGIN { printf "%.1f", (b - a) / u }'
}

# ---- report ----------------------------------------------------------------------------
declare -A BUD=()
if [[ $MODE = check ]]; then
  [[ -r $BUDGET ]] || { echo "budget: budget file $BUDGET not found" >&2; exit 2; }
  while read -r k v _; do [[ -z $k || $k = \#* ]] || BUD[$k]=$v; done <"$BUDGET"
fi
if [[ $MODE = counts ]]; then
  for op in "${OPS[@]}"; do
    IFS='|' read -r name label _ _ units <<<"$op"
    echo "$name|$label|$(per_op 0 "$name" "$units")"
  done
  exit 0
fi
FAIL=0
if [[ $MODE = table ]]; then
  hdr="| operation |" sep="|---|"
  for n in "${NAMES[@]}"; do hdr+=" $n |"; sep+="---:|"; done
else
  hdr="| operation | name | axmalloc |" sep="|---|---|---:|"
  [[ $MODE = check ]] && { hdr+=" budget | limit (+$TOL%) | |"; sep+="---:|---:|---|"; }
fi
echo "Instructions per operation ($COUNTER: (Ir(run B) - Ir(run A)) / ops; $N ops per run A, $NC for 64 KiB calloc)"
echo
echo "$hdr"; echo "$sep"
: >"$TMP/budget.new"
for op in "${OPS[@]}"; do
  IFS='|' read -r name label _ _ units <<<"$op"
  if [[ $MODE = table ]]; then
    row="| $label |"
    for i in "${!NAMES[@]}"; do row+=" $(per_op "$i" "$name" "$units") |"; done
  else
    v=$(per_op 0 "$name" "$units")
    echo "$name $v" >>"$TMP/budget.new"
    row="| $label | $name | $v |"
    if [[ $MODE = check ]]; then
      if [[ ! -v BUD[$name] ]]; then
        row+=" - | - | NO BUDGET |"; FAIL=1
      else
        lim=$(awk -v b="${BUD[$name]}" -v t="$TOL" 'BEGIN { printf "%.1f", b * (1 + t / 100) }')
        if awk -v v="$v" -v l="$lim" 'BEGIN { exit !(v > l) }'; then
          row+=" ${BUD[$name]} | $lim | **OVER BUDGET** |"; FAIL=1
        else
          row+=" ${BUD[$name]} | $lim | ok |"
        fi
      fi
    fi
  fi
  echo "$row"
done
for note in "${NOTES[@]}"; do echo; echo "Note: $note"; done
if [[ $MODE = write ]]; then
  {
    echo "# Instruction budgets of axmalloc: instructions per operation counted by $COUNTER,"
    echo "# written by 'bash bench/callgrind/budget.sh ${QCPU:+--qemu $QCPU }--write' ($($([[ -n $QCPU ]] && echo "${AX_CROSS_CC:-aarch64-linux-gnu-gcc}" || echo "${CC:-cc}") --version | head -n 1))."
    echo "# $([[ -n $QCPU ]] && echo t_arm_budget || echo t_budget) fails when an operation exceeds its number here by more than ${TOL}%."
    cat "$TMP/budget.new"
  } >"$OUT_FILE"
  echo; echo "budget: wrote $OUT_FILE" >&2
fi
if [[ $MODE = check ]]; then
  if (( FAIL )); then echo; echo "budget: FAILED: an operation exceeds its budget ($BUDGET) by more than $TOL%"; exit 1; fi
  echo; echo "budget: every operation within $TOL% of its budget ($BUDGET)"
fi
