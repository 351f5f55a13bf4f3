#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# No option silently does nothing (issue 42): the AXMALLOC_* options that need another, the
# names that are no option, and the order of AXMALLOC_VERBOSE's lines. One rule per run, on
# tests/interface/t_optparse.c (it prints "t_optparse: started" once the library's start-up
# lines are out, and what the library took on stdout).
#
#   t_optneeds.sh RULE PROG [EMULATOR]
#
#   needs    every option the library lists (AXMALLOC_VERBOSE=1), held against this file's
#            own list of what each needs (an option the list does not know fails: a new option
#            gets its rule here and in options.c's needs[]): each one that needs another, given
#            alone, gets exactly one line naming the option to set; with each option that
#            enables it, none; every other option alone, none. And the refusals that remain:
#            the dump signal of a profiler that checked mode refused, AXMALLOC_MTE=1 where
#            there is no tagging, AXMALLOC_THP=always where the kernel has no huge pages
#   unknown  an AXMALLOC_* name that is no option gets the nearest name only when it is near
#            (at most one edit in three characters): AXMALLOC_FOO is not asked about _MTE
#   verbose  AXMALLOC_VERBOSE=1: the version line is the library's first, the bulk plan is
#            said once, after it (a line for zero and copy, or one line for both), and the
#            warnings of the options come before the version line, not inside its block
#   signals  AXMALLOC_PROF_SIGNAL=KILL or STOP (by name, with or without SIG, or number): "cannot
#            be caught", not "is not a signal"; any other refused signal keeps its line
#
# EMULATOR: how to run PROG ('|' separates its words), empty natively.
set -uo pipefail
rule=$1 prog=$(cd "$(dirname "$2")" && pwd)/$(basename "$2") here=$(cd "$(dirname "$0")" && pwd)
IFS='|' read -r -a emu <<<"${3:-}"
export LC_ALL=C
# Every run says which options it sets: none of a variant pass's (scripts/test.sh) inherited.
for v in $(env | sed -n 's/^\(AXMALLOC_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_optneeds.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0 checks=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

# run [VAR=value...]: PROG with just these options; its stdout in $out, the library's lines
# before "t_optparse: started" (its start-up) in $early, and of those the options' warnings
# (a line that starts with the variable: "axmalloc: AXMALLOC_X=...") in $warned.
run() {
  env "$@" "${emu[@]}" "$prog" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  out=$(<"$tmp/out")
  early=$(sed '/^t_optparse: started$/,$d' "$tmp/err")
  warned=$(grep -E '^axmalloc: AXMALLOC_[A-Z_]+=' <<<"$early")
  ((rc == 0)) || fail "$*: exit $rc: $(<"$tmp/err")"
}
got() { sed -n "s/^$1 //p" <<<"$out"; }
# want WHAT GOT EXPECTED
want() {
  checks=$((checks + 1))
  [[ $2 == "$3" ]] || fail "$1: got '$2', want '$3'"
}

# A build with -DAX_CHECKED=ON has checked mode on, which refuses the profiler and the leak
# checker (their own lines, which are not an option's warning).
run AXMALLOC_VERBOSE=1
checked_build=0
grep -q '^axmalloc: option AXMALLOC_CHECK  *on ' <<<"$early" && checked_build=1
listed=$(sed -n 's/^axmalloc: option AXMALLOC_\([A-Z_]*\) .*/\1/p' <<<"$early")
os_page=$(got page_size)
run
mte_here=$(got mte) # (off, or unavailable with AXMALLOC_MTE=1: below)

# What each option needs: the options whose being on makes it do something. None: it works
# alone. (options.c's needs[] is the library's copy.)
declare -A needs=(
  [CHECK]='' [FORCE_ISA]='' [FORCE_MT]='' [GUARD]='' [LEAKS]='' [MTE]='' [PAGE_SIZE]='' [PROF]=''
  [PROF_LEAKS]='' [PURGE_DELAY_MS]='' [STATS]='' [THP]='' [VERBOSE]=''
  [LEAKS_EXITCODE]='LEAKS' [LEAKS_SUPPRESSIONS]='LEAKS'
  [PROF_FILE]='PROF PROF_LEAKS' [PROF_SAMPLE]='PROF PROF_LEAKS' [PROF_SIGNAL]='PROF PROF_LEAKS'
  [PROF_UNWIND]='PROF PROF_LEAKS' [PROF_GDUMP]='PROF PROF_LEAKS' [PROF_INTERVAL]='PROF PROF_LEAKS'
  [GUARD_HANDLER]=GUARD [GUARD_PLACE]=GUARD [GUARD_SLOTS]=GUARD
)
# A value each option takes (the enablers' is 1).
printf 'leak:no_such_function\n' >"$tmp/supp"
declare -A value=(
  [CHECK]=1 [FORCE_ISA]=libc [FORCE_MT]=1 [LEAKS]=1 [MTE]=1 [PAGE_SIZE]=$os_page [PROF]=1
  [PROF_LEAKS]=1 [PURGE_DELAY_MS]=20 [STATS]=1 [THP]=never [VERBOSE]=1
  [LEAKS_EXITCODE]=42 [LEAKS_SUPPRESSIONS]=$tmp/supp [PROF_FILE]=$tmp/p [PROF_SAMPLE]=64k
  [PROF_SIGNAL]=USR2 [PROF_UNWIND]=libgcc [PROF_GDUMP]=1 [PROF_INTERVAL]=1m [GUARD]=1m
  [GUARD_HANDLER]=reinstall [GUARD_PLACE]=start [GUARD_SLOTS]=16
)

rule_needs() {
  local o e n=0
  for o in $listed; do
    n=$((n + 1))
    checks=$((checks + 1))
    [[ -v needs[$o] ]] || fail "AXMALLOC_$o: no rule in t_optneeds.sh (and in options.c's needs[]?)"
  done
  ((n >= 18)) || fail "only $n options listed by AXMALLOC_VERBOSE=1"
  for o in "${!needs[@]}"; do
    grep -qx "$o" <<<"$listed" || fail "AXMALLOC_$o: in t_optneeds.sh, not listed by the library"
  done
  for o in $listed; do
    [[ -v needs[$o] ]] || continue
    local set="AXMALLOC_$o=${value[$o]}"
    run "$set"
    if [[ -z ${needs[$o]} ]]; then
      if [[ $o == MTE && $(got mte) == unavailable ]]; then
        want "$set alone, no tagging here" "$warned" "axmalloc: $set does nothing here: \
this CPU or kernel has no memory tagging"
      else
        want "$set alone" "$warned" ""
      fi
      continue
    fi
    # guarded sampling's options: AXMALLOC_GUARD is on by default (a rate), so alone they
    # say nothing; with the rate 0, one line (in checked mode guarded sampling is off anyway)
    if [[ ${needs[$o]} == GUARD ]]; then
      want "$set alone (guarded sampling on by default)" "$warned" ""
      run "$set" AXMALLOC_GUARD=0
      want "$set AXMALLOC_GUARD=0" "$early" "axmalloc: $set does nothing with AXMALLOC_GUARD=0"
      run "AXMALLOC_$o=@"
      want "AXMALLOC_$o=@ alone: one line" "$(grep -c . <<<"$early")" 1
      continue
    fi
    # alone: exactly one line, and it names the option to set
    local first=${needs[$o]%% *} then=''
    [[ $o == PROF_SIGNAL ]] && then=" (the signal will kill the program: set AXMALLOC_$first=1)"
    want "$set alone" "$early" "axmalloc: $set does nothing without AXMALLOC_$first=1$then"
    # with each option that enables it: no warning (the profiler refused in a checked build
    # leaves its signal without a handler, which is said)
    for e in ${needs[$o]}; do
      run "$set" "AXMALLOC_$e=1"
      if [[ $o == PROF_SIGNAL ]] && ((checked_build)); then
        want "$set AXMALLOC_$e=1 (checked build)" "$warned" "axmalloc: $set does nothing with \
the profiler off (the signal will kill the program)"
      else
        want "$set AXMALLOC_$e=1" "$warned" ""
      fi
    done
    # a value refused is said once, as a bad value, and not again as one that needs another
    run "AXMALLOC_$o=@"
    want "AXMALLOC_$o=@ alone: one line" "$(grep -c . <<<"$early")" 1
  done
  # AXMALLOC_THP=always where the kernel has no huge pages (fake sysfs directories: thp.c's
  # test hook, AXMALLOC_THP_SYSFS); never and auto ask for nothing it lacks
  local thp=$here/../platform/thp k
  for k in never:never "none:absent"; do
    run AXMALLOC_THP=always "AXMALLOC_THP_SYSFS=$thp/${k%%:*}"
    want "AXMALLOC_THP=always, kernel ${k#*:}" "$warned" "axmalloc: AXMALLOC_THP=always does \
nothing here: the kernel gives no transparent huge pages (kernel: ${k#*:})"
    run AXMALLOC_THP=never "AXMALLOC_THP_SYSFS=$thp/${k%%:*}"
    want "AXMALLOC_THP=never, kernel ${k#*:}" "$warned" ""
  done
  run AXMALLOC_THP=always "AXMALLOC_THP_SYSFS=$thp/madvise_2m"
  want "AXMALLOC_THP=always, kernel madvise" "$warned" ""
  # explicitly off is off too
  run AXMALLOC_PROF=0 AXMALLOC_PROF_SAMPLE=4k
  want "AXMALLOC_PROF=0 AXMALLOC_PROF_SAMPLE=4k" "$warned" \
    "axmalloc: AXMALLOC_PROF_SAMPLE=4k does nothing without AXMALLOC_PROF=1"
  # the profiler asked for and refused by checked mode: no handler for its signal either
  run AXMALLOC_CHECK=1 AXMALLOC_PROF=1 AXMALLOC_PROF_SIGNAL=SIGUSR1
  want "checked mode, AXMALLOC_PROF=1, AXMALLOC_PROF_SIGNAL" "$warned" "axmalloc: \
AXMALLOC_PROF_SIGNAL=SIGUSR1 does nothing with the profiler off (the signal will kill the program)"
  grep -q '^axmalloc: heap profiling is not available with checked mode' <<<"$early" ||
    fail "checked mode, AXMALLOC_PROF=1: no line saying why the profiler is off: $early"
  # several at once: a line each, in the table's order
  run AXMALLOC_PROF_UNWIND=check AXMALLOC_LEAKS_EXITCODE=1 AXMALLOC_PROF_FILE=x
  want "three alone" "$(sed 's/=.*//' <<<"$warned" | xargs)" \
    "axmalloc: AXMALLOC_LEAKS_EXITCODE axmalloc: AXMALLOC_PROF_FILE axmalloc: AXMALLOC_PROF_UNWIND"
}

rule_unknown() {
  local c
  # far from every name: no suggestion
  for c in FOO=1 X=1 DEBUG=1 STATISTICS=1 PROFILING_RATE=9; do
    run "AXMALLOC_$c"
    want "AXMALLOC_$c" "$early" "axmalloc: AXMALLOC_$c: no such option (axmalloc(3) lists them)"
  done
  # near: one edit in three characters at most (of the longer name)
  for c in STAT=1:STATS PROF_SAMPLES=1:PROF_SAMPLE PROFILE=1:PROF_FILE LEAK=1:LEAKS \
    CHECKED=1:CHECK MT=1:MTE; do
    run "AXMALLOC_${c%%:*}"
    want "AXMALLOC_${c%%:*}" "$early" \
      "axmalloc: AXMALLOC_${c%%:*}: no such option (did you mean AXMALLOC_${c#*:}?)"
  done
}

rule_verbose() {
  local v
  for v in "" AXMALLOC_FORCE_ISA=libc AXMALLOC_PROF_SAMPLE=64k; do
    run AXMALLOC_VERBOSE=1 $v
    # the options' warnings first, then the version line, and no warning after it
    local block
    block=$(sed -n '/^axmalloc: version /,$p' <<<"$early")
    want "$v: version line after the warnings" "$(head -n 1 <<<"$block" | cut -c1-18)" \
      "axmalloc: version "
    want "$v: lines before the version line" "$(sed '/^axmalloc: version /,$d' <<<"$early")" \
      "$warned"
    want "$v: warnings inside the verbose block" \
      "$(grep -cE '^axmalloc: AXMALLOC_[A-Z_]+=' <<<"$block")" 0
    # the bulk plan once, right after the atomics line
    want "$v: third line" "$(sed -n 3p <<<"$block" | cut -c1-19)" "axmalloc: bulk zero"
    want "$v: 'bulk zero' said once" "$(grep -c 'bulk zero' <<<"$block")" 1
    want "$v: 'bulk copy' said once" "$(grep -c 'bulk copy' <<<"$block")" 1
    [[ $v == AXMALLOC_FORCE_ISA=libc ]] && want "$v: the plan" "$(grep 'bulk' <<<"$early")" \
      "axmalloc: bulk zero libc, bulk copy libc"
  done
}

rule_signals() {
  local v why="(a signal for profiles is USR1, USR2 or RTMIN to RTMAX: 10, 12, 34 to 64)"
  for v in KILL SIGKILL 9 STOP SIGSTOP 19; do
    run AXMALLOC_PROF=1 "AXMALLOC_PROF_SIGNAL=$v" "AXMALLOC_PROF_FILE=$tmp/p"
    want "AXMALLOC_PROF_SIGNAL=$v" "$warned" \
      "axmalloc: AXMALLOC_PROF_SIGNAL=$v cannot be caught $why: the default none is used"
  done
  run AXMALLOC_PROF=1 AXMALLOC_PROF_SIGNAL=SIGTERM "AXMALLOC_PROF_FILE=$tmp/p"
  want "AXMALLOC_PROF_SIGNAL=SIGTERM" "$warned" "axmalloc: AXMALLOC_PROF_SIGNAL=SIGTERM is not a \
signal for profiles (USR1, USR2, RTMIN to RTMAX: 10, 12, 34 to 64): the default none is used"
}

case $rule in
  needs | unknown | verbose | signals) "rule_$rule" ;;
  *) echo "t_optneeds.sh: unknown rule $rule" && exit 2 ;;
esac
if ((fails)); then
  echo "t_optneeds $rule: $fails of $checks checks failed"
  exit 1
fi
echo "t_optneeds $rule: $checks checks OK"
