#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Guarded sampling's reports on tests/guard/t_guard_report.c: each misuse of a guarded block
# named in the words of ASan (the kind, the address against the block, its size), with the
# stacks that allocated and freed it naming the program's functions, and the process dead of
# the misuse's signal (a fault: SIGSEGV at the faulting instruction; a bad free: SIGABRT); a
# fault outside the pool, and signals sent, go to the program's handler or the default action
# untouched.
#
#   t_guard_report.sh PROG [EMULATOR] [PAGE_SIZE]
#
# EMULATOR: how to run PROG ('|' separates its words), empty natively. PAGE_SIZE: the
# allocator's page size (AXMALLOC_PAGE_SIZE), empty for the kernel's.
set -uo pipefail
prog=$1
IFS='|' read -r -a emu <<<"${2:-}"
page=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ulimit -c 0 # (the faults are meant: no core files)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# Every run says which options it sets: none of a variant pass's (scripts/test.sh) inherited,
# whose own lines (AXMALLOC_PROF_FILE=... does nothing without AXMALLOC_PROF=1) would be the
# reports' first
for v in $(env | sed -n 's/^\(AXMALLOC_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset T_GUARD_OWN_EARLY
base=(AXMALLOC_GUARD=1 AXMALLOC_GUARD_SLOTS=16)
[ -n "$page" ] && base+=("AXMALLOC_PAGE_SIZE=$page")

# run NAME [VAR=value...] -- ARGS...: stderr in $tmp/NAME.err, status in $st, the block the
# program printed in $blk
run() {
  local name=$1
  shift
  local vars=()
  while [ "$1" != -- ]; do
    vars+=("$1")
    shift
  done
  shift
  # (in a subshell of its own: bash's "Segmentation fault" notice goes to /dev/null)
  st=$( (env "${base[@]}" "${vars[@]}" "${emu[@]}" "$prog" "$@" >"$tmp/$name.out" \
    2>"$tmp/$name.err"; echo $?) 2>/dev/null)
  blk=$(sed -n 's/^t_guard_report: block //p' "$tmp/$name.err" | tail -1)
}
report() { head -c 3000 "$tmp/$1.err"; }
has() { grep -qF -- "$2" "$tmp/$1.err" || fail "$1: no '$2' in its report: $(report "$1")"; }
hasnt() { ! grep -qF -- "$2" "$tmp/$1.err" || fail "$1: '$2' in its report: $(report "$1")"; }
# status NAME CODE: 139 SIGSEGV, 134 SIGABRT (bash's 128 + signal)
status() { [ "$st" = "$2" ] || fail "$1: exit status $st, not $2: $(report "$1")"; }
# plus HEX N: the address N bytes from HEX (N may be negative)
plus() { printf '0x%x' $(($1 + $2)); }
# stacks NAME: the allocating stack names alloc_site, the freeing one free_site (if freed)
stacks() {
  local name=$1 freed=${2:-}
  awk '/allocated by thread [0-9]+ here:/ {a = 1; next} /^  [a-z]/ {a = 0} a && /alloc_site/ {ok = 1}
       END {exit !ok}' "$tmp/$name.err" || fail "$name: the allocating stack does not name alloc_site: $(report "$name")"
  if [ -n "$freed" ]; then
    awk '/freed by thread [0-9]+ here:/ {f = 1; next} /^  [a-z]/ {f = 0} f && /free_site/ {ok = 1}
         END {exit !ok}' "$tmp/$name.err" || fail "$name: the freeing stack does not name free_site: $(report "$name")"
  else
    hasnt "$name" "freed by thread"
  fi
  has "$name" "axmalloc: guarded sampling caught this (AXMALLOC_GUARD=1"
}
# sampled NAME: the program printed its block (else the misuse did not run, and the case's
# other checks are left out)
sampled() {
  [ -n "$blk" ] && return 0
  fail "$1: no block printed: $(report "$1")"
  return 1
}

# ---- faults: SIGSEGV at the access ------------------------------------------------------------
uaf() {
  local rw=$1
  run "uaf_$rw" -- "uaf_$rw"
  sampled "uaf_$rw" || return
  status "uaf_$rw" 139
  has "uaf_$rw" "axmalloc: use after free at $(plus "$blk" 8)"
  has "uaf_$rw" "$(plus "$blk" 8) is 8 bytes inside the freed 64-byte block at $blk"
  stacks "uaf_$rw" freed
}
uaf read
uaf write

# freed by another thread: the two stacks name two threads, the fault the first
case_uaf_thread() {
  run uaf_thread -- uaf_thread
  sampled uaf_thread || return
  status uaf_thread 139
  has uaf_thread "$(plus "$blk" 8) is 8 bytes inside the freed 64-byte block at $blk"
  stacks uaf_thread freed
  local a f u
  a=$(sed -n 's/^  allocated by thread \([0-9]*\) here:$/\1/p' "$tmp/uaf_thread.err")
  f=$(sed -n 's/^  freed by thread \([0-9]*\) here:$/\1/p' "$tmp/uaf_thread.err")
  u=$(sed -n 's/^axmalloc: use after free at 0x[0-9a-f]* by thread \([0-9]*\)$/\1/p' "$tmp/uaf_thread.err")
  [[ -n $a && -n $f && $a != "$f" && $u == "$a" ]] ||
    fail "uaf_thread: allocated by '$a', freed by '$f', faulted in '$u': $(report uaf_thread)"
}
case_uaf_thread

# one byte past a 13-byte block whose last byte is its page's last; and past a 32-byte one at
# the page's end (16-byte aligned, so nothing between it and the guard page)
case_overflow_exact() {
  run overflow_exact AXMALLOC_GUARD_PLACE=exact -- overflow 13
  sampled overflow_exact || return
  status overflow_exact 139
  has overflow_exact "axmalloc: heap buffer overflow at $(plus "$blk" 13)"
  has overflow_exact "$(plus "$blk" 13) is 0 bytes after the 13-byte block at $blk"
  stacks overflow_exact
}
case_overflow_exact

case_overflow_end() {
  run overflow_end -- overflow 32
  sampled overflow_end || return
  status overflow_end 139
  has overflow_end "axmalloc: heap buffer overflow at $(plus "$blk" 32)"
  has overflow_end "$(plus "$blk" 32) is 0 bytes after the 32-byte block at $blk"
  stacks overflow_end
}
case_overflow_end

case_underflow() {
  run underflow AXMALLOC_GUARD_PLACE=start -- underflow
  sampled underflow || return
  status underflow 139
  has underflow "axmalloc: heap buffer underflow at $(plus "$blk" -3)"
  has underflow "$(plus "$blk" -3) is 3 bytes before the 24-byte block at $blk"
  stacks underflow
}
case_underflow

# ---- bad frees: SIGABRT ----------------------------------------------------------------------
case_double_free() {
  run double_free -- double_free
  sampled double_free || return
  status double_free 134
  has double_free "axmalloc: free(): double free of guarded block $blk"
  has double_free "$blk is the freed 48-byte block"
  stacks double_free freed
}
case_double_free

case_invalid_free() {
  run invalid_free -- invalid_free
  sampled invalid_free || return
  status invalid_free 134
  has invalid_free "axmalloc: free(): invalid free of $(plus "$blk" 8), inside guarded block $blk"
  has invalid_free "$(plus "$blk" 8) is 8 bytes inside the 48-byte block at $blk"
  stacks invalid_free
}
case_invalid_free

# a 13-byte block at the end of its page is 8-byte aligned: 3 bytes between it and the guard
# page, written, seen when it is freed
case_slack() {
  run slack -- slack 13
  sampled slack || return
  status slack 134
  has slack "axmalloc: free(): heap buffer overflow of guarded block $blk (seen at free: the bytes after the block were written)"
  has slack "$(plus "$blk" 13) is 0 bytes after the 13-byte block at $blk"
  stacks slack
}
case_slack

# a handler that calls ours, reinstalled behind ours: once round, then the default action
run loop AXMALLOC_GUARD_HANDLER=reinstall -- handler_loop
status loop 139
[ "$(grep -c "the chaining handler ran" "$tmp/loop.err")" = 1 ] ||
  fail "loop: the handlers did not go round once: $(report loop)"
hasnt loop "axmalloc:"

# ---- no false alarm ---------------------------------------------------------------------------
run realloc -- realloc_into_guard
status realloc 0
has realloc "t_guard_report: realloc into a guarded block: ok"
hasnt realloc "axmalloc:"

# ---- what is not ours ------------------------------------------------------------------------
run wild -- wild
status wild 139
hasnt wild "axmalloc:"
run kill -- kill
status kill 139
hasnt kill "axmalloc:"

# The program's handler, installed before ours: faults outside the pool reach it (it
# siglongjmps out, twice); a use after free is reported, then reaches it too.
run before T_GUARD_OWN_EARLY=1 -- handler_before
status before 0
has before "t_guard_report: in front: axmalloc"
has before "axmalloc: use after free at $(plus "$blk" 8)"
has before "t_guard_report: the program's handler ran 3 times"
[ "$(grep -c '^axmalloc: ' "$tmp/before.err")" = 2 ] ||
  fail "before: not the one report (its two lines): $(report before)"

# ... with SA_RESETHAND: once, then the default action
run once T_GUARD_OWN_EARLY=once -- handler_once
status once 139
has once "t_guard_report: the program's handler ran 1 times"
hasnt once "axmalloc:"

# ... installed after ours: it replaced ours (chain: no report), unless reinstall puts ours back
run after -- handler_after
status after 0
has after "t_guard_report: in front: program"
hasnt after "axmalloc:"
has after "t_guard_report: the program's handler ran 1 times"
run reinstall AXMALLOC_GUARD_HANDLER=reinstall -- handler_after
status reinstall 0
has reinstall "t_guard_report: in front: axmalloc"
has reinstall "axmalloc: use after free at $(plus "$blk" 8)"
has reinstall "$(plus "$blk" 8) is 8 bytes inside the freed 64-byte block at $blk"
stacks reinstall freed
has reinstall "t_guard_report: the program's handler ran 1 times"

if [ "$fails" != 0 ]; then
  echo "t_guard_report: $fails failure(s)"
  exit 1
fi
echo "t_guard_report: all passed${page:+ (page size $page)}"
