#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Instructions per malloc+free pair under callgrind, for glibc, axmalloc and the peers that
# are installed, side by side. Deterministic: callgrind counts instructions, not time.
#
#   bash bench/callgrind/pair.sh [BUILD_DIR]      (default build)
#
# Each count is (Ir(200000 pairs) - Ir(100000 pairs)) / 100000: start-up cancels out; the
# loop's own ~8 instructions (call, volatile store, counter) remain in every column.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-build}
[[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD
BIN=$BUILD/pair
cc -O2 -fno-builtin -o "$BIN" "$ROOT/bench/callgrind/pair.c"
LIBDIR=/usr/lib/$(cc -dumpmachine)
declare -a NAMES=(glibc axmalloc) LIBS=("" "$BUILD/libaxmalloc.so")
for peer in mimalloc=libmimalloc.so.2 jemalloc=libjemalloc.so.2 tcmalloc=libtcmalloc_minimal.so.4; do
  [[ -e $LIBDIR/${peer#*=} ]] && NAMES+=("${peer%%=*}") LIBS+=("$LIBDIR/${peer#*=}")
done
count() { # preload size n keep
  LD_PRELOAD=$1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$BIN" "$2" "$3" "$4" 2>&1 |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
printf '| size | page | %s |\n|---|---|' "$(IFS='|'; echo "${NAMES[*]}" | sed 's/|/ | /g')"
for _ in "${NAMES[@]}"; do printf -- '---:|'; done
echo
for keep in 1 0; do
  for size in 16 64 256 1024; do
    row="| $size | $([[ $keep = 1 ]] && echo warm || echo empties) |"
    for i in "${!NAMES[@]}"; do
      a=$(count "${LIBS[$i]}" "$size" 100000 "$keep")
      b=$(count "${LIBS[$i]}" "$size" 200000 "$keep")
      row+=" $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", (b - a) / 100000 }') |"
    done
    echo "$row"
  done
done
