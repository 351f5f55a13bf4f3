#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The AXMALLOC_* options' parser (src/common/options.c), one rule per run: what each value
# becomes (tests/interface/t_optparse.c prints what the library took, AXMALLOC_VERBOSE=1 lists every
# option) and the one line a mistake gets, word for word.
#
#   t_optparse.sh RULE PROG [EMULATOR]
#
#   sizes    k, m and g suffixes (either case) count in 1024s: AXMALLOC_PROF_SAMPLE,
#            AXMALLOC_PAGE_SIZE; a number is digits (AXMALLOC_PURGE_DELAY_MS)
#   garbage  what used to be read as its leading digits (abc, -1, 0, " 65536", 1e6, 64kb, an
#            overflow), out of range, a bad word: one line naming the variable, the value and
#            the default, and the default is what is used
#   bools    1/0/yes/no/true/false/on/off in mixed case, on every bool option, and what each
#            switches on; the control bytes 0x11 and 0x10 are not 1 and 0
#   signals  AXMALLOC_PROF_SIGNAL: USR1, USR2, RTMIN to RTMAX by name (with or without SIG,
#            RTMIN+n, RTMAX-n) and number taken; any other signal (a fault, a terminal's, job
#            control's) refused by name and number alike, in one line
#   unknown  an AXMALLOC_* name that is no option: one line with the nearest name; the
#            launcher's and the tests' own names (AXMALLOC_LIB, AXMALLOC_THP_SYSFS) are silent
#   verbose  AXMALLOC_VERBOSE=1 lists every option once, aligned, with (environment) or
#            (default)
#   prefix   AXMALLOC_PROF_FILE is made absolute at start-up (a program that changes directory
#            writes its profiles where it started) and printed so; a directory that is missing,
#            not a directory or not writable is said at start-up (as root, the unwritable one
#            as user 65534 through setpriv)
#
# EMULATOR: how to run PROG ('|' separates its words: qemu-aarch64|-L|/usr/aarch64-linux-gnu),
# empty natively.
set -uo pipefail
rule=$1 prog=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
IFS='|' read -r -a emu <<<"${3:-}"
export LC_ALL=C
# Every run says which options it sets: none of a variant pass's (scripts/test.sh) inherited.
for v in $(env | sed -n 's/^\(AXMALLOC_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_optparse.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0 checks=0 as_user=()
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

# run [VAR=value...] [-- ARGS...]: PROG with just these options; its stdout in $out, its
# stderr in $err less t_optparse's own line, the library's lines before that in $early.
run() {
  local vars=()
  while (($#)) && [[ $1 != -- ]]; do vars+=("$1") && shift; done
  (($#)) && shift
  "${as_user[@]}" env "${vars[@]}" "${emu[@]}" "$prog" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  out=$(<"$tmp/out")
  early=$(sed '/^t_optparse: started$/,$d' "$tmp/err")
  err=$(grep -v '^t_optparse: started$' "$tmp/err")
  ((rc == 0)) || fail "${vars[*]}: exit $rc: $err"
}
# the value t_optparse printed for $1
got() { sed -n "s/^$1 //p" <<<"$out"; }
# want WHAT GOT EXPECTED
want() {
  checks=$((checks + 1))
  [[ $2 == "$3" ]] || fail "$1: got '$2', want '$3'"
}
# want_err WHAT LINES: stderr is exactly LINES
want_err() { want "$1: stderr" "$err" "$2"; }
# want_line WHAT REGEX: a line of stderr matches
want_line() {
  checks=$((checks + 1))
  grep -Eq -- "$2" <<<"$err" || fail "$1: no line matching '$2' in: $err"
}
# the option's line of the AXMALLOC_VERBOSE=1 listing, its spaces squeezed
listed() { grep "^axmalloc: option $1 " <<<"$err" | tr -s ' '; }

# The OS page: AXMALLOC_PAGE_SIZE's default and lower bound (4k natively and under qemu,
# 16k or 64k on such kernels).
run
os_page=$(got page_size)
os_page_k=$((os_page / 1024))k
KiB=1024 MiB=$((1 << 20)) GiB=$((1 << 30))
prof=(AXMALLOC_PROF=1 "AXMALLOC_PROF_FILE=$tmp/p")

# A build with -DAX_CHECKED=ON has checked mode on, which rules the profiler out.
run AXMALLOC_VERBOSE=1
checked_build=0
[[ $(listed AXMALLOC_CHECK) == *" on (default)" ]] && checked_build=1

size_msg="is not a size (digits with an optional k, m or g suffix)"
bool_msg="is not a boolean (1, 0, yes, no, true, false, on or off)"

rule_sizes() {
  if ((checked_build)); then
    echo "t_optparse sizes: AXMALLOC_PROF_SAMPLE not checked: no profiler in a checked build"
  else
    for c in 64k:$((64 * KiB)) 8K:$((8 * KiB)) 1m:$MiB 3M:$((3 * MiB)) 1g:$GiB 2G:$((2 * GiB)) \
      4096:4096 1:1 1024g:$((1024 * GiB)); do
      run "${prof[@]}" "AXMALLOC_PROF_SAMPLE=${c%%:*}"
      want "AXMALLOC_PROF_SAMPLE=${c%%:*}" "$(got prof_sample)" "${c#*:}"
      want_err "AXMALLOC_PROF_SAMPLE=${c%%:*}" ""
    done
  fi
  for c in 64k:65536 64K:65536 16k:16384 16384:16384; do
    ((${c#*:} >= os_page)) || continue
    run "AXMALLOC_PAGE_SIZE=${c%%:*}"
    want "AXMALLOC_PAGE_SIZE=${c%%:*}" "$(got page_size)" "${c#*:}"
    want_err "AXMALLOC_PAGE_SIZE=${c%%:*}" ""
  done
  run AXMALLOC_PURGE_DELAY_MS=250 AXMALLOC_VERBOSE=1
  want_line "AXMALLOC_PURGE_DELAY_MS=250" "purge delay 250 ms"
  run AXMALLOC_PURGE_DELAY_MS=0 AXMALLOC_VERBOSE=1
  want_line "AXMALLOC_PURGE_DELAY_MS=0" "purge delay 0 ms"
  run AXMALLOC_PURGE_DELAY_MS=1k AXMALLOC_VERBOSE=1 # (a number, not a size)
  want_line "AXMALLOC_PURGE_DELAY_MS=1k" \
    "^axmalloc: AXMALLOC_PURGE_DELAY_MS=1k is not a number \(digits\): the default 10 is used$"
}

rule_garbage() {
  local v
  if ((checked_build)); then
    echo "t_optparse garbage: AXMALLOC_PROF_SAMPLE not checked: no profiler in a checked build"
  else
    for v in abc -1 +1 " 65536" "65536 " 1e6 64kb 1.5k k 0x10 64m64 4096B 1t; do
      run "${prof[@]}" "AXMALLOC_PROF_SAMPLE=$v"
      want "AXMALLOC_PROF_SAMPLE='$v'" "$(got prof_sample)" 524288
      want_err "AXMALLOC_PROF_SAMPLE='$v'" \
        "axmalloc: AXMALLOC_PROF_SAMPLE=$v $size_msg: the default 512k is used"
    done
    for v in 0 2048g 99999999999999999999999 18446744073709551616 17179869184g; do
      run "${prof[@]}" "AXMALLOC_PROF_SAMPLE=$v"
      want "AXMALLOC_PROF_SAMPLE=$v" "$(got prof_sample)" 524288
      want_err "AXMALLOC_PROF_SAMPLE=$v" \
        "axmalloc: AXMALLOC_PROF_SAMPLE=$v is out of range (1 to 1024g): the default 512k is used"
    done
    run "${prof[@]}" "AXMALLOC_PROF_SAMPLE=" # (empty: unset, as always)
    want "AXMALLOC_PROF_SAMPLE=" "$(got prof_sample)" 524288
    want_err "AXMALLOC_PROF_SAMPLE=" ""
  fi
  for v in abc -5 1e3 10.5; do
    run "AXMALLOC_PURGE_DELAY_MS=$v" AXMALLOC_VERBOSE=1
    want_line "AXMALLOC_PURGE_DELAY_MS=$v" "purge delay 10 ms"
    want "AXMALLOC_PURGE_DELAY_MS=$v: first line" "$(head -n 1 <<<"$err")" \
      "axmalloc: AXMALLOC_PURGE_DELAY_MS=$v is not a number (digits): the default 10 is used"
  done
  run AXMALLOC_PURGE_DELAY_MS=3600001
  want_err "AXMALLOC_PURGE_DELAY_MS=3600001" "axmalloc: AXMALLOC_PURGE_DELAY_MS=3600001 is out of \
range (0 to 3600000): the default 10 is used"
  for v in 3000 128k 12k $((os_page / 2)); do
    run "AXMALLOC_PAGE_SIZE=$v"
    want "AXMALLOC_PAGE_SIZE=$v" "$(got page_size)" "$os_page"
    want_err "AXMALLOC_PAGE_SIZE=$v" "axmalloc: AXMALLOC_PAGE_SIZE=$v is not a power of two from \
$os_page_k (the OS page) to 64k: the default $os_page_k is used"
  done
  run AXMALLOC_PAGE_SIZE=4kb
  want_err "AXMALLOC_PAGE_SIZE=4kb" \
    "axmalloc: AXMALLOC_PAGE_SIZE=4kb $size_msg: the default $os_page_k is used"
  run AXMALLOC_THP=sometimes
  want "AXMALLOC_THP=sometimes" "$(got thp)" auto
  want_err "AXMALLOC_THP=sometimes" \
    "axmalloc: AXMALLOC_THP=sometimes is not auto, never, always or large: the default auto is used"
  run AXMALLOC_THP=NeVeR
  want "AXMALLOC_THP=NeVeR" "$(got thp)" never
  want_err "AXMALLOC_THP=NeVeR" ""
  run AXMALLOC_PROF_UNWIND=fast
  want_err "AXMALLOC_PROF_UNWIND=fast" "axmalloc: AXMALLOC_PROF_UNWIND=fast is not table, libgcc \
or check: the default table is used"
  run AXMALLOC_STATS=2
  want_err "AXMALLOC_STATS=2" "axmalloc: AXMALLOC_STATS=2 $bool_msg: the default off is used"
  # a line stays one line whatever the value holds
  run "AXMALLOC_THP=a"$'\n'"b"
  want_err "AXMALLOC_THP=a\\nb" \
    "axmalloc: AXMALLOC_THP=a?b is not auto, never, always or large: the default auto is used"
}

rule_bools() {
  local s
  for s in 1 YeS tRuE On; do
    run "AXMALLOC_VERBOSE=$s"
    want "AXMALLOC_VERBOSE=$s" "$(listed AXMALLOC_VERBOSE)" \
      "axmalloc: option AXMALLOC_VERBOSE on (environment)"
  done
  for s in 0 nO FaLsE oFf; do
    run "AXMALLOC_VERBOSE=$s"
    want_err "AXMALLOC_VERBOSE=$s" ""
  done
  for s in y n enable 10 " 1"; do
    run "AXMALLOC_VERBOSE=$s"
    want_err "AXMALLOC_VERBOSE='$s'" \
      "axmalloc: AXMALLOC_VERBOSE=$s $bool_msg: the default off is used"
  done
  # case folds letters only: the control bytes 0x11 and 0x10 are 1 and 0 with bit 5 clear, and
  # were taken for them (issue 38: AXMALLOC_CHECK=$'\x11' switched checked mode on)
  for s in $'\x11' $'\x10'; do
    run "AXMALLOC_VERBOSE=$s"
    want_err "AXMALLOC_VERBOSE=$(printf %q "$s")" \
      "axmalloc: AXMALLOC_VERBOSE=? $bool_msg: the default off is used"
  done
  if ((!checked_build)); then
    run AXMALLOC_CHECK=$'\x11' AXMALLOC_VERBOSE=1
    want "AXMALLOC_CHECK=\$'\\x11': first line" "$(head -n 1 <<<"$err")" \
      "axmalloc: AXMALLOC_CHECK=? $bool_msg: the default off is used"
    want "AXMALLOC_CHECK=\$'\\x11': checked mode" "$(grep -c ', checked mode,' <<<"$err")" 0
  fi
  # every bool option takes the words, and does what it says
  local o
  for o in CHECK FORCE_MT MTE PROF PROF_LEAKS STATS; do
    run "AXMALLOC_$o=yEs" AXMALLOC_VERBOSE=TRUE "AXMALLOC_PROF_FILE=$tmp/p"
    want "AXMALLOC_$o=yEs" "$(listed "AXMALLOC_$o")" "axmalloc: option AXMALLOC_$o on (environment)"
  done
  run AXMALLOC_CHECK=True AXMALLOC_VERBOSE=1
  want_line "AXMALLOC_CHECK=True" ", checked mode,"
  run AXMALLOC_FORCE_MT=ON AXMALLOC_VERBOSE=1
  want_line "AXMALLOC_FORCE_MT=ON" "single-threaded twins [a-z]+ \(AXMALLOC_FORCE_MT\)"
  if ((!checked_build)); then # (no tagging in checked mode)
    run AXMALLOC_MTE=Yes
    want "AXMALLOC_MTE=Yes" "$(got mte | sed 's/^unavailable$/on/')" on
  fi
  run AXMALLOC_STATS=tRUE
  want_line "AXMALLOC_STATS=tRUE" "^axmalloc stats"
  if ((!checked_build)); then
    run AXMALLOC_PROF=yes "AXMALLOC_PROF_FILE=$tmp/p"
    want "AXMALLOC_PROF=yes" "$(got prof_sample)" 524288
    run AXMALLOC_PROF_LEAKS=On "AXMALLOC_PROF_FILE=$tmp/p"
    want_line "AXMALLOC_PROF_LEAKS=On" "^axmalloc: leak summary"
  fi
  run AXMALLOC_PROF=off "AXMALLOC_PROF_FILE=$tmp/p"
  want "AXMALLOC_PROF=off" "$(got prof_sample)" 0
}

# (glibc's numbers on x86-64 and AArch64 alike)
signal_msg="is not a signal for profiles (USR1, USR2, RTMIN to RTMAX: 10, 12, 34 to 64)"

rule_signals() {
  local v
  for v in USR1 SIGUSR2 12 SIGRTMIN+5 RTMAX-30 64; do
    run "AXMALLOC_PROF_SIGNAL=$v" AXMALLOC_VERBOSE=1
    want "AXMALLOC_PROF_SIGNAL=$v" "$(listed AXMALLOC_PROF_SIGNAL)" \
      "axmalloc: option AXMALLOC_PROF_SIGNAL $v (environment)"
  done
  # a fault's handler that returns faults again for ever (issue 38: SIGSEGV by its number);
  # a name and a number get the same answer; only kill -l's names of these, in capitals
  for v in 11 SEGV 7 SIGBUS SIGTERM CHLD 32 RTMIN+31 usr1 SIGFOO 65; do
    run "AXMALLOC_PROF_SIGNAL=$v"
    want_err "AXMALLOC_PROF_SIGNAL=$v" \
      "axmalloc: AXMALLOC_PROF_SIGNAL=$v $signal_msg: the default none is used"
  done
}

rule_unknown() {
  local c
  for c in STAT=1:STATS PROF_SAMPEL=4k:PROF_SAMPLE VERBSE=1:VERBOSE purge_delay_ms=5:PURGE_DELAY_MS \
    PROFILE=1:PROF_FILE LIBS=x:LIB THP_SYSF=x:THP_SYSFS FORCEMT=1:FORCE_MT; do
    run "AXMALLOC_${c%%:*}"
    want_err "AXMALLOC_${c%%:*}" \
      "axmalloc: AXMALLOC_${c%%:*}: no such option (did you mean AXMALLOC_${c#*:}?)"
  done
  # ours, not the library's: silent
  run "AXMALLOC_LIB=$tmp/none.so" "AXMALLOC_THP_SYSFS=$tmp/none"
  want_err "AXMALLOC_LIB, AXMALLOC_THP_SYSFS" ""
  # other prefixes are not ours
  run AXMALLOCSTATS=1 axmalloc_stats=1 MY_AXMALLOC_STATS=1
  want_err "names without the prefix" ""
}

rule_verbose() {
  run AXMALLOC_VERBOSE=1 AXMALLOC_PROF_SAMPLE=64k AXMALLOC_THP=never AXMALLOC_PURGE_DELAY_MS=5
  local list n
  list=$(grep '^axmalloc: option ' <<<"$err")
  echo "$list"
  n=$(grep -c . <<<"$list")
  want "options listed" "$n" 24
  want "AXMALLOC_PROF_SAMPLE" "$(listed AXMALLOC_PROF_SAMPLE)" \
    "axmalloc: option AXMALLOC_PROF_SAMPLE 64k (environment)"
  want "AXMALLOC_THP" "$(listed AXMALLOC_THP)" "axmalloc: option AXMALLOC_THP never (environment)"
  want "AXMALLOC_PURGE_DELAY_MS" "$(listed AXMALLOC_PURGE_DELAY_MS)" \
    "axmalloc: option AXMALLOC_PURGE_DELAY_MS 5 (environment)"
  want "AXMALLOC_VERBOSE" "$(listed AXMALLOC_VERBOSE)" \
    "axmalloc: option AXMALLOC_VERBOSE on (environment)"
  want "AXMALLOC_STATS" "$(listed AXMALLOC_STATS)" "axmalloc: option AXMALLOC_STATS off (default)"
  want "AXMALLOC_PAGE_SIZE" "$(listed AXMALLOC_PAGE_SIZE)" \
    "axmalloc: option AXMALLOC_PAGE_SIZE $os_page_k (default)"
  want "AXMALLOC_PROF_UNWIND" "$(listed AXMALLOC_PROF_UNWIND)" \
    "axmalloc: option AXMALLOC_PROF_UNWIND table (default)"
  want "AXMALLOC_PROF_SIGNAL" "$(listed AXMALLOC_PROF_SIGNAL)" \
    "axmalloc: option AXMALLOC_PROF_SIGNAL none (default)"
  # aligned: every value starts in one column, every "(" in another
  want "value column" "$(sed -E 's/^(axmalloc: option [A-Z_]+ +).*/\1/' <<<"$list" |
    awk '{ print length($0) }' | sort -u | wc -l)" 1
  want "source column" "$(awk '{ print index($0, "(") }' <<<"$list" | sort -u | wc -l)" 1
  # the listing follows the start-up lines, and a bad value shows its default as (default)
  run AXMALLOC_VERBOSE=1 AXMALLOC_THP=sometimes
  want "AXMALLOC_THP=sometimes" "$(listed AXMALLOC_THP)" "axmalloc: option AXMALLOC_THP auto (default)"
  want "listing last" "$(tail -n 1 <<<"$early" | tr -s ' ')" \
    "axmalloc: option AXMALLOC_VERBOSE on (environment)"
  run AXMALLOC_VERBOSE=0
  want_err "AXMALLOC_VERBOSE=0" ""
}

rule_prefix() {
  if ((checked_build)); then
    echo "t_optparse prefix: skipped: no profiler in a checked build"
    exit 77
  fi
  mkdir -p "$tmp/start/sub" "$tmp/later/sub" "$tmp/ro"
  cd "$tmp/start" || exit 1
  local p
  for p in sub/p ./sub/p .//sub/p; do
    rm -f "$tmp"/start/sub/* "$tmp"/later/sub/*
    run AXMALLOC_PROF=1 "AXMALLOC_PROF_FILE=$p" AXMALLOC_VERBOSE=1 -- chdir "$tmp/later"
    want "AXMALLOC_PROF_FILE=$p: listed" "$(listed AXMALLOC_PROF_FILE)" \
      "axmalloc: option AXMALLOC_PROF_FILE $tmp/start/sub/p (environment)"
    want_line "AXMALLOC_PROF_FILE=$p: start-up line" \
      "^axmalloc: heap profiling: .*, profiles $tmp/start/sub/p\.<pid>\.\*\.heap$"
    want "AXMALLOC_PROF_FILE=$p: profiles where it started" \
      "$(cd "$tmp/start/sub" && ls | sed -E 's/^p\.[0-9]+\.(0|final)\.heap$/p.\1/' | sort | xargs)" \
      "p.0 p.final"
    want "AXMALLOC_PROF_FILE=$p: none where it went" "$(ls "$tmp/later/sub")" ""
  done
  # the default prefix: axprof in the directory it started in
  run AXMALLOC_PROF=1 AXMALLOC_VERBOSE=1 -- chdir "$tmp/later"
  want "default prefix" "$(listed AXMALLOC_PROF_FILE)" \
    "axmalloc: option AXMALLOC_PROF_FILE $tmp/start/axprof (default)"
  want "default prefix: profiles" "$(ls "$tmp/start" | grep -c '^axprof\.')" 2
  # an absolute prefix as it is; "/" itself is a directory
  run AXMALLOC_PROF=1 "AXMALLOC_PROF_FILE=$tmp/ro/q" AXMALLOC_VERBOSE=1
  want "absolute prefix" "$(listed AXMALLOC_PROF_FILE)" \
    "axmalloc: option AXMALLOC_PROF_FILE $tmp/ro/q (environment)"
  # where profiles cannot go: said at start-up, naming the directory and why in words
  local missing="/nonexistent-t_optparse-$$/p"
  run AXMALLOC_PROF=1 "AXMALLOC_PROF_FILE=$missing"
  want "missing directory: at start-up" "$early" "axmalloc: AXMALLOC_PROF_FILE=$missing: cannot \
write profiles in ${missing%/p} (No such file or directory)"
  want_line "missing directory: at exit, in words" "^axmalloc: could not write the heap profile \
${missing%/p}/p\.[0-9]+\.final\.heap \(No such file or directory\)$"
  run AXMALLOC_PROF=1 AXMALLOC_PROF_FILE=nosuch/p
  want "missing relative directory" "$early" "axmalloc: AXMALLOC_PROF_FILE=nosuch/p: cannot write \
profiles in $tmp/start/nosuch (No such file or directory)"
  touch "$tmp/file"
  run AXMALLOC_PROF=1 "AXMALLOC_PROF_FILE=$tmp/file/p"
  want "a file for a directory" "$early" "axmalloc: AXMALLOC_PROF_FILE=$tmp/file/p: cannot write \
profiles in $tmp/file (Not a directory)"
  chmod 555 "$tmp/ro"
  if ((EUID == 0)) && command -v setpriv >/dev/null; then # (root writes anywhere: be nobody)
    chmod 755 "$tmp"
    as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  fi
  if [[ -w $tmp/ro && ${#as_user[@]} == 0 ]]; then
    echo "t_optparse prefix: Permission denied not checked: $(id -un) writes anywhere"
  else
    run AXMALLOC_PROF=1 "AXMALLOC_PROF_FILE=$tmp/ro/q"
    want "unwritable directory" "$early" "axmalloc: AXMALLOC_PROF_FILE=$tmp/ro/q: cannot write \
profiles in $tmp/ro (Permission denied)"
    cd "$tmp/ro" || exit 1
    run AXMALLOC_PROF=1
    want "unwritable working directory, default prefix" "$early" "axmalloc: \
AXMALLOC_PROF_FILE=axprof (the default): cannot write profiles in $tmp/ro (Permission denied)"
    cd "$tmp/start" || exit 1
  fi
  as_user=()
  chmod 755 "$tmp/ro"
}

case $rule in
  sizes | garbage | bools | signals | unknown | verbose | prefix) "rule_$rule" ;;
  *) echo "t_optparse.sh: unknown rule $rule" && exit 2 ;;
esac
if ((fails)); then
  echo "t_optparse $rule: $fails of $checks checks failed"
  exit 1
fi
echo "t_optparse $rule: $checks checks OK"
