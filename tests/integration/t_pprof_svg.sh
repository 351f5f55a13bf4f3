#!/bin/bash
# SPDX-License-Identifier: MIT
# t_pprof_svg: the pictures README.md's "Heap profiling" draws from a profile of axmalloc's
# heap profiler:
#   1. a program preloaded with the library and AXMALLOC_PROF=1 writes <prefix>.<pid>.final.heap;
#   2. google-pprof --svg turns it into a non-empty SVG that is well-formed XML with an <svg>
#      root and names the program's functions (without graphviz's dot it writes an empty
#      file and exits 0: the reason for this test);
#   3. google-pprof --collapsed turns it into folded stacks, the flame-graph tools' input:
#      lines "frame;frame;...;leaf <bytes>" through main, with the bytes the program holds.
#
# Exit 77 (skipped) without google-pprof (google-perftools) or dot (graphviz): scripts/deps.sh
# installs both, so CI runs it. Also skipped in the variant passes of scripts/test.sh (an
# AXMALLOC_* variable set): the profile is the test's own, the same on every path.
#
# usage: t_pprof_svg.sh cc=<c compiler> lib=<build>/libaxmalloc.so.0
set -u
export LC_ALL=C

cc=cc lib=''
for a in "$@"; do
  case $a in
    cc=* | lib=*) printf -v "${a%%=*}" '%s' "${a#*=}" ;;
    *) echo "t_pprof_svg: unknown argument '$a'"; exit 2 ;;
  esac
done
[ -f "$lib" ] || { echo "t_pprof_svg: need lib=<build>/libaxmalloc.so.0"; exit 2; }
lib=$(readlink -f "$lib")
set_vars=$(env | sed -n 's/^\(AXMALLOC_[A-Za-z0-9_]*\)=.*/\1/p' | xargs)
if [ -n "$set_vars" ]; then
  echo "t_pprof_svg: skipped: $set_vars set (a variant pass: the profile is the test's own)"
  exit 77
fi
for t in google-pprof dot; do
  command -v "$t" >/dev/null ||
    { echo "t_pprof_svg: skipped: no $t (google-perftools, graphviz: scripts/deps.sh)"; exit 77; }
done
unset LD_PRELOAD

W=$(mktemp -d "${TMPDIR:-/tmp}/t_pprof_svg.XXXXXX")
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
ok() { echo "ok   $*"; }

# 8 MiB in use at exit from keep_blocks, 16 MiB allocated and freed by churn; sampled every
# 4 KiB on average, each 64 KiB block is sampled with probability 1 - exp(-16): the in-use
# figure is exact, not an estimate.
cat >prog.c <<'PROG'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static void *kept[128];
__attribute__((noinline)) static void keep_blocks(void) {
  for (int i = 0; i < 128; i++) kept[i] = memset(malloc(65536), 1, 65536);
}
__attribute__((noinline)) static void churn(void) {
  for (int i = 0; i < 256; i++) free(memset(malloc(65536), 2, 65536));
}
int main(void) {
  keep_blocks();
  churn();
  puts("prog: ok");
  return kept[127] ? 0 : 1;
}
PROG
"$cc" -O1 -g -o prog prog.c || { echo "t_pprof_svg: $cc prog.c failed"; exit 1; }

# ---- 1. the profile -----------------------------------------------------------------
out=$(AXMALLOC_PROF=1 AXMALLOC_PROF_SAMPLE=4k AXMALLOC_PROF_FILE="$W/p" LD_PRELOAD="$lib" ./prog 2>err)
prof=$(ls "$W"/p.*.final.heap 2>/dev/null)
if [ "$out" != "prog: ok" ] || [ "$(wc -l <<<"$prof")" -ne 1 ] || [ ! -s "$prof" ]; then
  echo "FAIL: no profile: ./prog printed '$out', profiles '$prof'; stderr: $(cat err)"
  exit 1
fi
ok "profile $(basename "$prof"): $(head -n 1 "$prof")"

# ---- 2. --svg -------------------------------------------------------------------------
google-pprof --svg ./prog "$prof" >heap.svg 2>svg.err || fail "google-pprof --svg: exit $?: $(cat svg.err)"
if [ ! -s heap.svg ]; then
  fail "google-pprof --svg wrote an empty file: $(cat svg.err)"
else
  # well-formed XML whose root is <svg>, and the program's allocating function in it
  root=$(python3 -c 'import sys, xml.etree.ElementTree as E; print(E.parse(sys.argv[1]).getroot().tag)' heap.svg 2>&1)
  case $root in
    *svg) ok "google-pprof --svg: $(wc -c <heap.svg) bytes of XML, root $root" ;;
    *) fail "google-pprof --svg: not an SVG document: $root" ;;
  esac
  grep -q 'keep_blocks' heap.svg && ok "the SVG names keep_blocks" ||
    fail "the SVG does not name keep_blocks (the function holding the memory)"
fi

# ---- 3. --collapsed -----------------------------------------------------------------------
google-pprof --collapsed ./prog "$prof" >heap.folded 2>folded.err ||
  fail "google-pprof --collapsed: exit $?: $(cat folded.err)"
bad=$(grep -cvE '^[^ ;]+(;[^ ;]+)* [0-9]+$' heap.folded)
line=$(grep -E '(^|;)main(<[0-9a-f]+>)?;keep_blocks' heap.folded | head -n 1)
bytes=${line##* }
if [ ! -s heap.folded ] || [ "$bad" -ne 0 ]; then
  fail "google-pprof --collapsed: $bad line(s) not 'frame;...;leaf <count>': $(head -n 3 heap.folded)"
elif [ -z "$line" ]; then
  fail "google-pprof --collapsed: no stack main;keep_blocks: $(cat heap.folded)"
elif [ "$bytes" -lt $((8 << 20)) ] || [ "$bytes" -gt $(((8 << 20) + (8 << 20) / 100)) ]; then
  fail "google-pprof --collapsed: keep_blocks holds $bytes bytes, expected about 8 MiB"
else
  ok "google-pprof --collapsed: $(wc -l <heap.folded) stack(s), keep_blocks $bytes bytes (8 MiB held)"
fi

if [ "$fails" -ne 0 ]; then
  echo "t_pprof_svg: $fails failure(s)"
  exit 1
fi
echo "t_pprof_svg: the profile drawn as SVG and folded for flame graphs: OK"
