#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The heap profiler, read by Debian's google-pprof (package google-perftools): the numbers of
# a program that allocates known amounts from known functions (tests/modes/t_prof.c), the leak
# report, the dump on a signal, and profiling off.
#
#   t_prof.sh PROG [EMULATOR] [TOOLS_PREFIX]
#
# EMULATOR: how to run PROG ('|' separates its words: qemu-aarch64|-L|/usr/aarch64-linux-gnu),
# empty natively. TOOLS_PREFIX: binutils for PROG's architecture (aarch64-linux-gnu-), which
# pprof's --tools takes. Exits 77 (skipped) without google-pprof.
#
# Sampling is random: the mean interval is small here (32 KiB, 4 KiB for the leak test) so
# that each checked amount rests on hundreds of samples or more (one standard deviation is
# 2-4%), and +-15% fails about once in 2,000 runs at worst.
set -uo pipefail
prog=$1
IFS='|' read -r -a emu <<<"${2:-}"
tools=${3:-}
command -v google-pprof >/dev/null || { echo "t_prof: no google-pprof (google-perftools)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Every run says what profiling it wants: none inherited (the suite runs with the profiler on
# too, scripts/test.sh)
unset AXMALLOC_PROF AXMALLOC_PROF_SAMPLE AXMALLOC_PROF_FILE AXMALLOC_PROF_SIGNAL \
  AXMALLOC_PROF_LEAKS AXMALLOC_PROF_UNWIND
run() { "${emu[@]}" "$prog" "$@"; }
pprof() { google-pprof ${tools:+--tools=$tools} --show_bytes "$@" 2>"$tmp/pprof.err"; }

# cumulative bytes of function $2 in `google-pprof --text` output $1 (0 when absent)
cum_of() {
  awk -v fn="$2" '$6 == fn && $4 ~ /^[0-9]+$/ { print $4; found = 1; exit } END { if (!found) print 0 }' "$1"
}

# within PCT percent of want
near() {
  local what=$1 got=$2 want=$3 pct=${4:-15}
  if ((got * 100 < want * (100 - pct) || got * 100 > want * (100 + pct))); then
    fail "$what: $got bytes, want $want +-$pct%"
  else
    echo "ok: $what: $got bytes (want $want, $(((got - want) * 1000 / want))/1000 off)"
  fi
}

MiB=$((1 << 20))

# Checked mode and memory tagging check or tag every block where it is: no profiling there
# (the library says so at start). Anywhere else profiling must be on.
if ! out=$(AXMALLOC_PROF=1 run info 2>&1); then
  echo "t_prof: t_prof info failed: $out"
  exit 1
fi
if [[ $out == *"not available with checked mode"* ]]; then
  echo "t_prof: $out"
  exit 77
fi

# ---- the numbers ---------------------------------------------------------------------------
if ! AXMALLOC_PROF=1 AXMALLOC_PROF_SAMPLE=32768 AXMALLOC_PROF_FILE="$tmp/exit" run dump "$tmp/p.heap"; then
  fail "t_prof dump exited $?"
fi
head -n 1 "$tmp/p.heap" | grep -q '^heap profile: .* @ heap_v2/32768$' || fail "header: $(head -n 1 "$tmp/p.heap")"
grep -q '^MAPPED_LIBRARIES:' "$tmp/p.heap" || fail "no MAPPED_LIBRARIES section"
pprof --text "$prog" "$tmp/p.heap" >"$tmp/inuse.txt" || fail "google-pprof --text: $(cat "$tmp/pprof.err")"
pprof --text --alloc_space "$prog" "$tmp/p.heap" >"$tmp/alloc.txt" || fail "google-pprof --alloc_space"
cat "$tmp/inuse.txt"
near "in use, f (1 KiB blocks)" "$(cum_of "$tmp/inuse.txt" f)" $((64 * MiB))
near "in use, g (4 KiB blocks, another thread)" "$(cum_of "$tmp/inuse.txt" g)" $((16 * MiB))
near "in use, h (2 MiB blocks)" "$(cum_of "$tmp/inuse.txt" h)" $((16 * MiB))
near "in use, r (grown by realloc to 1 MiB)" "$(cum_of "$tmp/inuse.txt" r)" $((8 * MiB))
k_inuse=$(cum_of "$tmp/inuse.txt" k)
((k_inuse < MiB)) || fail "in use, k (all freed): $k_inuse bytes"
near "allocated, k (256 B blocks, freed)" "$(cum_of "$tmp/alloc.txt" k)" $((32 * MiB))
near "allocated, m (4 KiB blocks through the cache)" "$(cum_of "$tmp/alloc.txt" m)" $((32 * MiB))
noise=$(cum_of "$tmp/inuse.txt" noise)
((noise < MiB)) || fail "in use, noise (all freed): $noise bytes"
# no frame of the allocator's own above the program's: the first frame of every stack is
# the program's (pprof's top functions are f, g, ... or hold, inlined in them)
if grep -qE ' (malloc_slow|malloc_profiled|axi_[a-z_]+|record|capture)$' "$tmp/inuse.txt"; then
  fail "the allocator's own frames in the profile"
fi
ls "$tmp"/exit.*.final.heap >/dev/null 2>&1 || fail "no profile at exit (exit.<pid>.final.heap)"

# ---- short-lived threads: a new heap's first lists count --------------------------------
# 8,192 blocks of 32 B at a 64 B interval: about 3,200 samples (one standard deviation 1.4%)
AXMALLOC_PROF=1 AXMALLOC_PROF_SAMPLE=64 AXMALLOC_PROF_FILE="$tmp/th" run threads "$tmp/th.heap" ||
  fail "t_prof threads exited $?"
pprof --text "$prog" "$tmp/th.heap" >"$tmp/th.txt" || fail "google-pprof on the threads' profile"
near "in use, w (64 threads, one after another)" "$(cum_of "$tmp/th.txt" w)" $((64 * 128 * 32))

# ---- the leak report ------------------------------------------------------------------------
AXMALLOC_PROF_LEAKS=1 AXMALLOC_PROF_SAMPLE=4096 AXMALLOC_PROF_FILE="$tmp/lk" run leak 2>"$tmp/leak.err" ||
  fail "t_prof leak exited $?"
cat "$tmp/leak.err"
grep -qE '^axmalloc: leak summary: ~[0-9]+ bytes in ~[0-9]+ objects from [0-9]+ stacks' "$tmp/leak.err" ||
  fail "no leak summary on stderr"
grep -qE '^axmalloc: leak profile: .*lk\.[0-9]+\.leaks\.heap' "$tmp/leak.err" || fail "leak profile not named"
leaks=$(ls "$tmp"/lk.*.leaks.heap 2>/dev/null | head -n 1)
if [[ -z $leaks ]]; then
  fail "no leak profile written"
else
  pprof --text "$prog" "$leaks" >"$tmp/leaks.txt" || fail "google-pprof on the leak profile"
  cat "$tmp/leaks.txt"
  near "leaked by leaky" "$(cum_of "$tmp/leaks.txt" leaky)" $((8 * MiB))
  [[ $(cum_of "$tmp/leaks.txt" tidy) == 0 ]] || fail "tidy (frees all it allocates) reported as a leak"
  # the top function of the leak profile is the leaking one (or hold, inlined in it)
  top=$(awk '$6 != "" && $1 ~ /^[0-9]+$/ { print $6; exit }' "$tmp/leaks.txt")
  [[ $top == leaky || $top == hold ]] || fail "top of the leak profile is '$top'"
fi

# ---- a dump on a signal -------------------------------------------------------------------
AXMALLOC_PROF=1 AXMALLOC_PROF_SAMPLE=32768 AXMALLOC_PROF_SIGNAL=SIGUSR2 AXMALLOC_PROF_FILE="$tmp/sig" \
  run signal || fail "t_prof signal exited $? (the signal's default action?)"
sig=$(ls "$tmp"/sig.*.0.heap 2>/dev/null | head -n 1)
if [[ -z $sig ]]; then
  fail "no profile dumped on SIGUSR2"
else
  pprof --text "$prog" "$sig" >"$tmp/sig.txt" || fail "google-pprof on the signal's profile"
  near "in use at the signal, f" "$(cum_of "$tmp/sig.txt" f)" $((64 * MiB))
fi

# ---- the stack walk: the unwind tables' rules, frame for frame against libgcc's walk -----
# Every allocation sampled, each stack walked both ways (AXMALLOC_PROF_UNWIND=check aborts
# where they differ); the signal handler's stacks cross a signal frame, which only libgcc
# walks (there must be some, and most stacks must come from the table). The rounds repeat
# their stacks, so many come from the memo of a thread's last walks, each compared as well;
# two callers alternate with the same stack pointer under a common callee (via_a, via_b),
# where only the memo's check of the saved return addresses tells their stacks apart.
out=$(AXMALLOC_PROF=1 AXMALLOC_PROF_SAMPLE=1 AXMALLOC_PROF_UNWIND=check AXMALLOC_PROF_FILE="$tmp/fr" \
  run frames 2>&1) || fail "t_prof frames with AXMALLOC_PROF_UNWIND=check exited $?: $out"
line=$(grep 'AXMALLOC_PROF_UNWIND=check: ' <<<"$out" | tail -n 1)
echo "$line"
read -r same memo alone < <(sed -nE 's/.*check: ([0-9]+) stacks walked from the table \(([0-9]+) of them from the memo\) .* ([0-9]+) by libgcc alone$/\1 \2 \3/p' <<<"$line")
if [[ -z ${same:-} ]]; then
  fail "no AXMALLOC_PROF_UNWIND=check report: $out"
else
  ((same >= 1000)) || fail "stack walk: $same stacks from the table (want >= 1000)"
  ((memo >= 500)) || fail "stack walk: $memo stacks from the memo (want >= 500: the rounds repeat)"
  ((memo < same)) || fail "stack walk: all $same stacks from the memo (it must miss on new ones)"
  ((alone >= 10)) || fail "stack walk: $alone stacks by libgcc alone (want the signal handler's)"
fi

# ---- a double free while profiling: caught wherever the first free put the block -------------
# The block freed twice was sampled (a slot), or its first free put it in the cache, in its
# page, or aside (its class's sample due then: at a 32 KiB interval, 4 of 24 runs in a
# build that printed it, 12-16 of 24 for some block of the run).
for n in $(seq 0 23); do
  out=$(AXMALLOC_PROF=1 AXMALLOC_PROF_SAMPLE=32768 AXMALLOC_PROF_FILE="$tmp/df" run doublefree "$n" 2>&1) &&
    fail "doublefree $n: the second free returned"
  q=$(head -n 1 <<<"$out")
  grep -q "double free $q\b" <<<"$out" || fail "doublefree $n: no report naming $q: $out"
done

# ---- off, and what ax_info says ----------------------------------------------------------
out=$(run info) && [[ $out == "prof_sample 0" ]] || fail "ax_info off: '$out'"
out=$(AXMALLOC_PROF=1 AXMALLOC_PROF_SAMPLE=32768 run info) && [[ $out == "prof_sample 32768" ]] ||
  fail "ax_info on: '$out'"
out=$(run dump "$tmp/off.heap" 2>&1) && fail "ax_prof_dump succeeded with profiling off"
[[ $out == *"Invalid argument"* ]] || fail "ax_prof_dump off: '$out' (want EINVAL)"
[[ ! -e $tmp/off.heap ]] || fail "a profile written with profiling off"

echo "t_prof: $fails failure(s)"
((fails == 0))
