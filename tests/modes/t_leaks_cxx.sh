#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The leak checker's report of a C++ program (tests/modes/t_leaks_cxx.cc, -g), LeakSanitizer's
# level: demangled names, the allocation's source line, direct leaks (the std::string objects)
# apart from and before indirect ones (their buffers), suppressions by demangled name, the
# report without addr2line, and the leak checker with the heap profiler asked for too.
#
#   t_leaks_cxx.sh PROG SOURCE [EMULATOR]
#
# EMULATOR: how to run PROG ('|' separates its words), empty natively.
set -uo pipefail
prog=$1 src=$2
IFS='|' read -r -a emu <<<"${3:-}"
[ ${#emu[@]} = 0 ] || emu[0]=$(command -v "${emu[0]}") # (a PATH without addr2line below)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
unset AXMALLOC_LEAKS AXMALLOC_LEAKS_EXITCODE AXMALLOC_LEAKS_SUPPRESSIONS AXMALLOC_PROF \
  AXMALLOC_PROF_FILE AXMALLOC_PROF_LEAKS AXMALLOC_CHECK AXMALLOC_MTE

# run NAME [VAR=value...]: stdout in $tmp/NAME.out, stderr in $tmp/NAME.err, status in $st
run() {
  local name=$1
  shift
  env "$@" "${emu[@]}" "$prog" strings >"$tmp/$name.out" 2>"$tmp/$name.err"
  st=$?
}
has() { grep -qF -- "$2" "$tmp/$1.err" || fail "$1: no '$2' in its report: $(head -c 3000 "$tmp/$1.err")"; }
hasnt() { ! grep -qF -- "$2" "$tmp/$1.err" || fail "$1: '$2' in its report"; }
status() { [ "$st" = "$2" ] || fail "$1: exit status $st, not $2"; }
# the line number of the first line of NAME's report holding TEXT (0: none)
line_of() { grep -nF -- "$2" "$tmp/$1.err" | head -1 | cut -d: -f1 || true; }

site=$(grep -n 'LEAK_SITE$' "$src" | cut -d: -f1)
[ -n "$site" ] || { echo "FAIL: no LEAK_SITE line in $src"; exit 1; }

run main AXMALLOC_LEAKS=1
status main 23
grep -qx "t_leaks_cxx: 10 strings lost" "$tmp/main.out" || fail "main: the program did not run"
has main "leak check: 1330 bytes in 20 blocks lost (directly: 320 bytes in 10 blocks, indirectly: 1010 bytes in 10 blocks)"
has main "SUMMARY: axmalloc: 1330 bytes leaked in 20 allocations."
hasnt main "300 bytes" # (the global's string: still reachable)
# direct first, though the indirect group is the bigger
d=$(line_of main "Direct leak of 320 byte(s) in 10 object(s) allocated from:")
i=$(line_of main "Indirect leak of 1010 byte(s) in 10 object(s) allocated from:")
[ -n "$d" ] && [ -n "$i" ] && [ "$d" -lt "$i" ] ||
  fail "main: not direct ($d) then indirect ($i): $(head -c 3000 "$tmp/main.err")"
[ "$(grep -c ' leak of ' "$tmp/main.err")" = 2 ] || fail "main: not the two leaks"
# the direct leak's frame #0: the demangled name and the allocation's line
frame0=$(sed -n "$((d + 1))p" "$tmp/main.err")
[[ $frame0 =~ ^\ +#0\ 0x[0-9a-f]+\ leak_in_thread\(int\)\+0x[0-9a-f]+\ \(.*t_leaks_cxx[a-z_]*\+0x[0-9a-f]+\) ]] ||
  fail "main: frame #0 of the direct leak is not leak_in_thread(int): $frame0"
hasnt main "_Z14leak_in_threadi"
if command -v addr2line >/dev/null; then
  [[ $frame0 =~ \ [^\ ]*t_leaks_cxx\.cc:$site$ ]] ||
    fail "main: frame #0 of the direct leak is not at t_leaks_cxx.cc:$site: $frame0"
  # the indirect leak: the buffer made by a std::string constructor inlined in leak_in_thread
  # at the same line
  sed -n "$i,\$p" "$tmp/main.err" | grep -qE "leak_in_thread\(int\)\+0x[0-9a-f]+ .*t_leaks_cxx\.cc:$site$" ||
    fail "main: the indirect leak's stack has no leak_in_thread(int) at line $site"
else
  echo "t_leaks_cxx: no addr2line: source lines not checked"
fi

# a program whose stdin and stdout are closed (coreutils close stdout at exit): addr2line's
# pipe is not mixed up with them
env AXMALLOC_LEAKS=1 "${emu[@]}" "$prog" strings 2>"$tmp/closed.err" <&- >&-
st=$?
status closed 23
if command -v addr2line >/dev/null; then
  grep -qE "#0 0x[0-9a-f]+ leak_in_thread\(int\)\+0x[0-9a-f]+ .*t_leaks_cxx\.cc:$site$" "$tmp/closed.err" ||
    fail "closed: no source line: $(head -c 2000 "$tmp/closed.err")"
fi

# suppressions: by the demangled name (LeakSanitizer's form), with '*', as in the file; the
# exit status follows
printf 'leak:leak_in_thread(int)\n' >"$tmp/supp"
run supp AXMALLOC_LEAKS=1 AXMALLOC_LEAKS_SUPPRESSIONS="$tmp/supp"
status supp 0
hasnt supp " leak of "
has supp "suppressed: 1330 bytes in 20 blocks (leak:leak_in_thread(int))"
printf 'leak:^leak_*_thread(int)$\n' >"$tmp/supp2"
run supp2 AXMALLOC_LEAKS=1 AXMALLOC_LEAKS_SUPPRESSIONS="$tmp/supp2"
status supp2 0
printf 'leak:_Z14leak_in_threadi\n' >"$tmp/supp3"
run supp3 AXMALLOC_LEAKS=1 AXMALLOC_LEAKS_SUPPRESSIONS="$tmp/supp3"
status supp3 0
printf 'leak:leak_in_thread(long)\n' >"$tmp/supp4"
run supp4 AXMALLOC_LEAKS=1 AXMALLOC_LEAKS_SUPPRESSIONS="$tmp/supp4"
status supp4 23
has supp4 "Direct leak of 320 byte(s) in 10 object(s)"

# no addr2line to be found: the same report, names demangled still, no source lines
run nopath AXMALLOC_LEAKS=1 PATH=/nonexistent
status nopath 23
has nopath "leak check: 1330 bytes in 20 blocks lost (directly: 320 bytes in 10 blocks"
grep -qE "#0 0x[0-9a-f]+ leak_in_thread\(int\)\+0x[0-9a-f]+ \([^)]*\)$" "$tmp/nopath.err" ||
  fail "nopath: frame #0 not as before: $(head -c 2000 "$tmp/nopath.err")"
hasnt nopath "t_leaks_cxx.cc:"

# with the heap profiler asked for too (the launcher's --leaks --prof), sampling every
# allocation: the leak check reports all the same (the sampled blocks, in the profiler's slots,
# are found and followed), and the profile is written; or, while the library refuses the two
# together (prof.c), the profiler says it is off, and the leak check still runs
for rate in 1 524288; do
  run prof$rate AXMALLOC_LEAKS=1 AXMALLOC_PROF=1 AXMALLOC_PROF_SAMPLE=$rate \
    AXMALLOC_PROF_FILE="$tmp/prof$rate"
  status prof$rate 23
  has prof$rate "leak check: 1330 bytes in 20 blocks lost (directly: 320 bytes in 10 blocks, indirectly: 1010 bytes in 10 blocks)"
  if ! grep -qF "heap profiling is not available" "$tmp/prof$rate.err"; then
    grep -qs "heap_v2" "$tmp/prof$rate".*.final.heap ||
      fail "prof$rate: no profile written: $(ls "$tmp")"
  fi
done

[ $fails = 0 ] && echo "t_leaks_cxx: all passed"
exit $((fails > 0))
