#!/bin/bash
# SPDX-License-Identifier: MIT
# t_preload: run real programs with and without LD_PRELOAD=libaxmalloc.so and compare
# their outputs byte for byte; then run each preloaded with AXMALLOC_STATS=1 and check
# that axmalloc really served it (stderr holds "axmalloc stats (pid N):" with mallocs > 0).
#
# usage: t_preload.sh /path/to/libaxmalloc.so
set -u
LIB=${1:?usage: t_preload.sh /path/to/libaxmalloc.so}
LIB=$(readlink -f "$LIB")
[ -f "$LIB" ] || { echo "t_preload: $LIB not found"; exit 1; }

export LC_ALL=C
unset AXMALLOC_STATS LD_PRELOAD

W=$(mktemp -d "${TMPDIR:-/tmp}/t_preload.XXXXXX")
trap 'rm -rf "$W"' EXIT
fails=0
ncase=0

fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

# run_case NAME COMMAND...: runs COMMAND three times in $W/NAME.{ref,ax,st}: plain,
# preloaded, preloaded with AXMALLOC_STATS=1. Compares exit status, stdout and stderr
# of the first two byte for byte, checks stdout of the third too, and the stats.
# The command writes any extra output files to $OUT (a per-run directory), which are
# compared as well.
run_case() {
  local name=$1
  shift
  ncase=$((ncase + 1))
  local mode rc_ref rc_ax rc_st
  for mode in ref ax st; do
    local d="$W/$name.$mode"
    mkdir -p "$d/out"
    case $mode in
      ref) (cd "$d" && OUT="$d/out" "$@" >"$d/stdout" 2>"$d/stderr"); echo $? >"$d/rc" ;;
      ax) (cd "$d" && OUT="$d/out" LD_PRELOAD="$LIB" "$@" >"$d/stdout" 2>"$d/stderr"); echo $? >"$d/rc" ;;
      st) (cd "$d" && OUT="$d/out" LD_PRELOAD="$LIB" AXMALLOC_STATS=1 "$@" >"$d/stdout" 2>"$d/stderr"); echo $? >"$d/rc" ;;
    esac
  done
  local r="$W/$name.ref" a="$W/$name.ax" s="$W/$name.st" fails0=$fails
  if [ "$(cat "$r/rc")" != 0 ]; then
    fail "$name: reference run (no preload) exited $(cat "$r/rc"): $(head -c 500 "$r/stderr")"
    return
  fi
  cmp -s "$r/rc" "$a/rc" || fail "$name: exit status $(cat "$r/rc") plain, $(cat "$a/rc") preloaded: $(head -c 500 "$a/stderr")"
  cmp -s "$r/stdout" "$a/stdout" || fail "$name: stdout differs when preloaded ($(wc -c <"$r/stdout") vs $(wc -c <"$a/stdout") bytes)"
  cmp -s "$r/stderr" "$a/stderr" || fail "$name: stderr differs when preloaded: $(head -c 500 "$a/stderr")"
  diff -r -q "$r/out" "$a/out" >/dev/null || fail "$name: output files differ when preloaded"
  cmp -s "$r/rc" "$s/rc" || fail "$name: exit status $(cat "$s/rc") with AXMALLOC_STATS=1: $(head -c 500 "$s/stderr")"
  cmp -s "$r/stdout" "$s/stdout" || fail "$name: stdout differs with AXMALLOC_STATS=1"
  diff -r -q "$r/out" "$s/out" >/dev/null || fail "$name: output files differ with AXMALLOC_STATS=1"
  if ! grep -qE "^axmalloc stats \(pid [0-9]+\):$" "$s/stderr"; then
    fail "$name: AXMALLOC_STATS=1 preloaded run printed no 'axmalloc stats (pid N):' (axmalloc not used?)"
  else
    # Some process of the case must have allocated through us: the largest mallocs count of
    # its reports is non-zero (a pipeline's process that never allocates reports 0, as it
    # should: the allocator makes no allocation of its own at start-up).
    local m
    m=$(grep -o 'mallocs  *[0-9][0-9]*' "$s/stderr" | grep -o '[0-9][0-9]*$' | sort -n | tail -1)
    if [ -z "$m" ]; then
      fail "$name: no mallocs count in the axmalloc stats"
    elif [ "$m" -eq 0 ]; then
      fail "$name: axmalloc stats say mallocs 0"
    fi
  fi
  [ "$fails" -eq "$fails0" ] && echo "ok   $name ($(wc -c <"$r/stdout") bytes of stdout, $(du -sb "$r/out" | cut -f1) bytes of files)"
}

# skip_unless TOOL...: true when every tool exists; otherwise report the skip.
skip_unless() {
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null 2>&1 || { echo "skip $t not found"; return 1; }
  done
}

# ---- inputs (made without preload) -----------------------------------------------------
awk 'BEGIN { srand(7); for (i = 0; i < 200000; i++)
  printf "%08x %d %s\n", int(rand() * 4294967295), i, substr("abcdefghijklmnopqrstuvwxyz", 1 + i % 26, 1 + int(rand() * 20)) }' \
  >"$W/lines.txt"
[ "$(wc -l <"$W/lines.txt")" = 200000 ] || { echo "t_preload: input generation failed"; exit 1; }
# 64 MiB file for sha256sum/gzip
for i in $(seq 1 8); do cat "$W/lines.txt"; done | head -c 67108864 >"$W/big.bin"
mkdir -p "$W/tree/a/b" "$W/tree/c"
cp "$W/lines.txt" "$W/tree/a/b/lines.txt"
head -c 100000 "$W/big.bin" >"$W/tree/c/part.bin"
echo hello >"$W/tree/a/hello.txt"
cat >"$W/prog.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
struct node { struct node *l, *r; int key; char name[24]; };
static struct node *insert(struct node *t, int k) {
  if (!t) { t = calloc(1, sizeof *t); t->key = k; snprintf(t->name, sizeof t->name, "n%d", k); return t; }
  if (k < t->key) t->l = insert(t->l, k); else t->r = insert(t->r, k);
  return t;
}
static long sum(const struct node *t) { return t ? t->key + sum(t->l) + sum(t->r) : 0; }
static inline unsigned mix(unsigned x) { x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; return x; }
int main(int argc, char **argv) {
  struct node *t = 0;
  for (int i = 0; i < 1000 + argc; i++) t = insert(t, (int)(mix((unsigned)i) % 100000));
  double acc = 0;
  for (int i = 1; i < 64; i++) acc += 1.0 / (i * i);
  printf("%ld %.12f %s\n", sum(t), acc, argv[0]);
  return 0;
}
EOF

# ---- cases -------------------------------------------------------------------------------
run_case sort sort "$W/lines.txt"
run_case sort_k sh -c 'sort -t" " -k3,3 -k2,2n "$0" | tail -n 1000' "$W/lines.txt"
# The real interpreter, not a wrapper script such as a pyenv shim.
PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || PY=
[ -n "$PY" ] && [ -x "$PY" ] || PY=python3
skip_unless python3 && run_case python "$PY" -c '
import hashlib, sys
d = {}
lst = []
for i in range(200000):
    k = "key%d" % (i * 7919 % 100003)
    d.setdefault(k, []).append(i)
    lst.append((i * 2654435761) % 1000003)
lst.sort()
big = [bytes(i % 256 for i in range(n % 3000)) for n in range(2000)]
s = {frozenset(range(i % 50)) for i in range(3000)}
h = hashlib.sha256()
for k in sorted(d):
    h.update(k.encode()); h.update(repr(d[k]).encode())
h.update(repr(lst[::97]).encode())
for b in big: h.update(b)
h.update(str(len(s)).encode())
print(len(d), len(lst), h.hexdigest())
'
skip_unless gcc && run_case gcc_S sh -c 'gcc -O2 -S -o "$OUT/prog.s" "$0" && cat "$OUT/prog.s" | wc -l' "$W/prog.c"
skip_unless gcc objdump && run_case gcc_c sh -c 'gcc -O2 -c -o "$OUT/prog.o" "$0" && objdump -d "$OUT/prog.o" | tail -n +3 | sha256sum' "$W/prog.c"
skip_unless gcc && run_case gcc_run sh -c 'gcc -O2 -o out/prog "$0" && ./out/prog x && rm out/prog' "$W/prog.c"
run_case sed sed -e 's/\([0-9a-f]\{8\}\) \([0-9]*\)/\2:\1/' -e '/^1[0-9]*:/d' -e 's/[aeiou]/<&>/g' "$W/lines.txt"
run_case awk awk '{ c[substr($1, 1, 2)]++; n[$3] += $2; w[NR % 1000] = w[NR % 1000] $3 }
  END { for (k in c) print "c", k, c[k] | "sort"; close("sort");
        for (k in n) print "n", k, n[k] | "sort"; close("sort");
        for (k = 0; k < 1000; k++) tot += length(w[k]); print "w", tot }' "$W/lines.txt"
run_case tar sh -c 'tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$0" -cf "$OUT/t.tar" tree &&
  mkdir "$OUT/x" && tar -C "$OUT/x" -xf "$OUT/t.tar" && diff -r "$0/tree" "$OUT/x/tree" && tar -tvf "$OUT/t.tar"' "$W"
run_case sha256sum sha256sum "$W/big.bin" "$W/lines.txt"
run_case gzip sh -c 'gzip -n -6 -c "$0" | sha256sum; gzip -n -6 -c "$0" | gzip -d | cmp - "$0" && echo same' "$W/big.bin"
run_case pipeline sh -c 'cut -d" " -f3 "$0" | sort | uniq -c | sort -rn | head -50' "$W/lines.txt"

if [ "$fails" -ne 0 ]; then
  echo "t_preload: $fails failure(s) in $ncase cases"
  for f in "$W"/*.st/stderr; do echo "== $f"; head -c 2000 "$f"; done | head -200
  exit 1
fi
echo "t_preload: all $ncase cases identical with and without axmalloc: OK"
