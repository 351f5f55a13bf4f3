#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2016 # the workload snippets are single-quoted: they expand when run
# t_progs: large real programs with and without LD_PRELOAD=libaxmalloc.so. Each workload
# runs twice, plainly and preloaded with AXMALLOC_STATS=1; the two runs must exit with the
# same status and print the same stdout, and the preloaded run must show on stderr an
# "axmalloc stats (pid N):" report with a non-zero mallocs count (axmalloc really served it).
#
# usage: [T_PROGS="python sqlite3 ..."] t_progs.sh /path/to/libaxmalloc.so
#   T_PROGS picks some of the workloads (python sqlite3 lua perl gcc git stress-ng); default all.
#   T_PROGS_KEEP=1 keeps the work directory (inputs, and stdout/stderr/rc of every run).
#
# Workloads (inputs under tests/integration/progs/): a slice of CPython's regression suite (Debian's
# libpython3.11-testsuite, PYTHONMALLOC=malloc, verdicts compared), sqlite3 on a generated
# 200k-insert SQL script, lua5.4 and perl allocation-heavy scripts, gcc -O2 on a generated
# C file (object bytes compared), git (commits, merge, log, gc, fsck), and stress-ng's
# malloc stressor (its verdict compared). A missing program is a failure, not a skip: CI
# installs them all (scripts/deps.sh). About 2-3 minutes on 2 cores.
#
# Each workload is a bash snippet that starts its programs as "$RUN" prog ...: RUN names a
# wrapper that execs the program plainly or with axmalloc preloaded, so helper tools of the
# snippet (awk, sha256sum, objdump) never run under the preload and the stats on stderr
# come from the programs under test only. The snippet writes files into $OUT, and finds
# the workload files in $P (tests/integration/progs) and the generated inputs in $W.
set -u
LIB=${1:?usage: t_progs.sh /path/to/libaxmalloc.so}
LIB=$(readlink -f "$LIB")
[ -f "$LIB" ] || { echo "t_progs: $LIB not found"; exit 1; }
HERE=$(cd "$(dirname "$0")" && pwd)
export P=$HERE/progs

export LC_ALL=C TZ=UTC
unset AXMALLOC_STATS LD_PRELOAD PYTHONMALLOC PYTHONHASHSEED

W=$(mktemp -d "${TMPDIR:-/tmp}/t_progs.XXXXXX") || exit 1
export W
if [ -n "${T_PROGS_KEEP:-}" ]; then
  echo "t_progs: work directory $W (kept)"
else
  trap 'rm -rf "$W"' EXIT
fi
fails=0
ncase=0
npass=0
LIMIT=400 # seconds per run: a hang fails the case instead of the whole ctest timeout

printf '#!/bin/bash\nexec "$@"\n' >"$W/plain"
printf '#!/bin/bash\nexport LD_PRELOAD=%q AXMALLOC_STATS=1\nexec "$@"\n' "$LIB" >"$W/ax"
chmod +x "$W/plain" "$W/ax"

fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

# want NAME: true when the workload NAME is selected (T_PROGS).
want() {
  [ -z "${T_PROGS:-}" ] || [[ " $T_PROGS " == *" $1 "* ]]
}

# secs NS: nanoseconds as seconds with one decimal.
secs() {
  local ds=$(($1 / 100000000))
  echo "$((ds / 10)).$((ds % 10))s"
}

# need NAME PACKAGE PROGRAM...: true when every PROGRAM exists; otherwise a failure of the
# case NAME that names the Debian package to install.
need() {
  local name=$1 pkg=$2 t
  shift 2
  for t in "$@"; do
    if ! command -v "$t" >/dev/null 2>&1; then
      ncase=$((ncase + 1))
      fail "$name: '$t' not found: install the Debian package $pkg (scripts/deps.sh does)"
      return 1
    fi
  done
}

# stats_check NAME FILE: FILE (stderr of a preloaded run) holds at least one axmalloc
# report and one of them counts mallocs > 0. Sets STATS to "<n> reports, mallocs up to <max>".
stats_check() {
  local name=$1 file=$2 nrep maxm
  read -r nrep maxm < <(awk '/^axmalloc stats \(pid [0-9]+\):$/ { n++; want = 1; next }
             want && $1 == "mallocs" { if ($2 + 0 > max) max = $2 + 0; want = 0 }
             END { print n + 0, max + 0 }' "$file")
  if [ "$nrep" -eq 0 ]; then
    fail "$name: the preloaded run printed no 'axmalloc stats (pid N):' (axmalloc not used?)"
  elif [ "$maxm" -eq 0 ]; then
    fail "$name: axmalloc stats say mallocs 0 in all $nrep report(s)"
  fi
  STATS="$nrep reports, mallocs up to $maxm"
}

# run_prog NAME WHAT SNIPPET: runs SNIPPET plainly and preloaded (see the header), compares
# exit status and stdout, checks the stats, prints one result line.
run_prog() {
  local name=$1 what=$2 snippet=$3 mode t0 t1
  ncase=$((ncase + 1))
  declare -A ns
  for mode in plain ax; do
    local d="$W/$name.$mode"
    mkdir -p "$d/out/tmp"
    t0=$(date +%s%N)
    (cd "$d/out" && RUN="$W/$mode" OUT="$d/out" TMPDIR="$d/out/tmp" \
      timeout -k 10 "$LIMIT" bash -c "$snippet" >"$d/stdout" 2>"$d/stderr")
    echo $? >"$d/rc"
    t1=$(date +%s%N)
    ns[$mode]=$((t1 - t0))
  done
  local r="$W/$name.plain" a="$W/$name.ax" fails0=$fails
  local rc_r rc_a
  rc_r=$(cat "$r/rc")
  rc_a=$(cat "$a/rc")
  STATS=
  if [ "$rc_r" != 0 ]; then
    fail "$name: the plain run (no preload) exited $rc_r: $(tail -c 600 "$r/stderr")"
  else
    # The tail of stderr without the stats reports (their lines start with spaces).
    [ "$rc_r" = "$rc_a" ] ||
      fail "$name: exit status $rc_r plain, $rc_a preloaded:" \
        "$(grep -v '^ ' "$a/stderr" | tail -c 600)"
    if ! cmp -s "$r/stdout" "$a/stdout"; then
      fail "$name: stdout differs when preloaded" \
        "($(wc -l <"$r/stdout") vs $(wc -l <"$a/stdout") lines):"
      diff "$r/stdout" "$a/stdout" | head -n 20
    fi
    stats_check "$name" "$a/stderr"
  fi
  local verdict=FAIL
  if [ "$fails" -eq "$fails0" ]; then
    verdict=ok
    npass=$((npass + 1))
  fi
  printf '%-4s %-9s plain %7s  axmalloc %7s  %s; %s lines of output; %s\n' "$verdict" \
    "$name" "$(secs "${ns[plain]}")" "$(secs "${ns[ax]}")" "$what" "$(wc -l <"$r/stdout")" \
    "${STATS:-no stats}"
}

echo "t_progs: $LIB"

# ---- python3: a slice of CPython's regression suite ------------------------------------
# Debian's interpreter (the test package matches it), not a pyenv shim. PYTHONMALLOC=malloc
# sends every object allocation to malloc instead of pymalloc's arenas. The tests are
# deterministic, need no network and allocate a lot (containers, text, parsing, pickling).
# The verdict lines of `-m test -v` are compared, without timings.
export PY=/usr/bin/python3
export PYTESTS="test_dict test_list test_set test_tuple test_unicode test_bytes test_string
  test_format test_fstring test_json test_re test_collections test_deque test_heapq
  test_bisect test_sort test_itertools test_functools test_array test_struct test_copy
  test_pickle test_long test_int test_float test_decimal test_fractions test_enum
  test_dataclasses test_textwrap test_difflib test_codecs test_unicodedata test_csv
  test_zlib test_binascii test_base64 test_marshal test_memoryview test_types test_builtin
  test_descr test_exceptions test_xml_etree test_minidom test_pprint test_userdict
  test_userlist test_defaultdict test_dictviews test_genexps test_listcomps test_grammar
  test_ast"
if ! want python; then
  :
elif [ ! -x "$PY" ]; then
  ncase=$((ncase + 1))
  fail "python: $PY not found: install the Debian package python3"
elif ! "$PY" -c 'import test.libregrtest, test.test_dict' 2>/dev/null; then
  ncase=$((ncase + 1))
  fail "python: $PY has no regression tests: install the Debian package libpython3.11-testsuite"
else
  run_prog python "$(wc -w <<<"$PYTESTS") CPython test modules (regrtest -v)" '
    PYTHONMALLOC=malloc PYTHONHASHSEED=0 "$RUN" "$PY" "$P/regrtest.py" $PYTESTS >"$OUT/log"
    rc=$?
    # one line per test method with its verdict, the unittest and regrtest summaries
    grep -E -e " \.\.\. (ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)$" \
      -e "^Ran [0-9]+ test|^(OK|FAILED)( \(.*\))?$|^Tests result:|^All [0-9]+ tests OK" \
      -e "tests? (failed|skipped)" "$OUT/log" | sed -E "s/^(Ran [0-9]+ tests?) in .*/\1/"
    exit $rc'
fi

# ---- sqlite3: a generated 200k-insert script ------------------------------------------
if want sqlite3 && need sqlite3 sqlite3 sqlite3 && need sqlite3 python3 python3; then
  python3 "$P/gen_sql.py" 200000 >"$W/big.sql" || fail "sqlite3: gen_sql.py failed"
  run_prog sqlite3 "200k inserts, indexes, joins, windows, CTEs" \
    '"$RUN" sqlite3 -batch "$OUT/db.sqlite" <"$W/big.sql"'
fi

# ---- lua5.4 ------------------------------------------------------------------------------
want lua && need lua lua5.4 lua5.4 &&
  run_prog lua "tables, strings, closures, coroutines, GC" \
    '"$RUN" lua5.4 "$P/alloc.lua" 200000'

# ---- perl --------------------------------------------------------------------------------
want perl && need perl perl perl &&
  run_prog perl "hashes, regexes, sorts, nested data" \
    '"$RUN" perl "$P/alloc.pl" 150000'

# ---- gcc -O2 on a large generated file ---------------------------------------------------
if want gcc && need gcc gcc gcc objdump && need gcc python3 python3; then
  python3 "$P/gen_c.py" 600 >"$W/big.c" || fail "gcc: gen_c.py failed"
  run_prog gcc "gcc -O2 -c, $(wc -l <"$W/big.c") lines of C; object bytes" \
    '"$RUN" gcc -O2 -c -o "$OUT/big.o" "$W/big.c" || exit
    sha256sum <"$OUT/big.o"
    objdump -d "$OUT/big.o" | tail -n +3 | sha256sum
    objdump -d "$OUT/big.o" | grep -c "^ "'
fi

# ---- git ---------------------------------------------------------------------------------
want git && need git git git &&
  run_prog git "1000 files, 23 commits, merge, log, diff, gc, fsck" \
    'bash "$P/git.sh" "$OUT"'

# ---- stress-ng's malloc stressor -------------------------------------------------------
# Random by design: only its verdict is compared. Workers are forked and leave with
# _exit(), so the stats come from the parent; the workers call the same (preloaded)
# malloc. Bounded by operation counts, and by --timeout.
want stress-ng && need stress-ng stress-ng stress-ng &&
  run_prog stress-ng "malloc stressor, threads and 4 MiB blocks, --verify" '
    rc=0
    for opts in "--malloc-pthreads 2 --malloc-ops 100000 --malloc-touch" \
                "--malloc-bytes 4M --malloc-max 500 --malloc-ops 30000 --malloc-zerofree"; do
      "$RUN" stress-ng --malloc 2 $opts --verify --timeout 20s --metrics-brief 2>"$OUT/log" || rc=$?
      cat "$OUT/log" >&2
      grep -o "successful run completed" "$OUT/log" || rc=1
      grep -iE "fail|error" "$OUT/log" | grep -v "^ "
    done
    exit $rc'

[ "$ncase" -gt 0 ] || { echo "t_progs: no workload selected (T_PROGS=$T_PROGS)"; exit 1; }
if [ "$fails" -ne 0 ]; then
  echo "t_progs: $fails failure(s); $npass of $ncase programs passed"
  exit 1
fi
echo "t_progs: all $ncase programs identical with and without axmalloc, and served by it: OK"
