#!/bin/bash
# SPDX-License-Identifier: MIT
# t_launcher: the axmalloc launcher of the build tree (<build>/axmalloc, configured from
# src/launcher/axmalloc.in to preload the build tree's libaxmalloc.so.0):
#   1. --version, --help and -h (every option and variable listed), exit 0;
#   2. usage errors exit 2 with one line on stderr (the mistake, and where the help is); a
#      missing library 125, a program that
#      is not executable 126, one that cannot be found 127, each with a message;
#   3. the variables each option sets (the environment `env` sees through it), LD_PRELOAD
#      kept behind the library, AXMALLOC_LIB (absolute and relative), options after the
#      program left to the program, arguments and exit status passed through;
#   4. real programs through it: ls with --stats (axmalloc's report on stderr), sort and
#      python3 with --verbose (axmalloc's banner), sort with --prof and --sample (the
#      profiler's rate and prefix, a heap profile at exit), their output unchanged; a
#      relative --prof prefix made absolute, so that a child started in another directory
#      writes its profile where the launcher ran (issue 42).
#
# usage: t_launcher.sh launcher=<build>/axmalloc lib=<build>/libaxmalloc.so.0 version=<x.y>
set -u
export LC_ALL=C
# Nothing of the caller's may leak into what the launcher is expected to set.
for v in $(env | sed -n 's/^\(AXMALLOC_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset LD_PRELOAD LD_LIBRARY_PATH

launcher='' lib='' version=''
for a in "$@"; do
  case $a in
    launcher=* | lib=* | version=*) printf -v "${a%%=*}" '%s' "${a#*=}" ;;
    *) echo "t_launcher: unknown argument '$a'"; exit 2 ;;
  esac
done
if [ ! -f "$launcher" ] || [ ! -f "$lib" ] || [ -z "$version" ]; then
  echo "t_launcher: need launcher=, lib= and version= (see the header)"; exit 2
fi

W=$(mktemp -d "${TMPDIR:-/tmp}/t_launcher.XXXXXX")
trap 'rm -rf "$W"' EXIT
# Profiles and anything else the programs write land here.
cd "$W" || exit 1
fails=0 checks=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
ok() { echo "ok   $*"; }

# launch [VAR=value...] -- ARGS...: runs the launcher with ARGS (and the variables), stdin
# from $W/in when it exists; sets out, err, rc.
launch() {
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  checks=$((checks + 1))
  if [ -f "$W/in" ]; then
    env "${envs[@]}" "$launcher" "$@" <"$W/in" >"$W/out" 2>"$W/err"
  else
    env "${envs[@]}" "$launcher" "$@" </dev/null >"$W/out" 2>"$W/err"
  fi
  rc=$?
  out=$(cat "$W/out")
  err=$(cat "$W/err")
}
# expect_rc NAME RC [STDERR-SUBSTRING]: the last launch exited RC, printed nothing on
# stdout, and its stderr holds the substring.
expect_rc() {
  local name=$1 want=$2 msg=${3:-}
  if [ "$rc" -ne "$want" ]; then
    fail "$name: exit $rc, expected $want (stdout: $out; stderr: $err)"
  elif [ -n "$out" ]; then
    fail "$name: printed on stdout: $out"
  elif [ -n "$msg" ] && ! grep -qF -- "$msg" <<<"$err"; then
    fail "$name: stderr lacks '$msg': $err"
  else
    ok "$name: exit $want: $(head -n 1 <<<"$err")"
  fi
}

# ---- 0. the script itself ---------------------------------------------------------------
[ -x "$launcher" ] || fail "$launcher is not executable"
head -n 1 "$launcher" | grep -qx '#!/bin/sh' || fail "$launcher: first line is not #!/bin/sh"
sh -n "$launcher" || fail "$launcher: sh -n finds a syntax error"
grep -q '@[A-Z_]*@' "$launcher" && fail "$launcher: unreplaced @VARIABLE@: $(grep -o '@[A-Z_]*@' "$launcher" | head -n 3)"

# ---- 1. --version, --help -------------------------------------------------------------
launch -- --version
if [ "$rc" -eq 0 ] && [ "$out" = "axmalloc $version" ] && [ -z "$err" ]; then
  ok "--version: $out"
else
  fail "--version: exit $rc, stdout '$out', stderr '$err' (expected 'axmalloc $version')"
fi
for h in --help -h; do
  launch -- "$h"
  if [ "$rc" -ne 0 ] || [ -n "$err" ]; then
    fail "$h: exit $rc, stderr: $err"
    continue
  fi
  missing=()
  for word in --stats --verbose --check --prof --leaks --sample --version --help -h -- \
    AXMALLOC_STATS=1 AXMALLOC_VERBOSE=1 AXMALLOC_CHECK=1 AXMALLOC_PROF=1 \
    AXMALLOC_PROF_FILE=FILE AXMALLOC_LEAKS=1 --leaks=all AXMALLOC_LEAKS=all AXMALLOC_PROF_SAMPLE=BYTES \
    AXMALLOC_PROF_SIGNAL AXMALLOC_LIB LD_PRELOAD "$lib" "usage: axmalloc"; do
    grep -qF -- "$word" <<<"$out" || missing+=("$word")
  done
  # AXMALLOC_PROF_SIGNAL: the names and numbers the library takes, as axmalloc(3) says (issue
  # 42: "a number, e.g. 12 for SIGUSR2" said nothing of names, nor which numbers)
  for word in "USR1, USR2 or RTMIN" "RTMAX (RTMIN+n, RTMAX-n), with or without SIG" \
    "(10, 12, 34 to 64); no other signal"; do
    grep -qF -- "$word" <<<"$(tr -s ' \n' ' ' <<<"$out")" || missing+=("'$word'")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    ok "$h: lists every option and variable, and the library $lib"
  else
    fail "$h: lacks ${missing[*]}"
  fi
done

# ---- 2. errors ----------------------------------------------------------------------------
# usage_rc NAME MESSAGE: exit 2, and stderr is one line: MESSAGE and the hint to --help.
usage_rc() {
  expect_rc "$1" 2 "$2"
  local lines
  lines=$(wc -l <<<"$err")
  if [ "$lines" -ne 1 ] || ! grep -qF "(axmalloc --help lists the options)" <<<"$err"; then
    fail "$1: a usage error is one line ending in the hint to --help, not $lines: $err"
  fi
}
launch --
usage_rc "no arguments" "no program to run: axmalloc [OPTION]... [--] PROGRAM"
launch -- --stats --verbose
usage_rc "options, no program" "no program"
launch -- --stats --
usage_rc "--, no program" "no program"
launch -- --bogus -- true
usage_rc "unknown option" "unknown option '--bogus'"
launch -- -x true
usage_rc "unknown short option" "unknown option '-x'"
for bad in "--sample 12q" "--sample -5" "--sample=" "--sample=1e6" "--sample" "--sample 0k" \
  "--sample=kk" "--prof" "--prof=" "--prof --"; do
  read -r -a words <<<"$bad"
  launch -- "${words[@]}" true
  usage_rc "bad argument: $bad" "axmalloc: "
done
launch -- -- axmalloc-no-such-program-xyz arg
expect_rc "program not on PATH" 127 "axmalloc-no-such-program-xyz"
grep -qi "not found" <<<"$err" || fail "program not on PATH: no 'not found' in: $err"
launch -- "$W/no-such-dir/prog"
expect_rc "program path that does not exist" 127 "$W/no-such-dir/prog"
printf '#!/bin/sh\necho hi\n' >"$W/noexec.sh"
chmod 644 "$W/noexec.sh"
launch -- "$W/noexec.sh"
expect_rc "program not executable" 126 "noexec.sh"
mkdir -p "$W/adir"
launch -- "$W/adir"
expect_rc "program is a directory" 126 "adir"
launch PATH="$W:/usr/bin:/bin" -- noexec.sh
expect_rc "PATH entry not executable" 127 "noexec.sh"
launch AXMALLOC_LIB="$W/none/libaxmalloc.so.0" -- true
expect_rc "AXMALLOC_LIB missing" 125 "$W/none/libaxmalloc.so.0"
launch AXMALLOC_LIB="$W/a:b/libaxmalloc.so.0" -- true
expect_rc "AXMALLOC_LIB with a colon" 125 "colon"

# ---- 3. what the program sees -----------------------------------------------------------
# seen [VAR=value...] -- OPTIONS...: the launcher with OPTIONS runs env; out becomes the
# sorted AXMALLOC_* and LD_PRELOAD lines env printed.
seen() {
  launch "$@" env
  out=$(grep -E '^(AXMALLOC_[A-Z_]*|LD_PRELOAD)=' <<<"$out" | sort)
}
# expect_env NAME LINE...: the last seen() printed exactly these lines (any order).
expect_env() {
  local name=$1 want
  shift
  want=$(printf '%s\n' "$@" | sort)
  if [ "$rc" -ne 0 ]; then
    fail "$name: exit $rc: $err"
  elif [ "$out" != "$want" ]; then
    fail "$name: the program saw
$out
expected
$want"
  else
    ok "$name: $(tr '\n' ' ' <<<"$out")"
  fi
}
P="LD_PRELOAD=$lib"
seen --
expect_env "no option" "$P"
seen -- --stats
expect_env --stats "$P" AXMALLOC_STATS=1
seen -- --verbose
expect_env --verbose "$P" AXMALLOC_VERBOSE=1
seen -- --check
expect_env --check "$P" AXMALLOC_CHECK=1
seen -- --prof "$W/prof/p"
expect_env "--prof FILE" "$P" AXMALLOC_PROF=1 "AXMALLOC_PROF_FILE=$W/prof/p"
seen -- "--prof=$W/prof/q"
expect_env "--prof=FILE" "$P" AXMALLOC_PROF=1 "AXMALLOC_PROF_FILE=$W/prof/q"
# A relative prefix is made absolute here, once (less its ./): the library would make it so in
# each process, against the directory that process started in.
seen -- --prof prof/rel
expect_env "--prof relative" "$P" AXMALLOC_PROF=1 "AXMALLOC_PROF_FILE=$W/prof/rel"
seen -- --prof=.//prof/rel2
expect_env "--prof=.//relative" "$P" AXMALLOC_PROF=1 "AXMALLOC_PROF_FILE=$W/prof/rel2"
seen -- --prof ../up
expect_env "--prof ../relative" "$P" AXMALLOC_PROF=1 "AXMALLOC_PROF_FILE=$W/../up"
seen -- --leaks
expect_env --leaks "$P" AXMALLOC_LEAKS=1
# --leaks with --prof: both set (the library takes both at once)
seen -- --leaks --prof "$W/prof/lp"
expect_env "--leaks --prof" "$P" AXMALLOC_LEAKS=1 AXMALLOC_PROF=1 "AXMALLOC_PROF_FILE=$W/prof/lp"
seen -- --leaks=all
expect_env --leaks=all "$P" AXMALLOC_LEAKS=all
seen -- --sample 65536
expect_env "--sample BYTES" "$P" AXMALLOC_PROF_SAMPLE=65536
seen -- --sample=4096
expect_env "--sample=BYTES" "$P" AXMALLOC_PROF_SAMPLE=4096
seen -- --sample 64k
expect_env "--sample 64k (the library reads k, m, g)" "$P" AXMALLOC_PROF_SAMPLE=64k
seen AXMALLOC_PROF_SIGNAL=12 -- --stats --verbose --check --leaks --prof "$W/prof/r" \
  --sample 1024 --
expect_env "every option, AXMALLOC_PROF_SIGNAL of the caller" "$P" AXMALLOC_STATS=1 \
  AXMALLOC_VERBOSE=1 AXMALLOC_CHECK=1 AXMALLOC_PROF=1 AXMALLOC_LEAKS=1 \
  "AXMALLOC_PROF_FILE=$W/prof/r" AXMALLOC_PROF_SAMPLE=1024 AXMALLOC_PROF_SIGNAL=12
# A library that exists and is harmless to preload twice.
libc=$(ldd "$(command -v env)" | awk '$1 == "libc.so.6" { print $3 }')
[ -f "$libc" ] || libc=$lib
seen LD_PRELOAD="$libc" -- --stats
expect_env "LD_PRELOAD kept, after the library" "LD_PRELOAD=$lib:$libc" AXMALLOC_STATS=1
mkdir -p "$W/copy"
cp "$lib" "$W/copy/libaxmalloc.so.0"
seen AXMALLOC_LIB="$W/copy/libaxmalloc.so.0" --
expect_env "AXMALLOC_LIB" "LD_PRELOAD=$W/copy/libaxmalloc.so.0" \
  "AXMALLOC_LIB=$W/copy/libaxmalloc.so.0"
cd "$W/copy" || exit 1
seen AXMALLOC_LIB=libaxmalloc.so.0 --
expect_env "AXMALLOC_LIB relative" "LD_PRELOAD=$W/copy/libaxmalloc.so.0" \
  "AXMALLOC_LIB=libaxmalloc.so.0"
cd "$W" || exit 1
# Options after the program are the program's; arguments and the exit status pass through.
launch -- sh -c 'printf "[%s]" "$@"; echo " ${AXMALLOC_STATS-unset}"; exit 7' sh --stats 'a b' '' -- c
if [ "$rc" -eq 7 ] && [ "$out" = "[--stats][a b][][--][c] unset" ]; then
  ok "program's options, arguments and exit status: $out, exit 7"
else
  fail "program's options, arguments and exit status: exit $rc, '$out' (expected exit 7, '[--stats][a b][][--][c] unset'); stderr: $err"
fi
printf '#!/bin/sh\necho "from PATH: $LD_PRELOAD"\n' >"$W/adir/onpath.sh"
chmod 755 "$W/adir/onpath.sh"
launch PATH="$W/adir:$PATH" -- onpath.sh
[ "$rc" -eq 0 ] && [ "$out" = "from PATH: $lib" ] && ok "found on PATH: $out" ||
  fail "program on PATH: exit $rc, '$out', $err"

# ---- 4. real programs ----------------------------------------------------------------------
banner="axmalloc: version $version,"
launch -- --stats -- ls /
m=$(sed -n 's/^ *mallocs *\([0-9][0-9]*\).*/\1/p' <<<"$err" | head -n 1)
if [ "$rc" -ne 0 ] || ! grep -qx usr <<<"$out" || ! grep -qxE 'axmalloc stats \(pid [0-9]+\):' <<<"$err" ||
  [ -z "$m" ] || [ "$m" -eq 0 ]; then
  fail "--stats ls /: exit $rc, stdout: $(tr '\n' ' ' <<<"$out"); stderr: $err"
else
  ok "--stats -- ls /: lists /usr, axmalloc stats with mallocs $m"
fi
# The per-class rows: each number right-aligned under its title, as the header's widths say.
rows=$(sed -n '/^  class  block size       mallocs  live (this thread)$/,$p' <<<"$err" | sed 1d)
bad=$(grep -vE '^  [ 0-9]{5}  [ 0-9]{10}  [ 0-9]{12}  [ 0-9]{18}$' <<<"$rows" || true)
if [ -z "$rows" ] || [ -n "$bad" ]; then
  fail "--stats: class rows missing or not aligned under the header: '$bad'"
else
  ok "--stats: $(wc -l <<<"$rows") class rows aligned under the header"
fi
printf 'pear\napple\nfig\nbanana\n' >"$W/in"
launch -- --verbose -- sort
rm -f "$W/in"
if [ "$rc" -eq 0 ] && [ "$out" = "$(printf 'apple\nbanana\nfig\npear')" ] &&
  grep -qF "$banner" <<<"$err"; then
  ok "--verbose -- sort: sorted, $(grep -F "$banner" <<<"$err")"
else
  fail "--verbose -- sort: exit $rc, stdout: $(tr '\n' ' ' <<<"$out"); stderr: $err"
fi
if command -v python3 >/dev/null; then
  launch -- --verbose python3 -c 'print(sum(range(10)))'
  if [ "$rc" -eq 0 ] && [ "$out" = 45 ] && grep -qF "$banner" <<<"$err"; then
    ok "--verbose python3 -c 'print(sum(range(10)))': 45, banner"
  else
    fail "--verbose python3: exit $rc, stdout: $out; stderr: $err"
  fi
else
  fail "python3 not found (scripts/deps.sh installs it)"
fi
# The profiler takes what the launcher set: the rate, the prefix, a profile at exit.
mkdir -p "$W/prof"
printf 'b\na\n' >"$W/in"
launch -- --verbose --prof "$W/prof/s" --sample 1024 -- sort
rm -f "$W/in"
heap=$(ls "$W"/prof/s.*.final.heap 2>/dev/null | head -n 1)
if grep -q 'heap profiling is not available' <<<"$err"; then
  ok "--prof: heap profiling is not available in this build ($(grep 'not available' <<<"$err"))"
elif [ "$rc" -eq 0 ] && [ "$out" = "$(printf 'a\nb')" ] &&
  grep -qF "one sample per 1024 B on average, profiles $W/prof/s.<pid>" <<<"$err" &&
  [ -n "$heap" ] && head -n 1 "$heap" | grep -q '^heap profile: .*heap_v2/1024$'; then
  ok "--prof FILE --sample 1024 -- sort: $(basename "$heap"): $(head -n 1 "$heap")"
else
  fail "--prof FILE --sample 1024 -- sort: exit $rc, '$out', profile '$heap'; stderr: $err"
fi
# A relative prefix, and a program that starts a child in another directory: the child's
# profile goes where the launcher ran, not under the child's directory (whose prof/ exists,
# so that a prefix taken from there would be written).
mkdir -p "$W/prof/far" "$W/elsewhere/prof/far"
launch -- --prof prof/far/c -- sh -c 'cd elsewhere && exec ls -l /'
far=$(ls "$W"/prof/far/c.*.final.heap 2>/dev/null | head -n 1)
if grep -q 'heap profiling is not available' <<<"$err"; then
  ok "--prof relative, child elsewhere: heap profiling is not available in this build"
elif [ "$rc" -eq 0 ] && [ -n "$far" ] && [ -z "$(ls "$W/elsewhere/prof/far")" ]; then
  ok "--prof prof/far/c, child in elsewhere/: $(basename "$far") in $W/prof/far"
else
  fail "--prof prof/far/c, child in elsewhere/: exit $rc, in prof/far: '$(ls "$W/prof/far" | xargs)', in elsewhere/prof/far: '$(ls "$W/elsewhere/prof/far" | xargs)'; stderr: $err"
fi
# Without --verbose: the library is loaded (its banner appears only when asked).
launch AXMALLOC_VERBOSE=1 -- sh -c 'echo $LD_PRELOAD'
[ "$rc" -eq 0 ] && [ "$out" = "$lib" ] && grep -qF "$banner" <<<"$err" &&
  ok "caller's AXMALLOC_VERBOSE=1 kept: banner" || fail "AXMALLOC_VERBOSE=1 sh: exit $rc, $out, $err"

if [ "$fails" -ne 0 ]; then
  echo "t_launcher: $fails failure(s) in $checks runs"
  exit 1
fi
echo "t_launcher: $checks runs of $launcher: OK"
