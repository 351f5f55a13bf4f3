#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Guarded sampling's odds (issue 43), with t_sampling_uaf (t_sampling_uaf.c):
#
#   1. counts: in one process, how many of many blocks were guarded, each size's class
#      counting down on its own while the sizes take turns (a class's countdown is
#      floor(X / class size) blocks, X exponential of mean AXMALLOC_GUARD: every block of the
#      class is guarded with probability p = 1 - exp(-class size / AXMALLOC_GUARD), the same
#      for each, as the gaps are geometric);
#   2. detection: R processes, each with one use after free (a read of one block, at a random
#      index, right after its free) among N allocations of one size: the fraction that dies of
#      SIGSEGV is that block's probability of being guarded, p (the pool never runs out: every
#      block is freed before the next one is taken). Every other process must run to its end.
#
# Each count must be within 5 standard deviations of the binomial's mean (a false failure in
# about 1 of 3.5 million runs of a check), and the detections expected are 25 or more. Two
# rates: 64 KiB (the refills' countdown, as at the default rate) and 1 KiB (below 64 KiB:
# malloc's slow path stays hooked and counts each malloc).
#
#   t_sampling_stat.sh PROG [EMULATOR]
#
# EMULATOR: how to run an aarch64 program ('|' separates its words), empty natively: fewer
# blocks and processes then (qemu-user starts one in 50-100 ms).
set -uo pipefail
prog=$1
IFS='|' read -r -a emu <<<"${2:-}"
unset AXMALLOC_GUARD AXMALLOC_GUARD_PLACE AXMALLOC_GUARD_SLOTS AXMALLOC_GUARD_HANDLER
unset AXMALLOC_CHECK AXMALLOC_PROF AXMALLOC_LEAKS AXMALLOC_MTE
scale=${T_SAMPLING_SCALE:-$([ ${#emu[@]} -gt 0 ] && echo 2 || echo 1)} # R divided by
fails=0

run() { "${emu[@]}" "$prog" "$@"; }

class_of() { AXMALLOC_GUARD=0 run class "$1"; }

# within COUNT TRIALS P WHAT: COUNT within 5 sigma of TRIALS * P (and TRIALS * P >= 25)
within() {
  local verdict
  verdict=$(awk -v k="$1" -v n="$2" -v p="$3" 'BEGIN {
    m = n * p; s = sqrt(n * p * (1 - p)); lo = m - 5 * s; hi = m + 5 * s
    printf "%s: %d of %d, expected %.1f (p %.5f), 5 sigma [%.1f, %.1f]",
           (k >= lo && k <= hi && m >= 25) ? "ok" : "FAIL", k, n, m, p, lo, hi }')
  echo "$4: $verdict"
  [[ $verdict == ok* ]] || fails=$((fails + 1))
}

p_of() { awk -v c="$1" -v r="$2" 'BEGIN { printf "%.8f", 1 - exp(-c / r) }'; }

# ---- 1. counts, the sizes in turn --------------------------------------------------------------
counts() { # RATE N SIZE...
  local rate=$1 n=$2
  shift 2
  local got i=0 c
  read -r -a got <<<"$(AXMALLOC_GUARD=$rate run mix "$n" "$@")"
  [ ${#got[@]} = $# ] || {
    echo "FAIL: t_sampling_uaf mix printed '${got[*]}'"
    fails=$((fails + 1))
    return
  }
  for s in "$@"; do
    c=$(class_of "$s")
    within "${got[$i]}" "$n" "$(p_of "$c" "$rate")" "counts, AXMALLOC_GUARD=$rate, $s bytes (class $c)"
    i=$((i + 1))
  done
}
counts 65536 $((100000 / scale)) 200 1000 100 3000 40 700
counts 1024 $((20000 / scale)) 200 100 40

# ---- 2. one use after free per process ----------------------------------------------------------
detect() { # RATE SIZE N R
  local rate=$1 size=$2 n=$3 r=$4 dead=0 other=0 st c
  for ((i = 0; i < r; i++)); do
    AXMALLOC_GUARD=$rate run uaf "$size" "$n" >/dev/null 2>&1
    st=$?
    if [ "$st" = 139 ]; then
      dead=$((dead + 1))
    elif [ "$st" != 0 ]; then
      other=$((other + 1))
      echo "a run ended with status $st"
    fi
  done
  c=$(class_of "$size")
  within "$dead" "$r" "$(p_of "$c" "$rate")" "detections, AXMALLOC_GUARD=$rate, $size bytes (class $c), $n blocks"
  [ "$other" = 0 ] || {
    echo "FAIL: $other runs ended neither by SIGSEGV nor at the end"
    fails=$((fails + 1))
  }
}
# (under the emulator: 500 and 200 processes, 30 and 39 detections expected)
detect 65536 4000 2000 "$([ "$scale" = 1 ] && echo 800 || echo 500)"
detect 1024 200 2000 "$([ "$scale" = 1 ] && echo 300 || echo 200)"

[ "$fails" = 0 ] && echo "t_sampling_stat: OK" || echo "t_sampling_stat: $fails failures"
[ "$fails" = 0 ]
