#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The exact leak checker with guarded sampling at every allocation (issue 43): a clean program
# (t_sampling_clean, 8 threads, a fork, realloc and aligned blocks, many of them guarded) has no
# leak, with the heap profiler on too; a guarded block lost on purpose (t_sampling_clean leak:
# 1001 bytes) is reported, and the exit status is AXMALLOC_LEAKS_EXITCODE's.
#
#   t_sampling_leak.sh PROG [EMULATOR]
set -uo pipefail
prog=$1
IFS='|' read -r -a emu <<<"${2:-}"
unset AXMALLOC_CHECK AXMALLOC_MTE AXMALLOC_GUARD_PLACE AXMALLOC_LEAKS_EXITCODE
export AXMALLOC_GUARD=1 AXMALLOC_LEAKS=1 AXMALLOC_GUARD_SLOTS=64
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1 # (the profiler writes its final profile here)
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

# clean, with the profiler too: status 0, no leak
for prof in 0 1; do
  AXMALLOC_PROF=$prof "${emu[@]}" "$prog" 1500 >"$tmp/clean.out" 2>"$tmp/clean.err"
  st=$?
  [ "$st" = 0 ] || fail "clean (AXMALLOC_PROF=$prof): status $st: $(tail -c 2000 "$tmp/clean.err")"
  ! grep -q "leak of" "$tmp/clean.err" || fail "clean (AXMALLOC_PROF=$prof): $(grep -m3 'leak' "$tmp/clean.err")"
  grep -q "t_sampling_clean: OK" "$tmp/clean.out" || fail "clean (AXMALLOC_PROF=$prof): did not end"
done

# a guarded block lost: reported, the exit status as asked
for code in 42 0; do
  for prof in 0 1; do
    AXMALLOC_PROF=$prof AXMALLOC_LEAKS_EXITCODE=$code "${emu[@]}" "$prog" leak >"$tmp/leak.out" 2>"$tmp/leak.err"
    st=$?
    [ "$st" = "$code" ] || fail "leak (exit code $code, AXMALLOC_PROF=$prof): status $st"
    grep -qF "Direct leak of 1001 byte(s) in 1 object(s) allocated from:" "$tmp/leak.err" ||
      fail "leak (AXMALLOC_PROF=$prof): no report of the guarded block: $(head -c 2000 "$tmp/leak.err")"
    [ "$(grep -c ' leak of ' "$tmp/leak.err")" = 1 ] ||
      fail "leak (AXMALLOC_PROF=$prof): other leaks: $(grep ' leak of ' "$tmp/leak.err")"
  done
done
[ "$fails" = 0 ] && echo "t_sampling_leak: OK" || echo "t_sampling_leak: $fails failures"
[ "$fails" = 0 ]
