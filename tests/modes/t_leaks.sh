#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The exact leak checker (AXMALLOC_LEAKS) on tests/modes/t_leaks.c: the report's numbers and
# function name, the still-reachable blocks, the exit status, suppressions, a program without
# leaks, a cross-thread free, a fork child.
#
#   t_leaks.sh PROG [EMULATOR]
#
# EMULATOR: how to run PROG ('|' separates its words), empty natively.
set -uo pipefail
prog=$1
IFS='|' read -r -a emu <<<"${2:-}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
unset AXMALLOC_LEAKS AXMALLOC_LEAKS_EXITCODE AXMALLOC_LEAKS_SUPPRESSIONS AXMALLOC_PROF \
  AXMALLOC_PROF_SAMPLE AXMALLOC_PROF_FILE AXMALLOC_PROF_SIGNAL AXMALLOC_PROF_UNWIND \
  AXMALLOC_PROF_LEAKS AXMALLOC_CHECK AXMALLOC_MTE

# run NAME MODE [VAR=value...]: stdout in $tmp/NAME.out, stderr in $tmp/NAME.err, status in $st
run() {
  local name=$1 mode=$2
  shift 2
  env "$@" "${emu[@]}" "$prog" "$mode" >"$tmp/$name.out" 2>"$tmp/$name.err"
  st=$?
}
has() { grep -qF -- "$2" "$tmp/$1.err" || fail "$1: no '$2' in its report: $(head -c 2000 "$tmp/$1.err")"; }
hasnt() { ! grep -qF -- "$2" "$tmp/$1.err" || fail "$1: '$2' in its report"; }
status() { [ "$st" = "$2" ] || fail "$1: exit status $st, not $2"; }

run main main AXMALLOC_LEAKS=1
status main 23
# still reachable: the global's, the stack's, and stdio's buffer (and a static libc's own)
has main "leak check: 4096000 bytes in 1000 blocks lost (directly: 4096000 bytes in 1000 blocks, indirectly: 0 bytes in 0 blocks), "
has main "Direct leak of 4096000 byte(s) in 1000 object(s) allocated from:"
grep -qE '#0 0x[0-9a-f]+ leak_some\+0x[0-9a-f]+ \(.*t_leaks[a-z_]*\+0x[0-9a-f]+\)' "$tmp/main.err" ||
  fail "main: frame #0 is not leak_some: $(head -5 "$tmp/main.err")"
hasnt main "still reachable, allocated"
grep -qx "t_leaks: buffered output" "$tmp/main.out" || fail "main: stdout lost"
[ "$(grep -c 'allocated from' "$tmp/main.err")" = 1 ] || fail "main: more than the one leak"

run all main AXMALLOC_LEAKS=all
status all 23
has all "Direct leak of 4096000 byte(s) in 1000 object(s) allocated from:"
has all "100 bytes in 1 block still reachable, allocated from:"
has all "200 bytes in 1 block still reachable, allocated from:"

run code main AXMALLOC_LEAKS=yes AXMALLOC_LEAKS_EXITCODE=42
status code 42
run code0 main AXMALLOC_LEAKS=on AXMALLOC_LEAKS_EXITCODE=0
status code0 0
has code0 "4096000 bytes in 1000 blocks"

printf '# known\n\nleak:leak_s*e\n' >"$tmp/supp"
run supp main AXMALLOC_LEAKS=1 AXMALLOC_LEAKS_SUPPRESSIONS="$tmp/supp"
status supp 0
hasnt supp "allocated from"
has supp "suppressed: 4096000 bytes in 1000 blocks (leak:leak_s*e)"
printf 'leak:^main$\n' >"$tmp/supp2" # every leak's stack has main in it
run supp2 main AXMALLOC_LEAKS=1 AXMALLOC_LEAKS_SUPPRESSIONS="$tmp/supp2"
status supp2 0
printf 'leak:^mai$\n' >"$tmp/supp3"
run supp3 main AXMALLOC_LEAKS=1 AXMALLOC_LEAKS_SUPPRESSIONS="$tmp/supp3"
status supp3 23

# direct and indirect: the list's head and the block pointing at itself direct, the list's
# nodes and the cycle indirect; direct first; a suppression takes a stack's indirect leaks too
run graph graph AXMALLOC_LEAKS=1
status graph 23
has graph "leak check: 448 bytes in 6 blocks lost (directly: 128 bytes in 2 blocks, indirectly: 320 bytes in 4 blocks)"
has graph "Direct leak of 48 byte(s) in 1 object(s) allocated from:"
has graph "Direct leak of 80 byte(s) in 1 object(s) allocated from:"
# (each node() call a stack of its own)
[ "$(grep -c 'Indirect leak of 64 byte(s) in 1 object(s)' "$tmp/graph.err")" = 2 ] ||
  fail "graph: the list's two nodes are not indirect: $(grep ' leak of ' "$tmp/graph.err")"
[ "$(grep -c 'Indirect leak of 96 byte(s) in 1 object(s)' "$tmp/graph.err")" = 2 ] ||
  fail "graph: the cycle is not indirect: $(grep ' leak of ' "$tmp/graph.err")"
[ "$(grep ' leak of ' "$tmp/graph.err" | cut -d' ' -f1 | tr '\n' ' ')" = "Direct Direct Indirect Indirect Indirect Indirect " ] ||
  fail "graph: not the direct leaks first: $(grep ' leak of ' "$tmp/graph.err")"
printf 'leak:leak_graph\n' >"$tmp/supp_graph"
run supp_graph graph AXMALLOC_LEAKS=1 AXMALLOC_LEAKS_SUPPRESSIONS="$tmp/supp_graph"
status supp_graph 0
has supp_graph "suppressed: 448 bytes in 6 blocks (leak:leak_graph)"

run none none AXMALLOC_LEAKS=1
status none 0
[ ! -s "$tmp/none.err" ] || fail "none: printed $(cat "$tmp/none.err")"

run remote remote AXMALLOC_LEAKS=1
status remote 0
[ ! -s "$tmp/remote.err" ] || fail "remote: printed $(head -c 2000 "$tmp/remote.err")"

run fork fork AXMALLOC_LEAKS=1
status fork 23
grep -qx "t_leaks: child status 0" "$tmp/fork.out" || fail "fork: the child's status: $(cat "$tmp/fork.out")"
[ "$(grep -c 'leak check:' "$tmp/fork.err")" = 1 ] || fail "fork: not one report: $(cat "$tmp/fork.err")"

run bad none AXMALLOC_LEAKS=maybe AXMALLOC_LEAKS_EXITCODE=300
status bad 0
has bad "AXMALLOC_LEAKS=maybe is not"
has bad "AXMALLOC_LEAKS_EXITCODE=300 is out of range"

run off main
status off 0
[ ! -s "$tmp/off.err" ] || fail "off: printed $(head -c 500 "$tmp/off.err")"

[ $fails = 0 ] && echo "t_leaks: all passed"
exit $((fails > 0))
