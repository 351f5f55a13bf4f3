#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run glibc 2.36's own malloc tests (malloc/tst-*.c and malloc/mallocbug.c from Debian's
# glibc-source tarball) against axmalloc: natively first, then preloaded and linked statically.
#
#   bash scripts/glibc_tests.sh [options] <axmalloc-build-dir>
#   bash scripts/glibc_tests.sh --keep-going build
#   AX_GLIBC_TESTS="tst-mallocfork2 tst-malloc-too-large" bash scripts/glibc_tests.sh -j2 build
#
# <axmalloc-build-dir> holds libaxmalloc.so and libaxmalloc.a (a Release build of this tree:
# cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build build).
#
# Nothing of glibc is kept in this repository. The tarball (/usr/src/glibc/glibc-2.36.tar.xz,
# Debian package glibc-source, installed with apt-get when it is missing and we are root) is
# extracted at run time into the work directory (<build>/glibc-tests/ by default). glibc itself is
# not built: everything is compiled there against the system's headers and libc 2.36.
#   shim/     the glibc-internal headers the tests include: libc-diag.h and array_length.h
#             (tarball include/), malloc-size.h and malloc-alignment.h (sysdeps/generic/) as they
#             are; generated here: glibc-tests-config.h (force-included, stands in for config.h:
#             TIMEOUTFACTOR, <limits.h>) and scratch_buffer.h (a self-contained version of
#             glibc's internal buffer, for support_capture_subprocess.c)
#   lib/      libsupport.a: the part of glibc's support/ the tests need (test driver, check.c,
#             failure records, temp files, shared allocations, capture_subprocess, x* wrappers)
#   bin/      each test linked as glibc links it (dynamically; -static for tests-static), and
#             -static with libaxmalloc.a before libc and -Wl,-u,malloc (bin/static/)
#
# Modes, every test in each, in this order (-j runs at a time; within a mode the tests with the
# longest TIMEOUT start first):
#   native   glibc's malloc, as glibc runs the test. Must pass: this proves the harness.
#   preload  LD_PRELOAD=<build>/libaxmalloc.so (UNSUPPORTED for glibc's static-only tests)
#   static   linked -static with libaxmalloc.a. Every binary must contain ax_malloc, except the
#            tst-interpose-* tests, which bring their own malloc (then axmalloc is not linked in
#            and the run checks that the archive on the link line does not get in the way).
# Before the runs, tst-malloc runs once per axmalloc mode with AXMALLOC_VERBOSE=1 and must print
# axmalloc's "axmalloc:" start-up lines: proof that axmalloc is the allocator running.
#
# glibc's conventions: exit 0 PASS, 77 UNSUPPORTED, anything else FAIL. The test driver kills a
# test after its TIMEOUT (the source's #define TIMEOUT, else 20 s) times TIMEOUTFACTOR (env,
# default 1); timeout(1) backs it up, so a hang is a FAIL, never a hang of this script. Tests run
# with the variables malloc/Makefile gives them: tst-malloc-check and tst-malloc-usable run with
# MALLOC_CHECK_=3 LD_PRELOAD=libc_malloc_debug.so.0 natively, and with axmalloc's equivalent,
# AXMALLOC_CHECK=1 (checked mode: malloc_usable_size is the requested size). Other AXMALLOC_*
# variables in the environment reach every axmalloc run. glibc's extra passes with its own
# malloc's options (-mcheck, -malloc-check, -malloc-hugetlb1/2) do not apply to axmalloc.
# Tests of glibc internals are excluded by name: EXCLUDED below, each with its reason.
#
# Output: one line per test and mode, `PASS|FAIL|UNSUPPORTED <mode> <test> (details)`, and
# `EXCLUDED all <test> (reason)`; the log of every run in <work>/logs/<mode>/<test>.log (each
# FAIL line names its log); then the last line:
#   glibc-tests: native P passed, F failed, U unsupported; preload ...; static ...; E excluded
# Exit status: 0 when nothing failed, 1 when any run failed (native: a broken harness), 2 on a
# usage or set-up error. By default no new test starts after the first failure (the summary then
# counts what ran); --keep-going runs and reports everything. About 3 minutes on 2 cores.
#
# Options and environment:
#   -k, --keep-going        AX_GLIBC_KEEP_GOING=1: run everything, whatever fails
#   -j N, --jobs N          JOBS=N: builds and tests at once (default: nproc)
#   --work DIR              AX_GLIBC_WORK=DIR: work directory (default <build>/glibc-tests)
#   AX_GLIBC_TESTS="a b"    only these tests (names as in malloc/, e.g. tst-malloc)
#   AX_GLIBC_MODES="native preload static"   only these modes
#   AX_GLIBC_SKIP="static:tst-x ..."   leave out these tests in these modes
#   AX_GLIBC_TARBALL=path   the glibc 2.36 source tarball
#   TIMEOUTFACTOR=N         scales every test's timeout (glibc's variable, read by its driver)
set -euo pipefail

GLIBC=glibc-2.36
TARBALL=${AX_GLIBC_TARBALL:-/usr/src/glibc/$GLIBC.tar.xz}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
KEEP_GOING=${AX_GLIBC_KEEP_GOING:-0}
WORK=${AX_GLIBC_WORK:-}
read -r -a MODES <<<"${AX_GLIBC_MODES:-native preload static}"
read -r -a SELECTED <<<"${AX_GLIBC_TESTS:-}"
export TIMEOUTFACTOR=${TIMEOUTFACTOR:-1}
# Harness-critical variables from the caller's environment would change every run.
unset LD_PRELOAD MALLOC_CHECK_ MALLOC_PERTURB_ MALLOC_TRACE

# The tests that run, in malloc/Makefile's order (its `tests`, then `tests-static`). mallocbug is
# the one test there without the tst- prefix.
TESTS=(
  mallocbug tst-malloc tst-valloc tst-calloc tst-obstack tst-malloc-check tst-mallocfork
  tst-trim1 tst-malloc-usable tst-realloc tst-reallocarray tst-posix_memalign tst-pvalloc
  tst-pvalloc-fortify tst-memalign tst-malloc-thread-exit tst-malloc-thread-fail
  tst-malloc-fork-deadlock tst-mallocfork2 tst-mallocfork3 tst-interpose-nothread
  tst-interpose-thread tst-free-errno tst-malloc-tcache-leak tst-malloc_info tst-mallinfo2
  tst-malloc-too-large tst-malloc-stats-cancellation tst-mallocalign1
  tst-tcfree1 tst-tcfree2 tst-tcfree3
  tst-interpose-static-nothread tst-interpose-static-thread
)
# glibc's tests-static: glibc links these -static only.
STATIC_ONLY=" tst-interpose-static-nothread tst-interpose-static-thread "
# Sources in malloc/ that are parts of tests, not tests.
HELPERS=" tst-interpose-aux tst-interpose-aux-nothread tst-interpose-aux-thread tst-interpose-skeleton "

# Tests of glibc's internals, not of a malloc: name: reason.
EXCLUDED=(
  "tst-alloc_buffer: glibc-internal alloc_buffer helpers (<alloc_buffer.h>, __libc_alloc_buffer_* GLIBC_PRIVATE), not malloc"
  "tst-dynarray: glibc-internal dynarray framework (tests-internal), memory checked with mtrace"
  "tst-dynarray-fail: glibc-internal dynarray framework (tests-internal), memory checked with mtrace"
  "tst-dynarray-at-fail: glibc-internal dynarray framework (tests-internal): its bounds-check abort message"
  "tst-scratch_buffer: glibc-internal scratch_buffer helpers (tests-internal), not malloc"
  "tst-compathooks-off: __malloc_hook & co., compat symbols of libc_malloc_debug.so"
  "tst-compathooks-on: __malloc_hook & co., compat symbols of libc_malloc_debug.so"
  "tst-mallocstate: malloc_get_state/malloc_set_state (removed in 2.25; glibc's heap dump format)"
  "tst-mtrace: mtrace() of libc_malloc_debug.so, its trace checked by glibc's mtrace script"
  "tst-malloc-usable-tunables: GLIBC_TUNABLES=glibc.malloc.check=3 (its body is tst-malloc-usable, which runs)"
  "tst-mxfast: glibc.malloc.mxfast tunable: fastbins kept empty (mallinfo.smblks)"
  "tst-mallopt: mallopt's parameters are glibc's malloc tunables; axmalloc answers M_PERTURB (glibc.malloc.perturb) with 0, unsupported, instead of filling blocks on its fast paths (t_extras checks every mallopt answer; AXMALLOC_CHECK=1 fills freed blocks)"
  "tst-safe-linking: glibc's pointer mangling in tcache and fastbin free lists (it expects the block freed last to be handed out by the next malloc, as tcache does)"
  "tst-malloc-backtrace: overwrites the chunk header before a freed block and expects glibc's integrity check to abort (chunk layout)"
)

die() { echo "glibc_tests.sh: $*" >&2; exit 2; }
note() { echo "glibc-tests: $*"; }

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

parse_args() {
  BUILD=
  while (($#)); do
    case $1 in
      -k | --keep-going) KEEP_GOING=1 ;;
      -j | --jobs) JOBS=${2:?"$1 needs a number"}; shift ;;
      -j* | --jobs=*) JOBS=${1#-j}; JOBS=${JOBS#--jobs=} ;;
      --work) WORK=${2:?"--work needs a directory"}; shift ;;
      --work=*) WORK=${1#--work=} ;;
      -h | --help) usage; exit 0 ;;
      -*) die "unknown option '$1' (--help)" ;;
      *) [[ -z $BUILD ]] || die "one build directory only (--help)"; BUILD=$1 ;;
    esac
    shift
  done
  [[ -n $BUILD ]] || die "usage: bash scripts/glibc_tests.sh [options] <axmalloc-build-dir> (--help)"
  [[ $JOBS =~ ^[1-9][0-9]*$ ]] || die "bad job count '$JOBS'"
  BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || die "no build directory '$BUILD'"
  AX_SO=$BUILD/libaxmalloc.so AX_A=$BUILD/libaxmalloc.a
  [[ -f $AX_SO && -f $AX_A ]] || die "$BUILD has no libaxmalloc.so and libaxmalloc.a: build axmalloc first"
  WORK=${WORK:-$BUILD/glibc-tests}
  mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd)
  local m
  for m in "${MODES[@]}"; do
    [[ $m == native || $m == preload || $m == static ]] || die "unknown mode '$m' in AX_GLIBC_MODES"
  done
}

ensure_tarball() {
  [[ -f $TARBALL ]] && return
  if [[ $TARBALL == "/usr/src/glibc/$GLIBC.tar.xz" && $(id -u) == 0 ]]; then
    note "installing glibc-source (for $TARBALL)"
    { apt-get install -y --no-install-recommends glibc-source ||
      { apt-get update && apt-get install -y --no-install-recommends glibc-source; }; } >&2 ||
      die "apt-get install glibc-source failed"
  fi
  [[ -f $TARBALL ]] || die "$TARBALL is missing: install it with 'apt-get install glibc-source' (as root), or set AX_GLIBC_TARBALL"
}

check_libc() {
  local v
  v=$(getconf GNU_LIBC_VERSION 2>/dev/null || true)
  [[ $v == "glibc 2.36" ]] || note "warning: the system libc is '$v', the tests are from $GLIBC"
  MALLOC_DEBUG_SO=$(readlink -f "$(dirname "$(gcc -print-file-name=libc.so.6)")")/libc_malloc_debug.so.0
  [[ -f $MALLOC_DEBUG_SO ]] || note "warning: $MALLOC_DEBUG_SO is missing (native tst-malloc-check, tst-malloc-usable)"
}

# ---- sources and shims -------------------------------------------------------------------

extract_sources() {
  local id
  id="$TARBALL $(stat -c '%s %Y' "$TARBALL")"
  SRC=$WORK/src/$GLIBC
  [[ -f $WORK/src/.stamp && $(cat "$WORK/src/.stamp") == "$id" ]] && return
  rm -rf "$WORK/src" && mkdir -p "$WORK/src"
  tar -xJf "$TARBALL" -C "$WORK/src" "$GLIBC/malloc" "$GLIBC/support" "$GLIBC/test-skeleton.c" \
    "$GLIBC/include/libc-diag.h" "$GLIBC/include/array_length.h" \
    "$GLIBC/sysdeps/generic/malloc-size.h" "$GLIBC/sysdeps/generic/malloc-alignment.h" ||
    die "cannot extract $TARBALL"
  echo "$id" >"$WORK/src/.stamp"
}

write_shims() {
  SHIM=$WORK/shim
  rm -rf "$SHIM" && mkdir -p "$SHIM"
  # <support/...>, <malloc/...> as the tests name them
  ln -s "$SRC/support" "$SHIM/support"
  ln -s "$SRC/malloc" "$SHIM/malloc"
  # glibc-internal headers that work against the system headers as they are
  ln -s "$SRC/include/libc-diag.h" "$SRC/include/array_length.h" "$SHIM/"
  ln -s "$SRC/sysdeps/generic/malloc-size.h" "$SRC/sysdeps/generic/malloc-alignment.h" "$SHIM/"
  cat >"$SHIM/glibc-tests-config.h" <<'EOF'
/* Written by axmalloc's scripts/glibc_tests.sh; force-included into every file. Stands in for
   what glibc's config.h and include/ wrappers give its tests. */
#define TIMEOUTFACTOR 1   /* the default; the driver reads the TIMEOUTFACTOR variable */
#include <limits.h>       /* NAME_MAX, PATH_MAX for support/ */
EOF
  cat >"$SHIM/scratch_buffer.h" <<'EOF'
/* Written by axmalloc's scripts/glibc_tests.sh: the part of glibc's internal scratch_buffer
   that support/ uses, self-contained (glibc's calls __libc_scratch_buffer_grow, GLIBC_PRIVATE). */
#ifndef _SCRATCH_BUFFER_H
#define _SCRATCH_BUFFER_H 1
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
struct scratch_buffer
{
  void *data;
  size_t length;
  union { max_align_t __align; char __c[1024]; } __space;
};
static inline void
scratch_buffer_init (struct scratch_buffer *buffer)
{
  buffer->data = buffer->__space.__c;
  buffer->length = sizeof (buffer->__space);
}
static inline void
scratch_buffer_free (struct scratch_buffer *buffer)
{
  if (buffer->data != buffer->__space.__c)
    free (buffer->data);
}
/* Grow the buffer (contents not preserved); on failure it is freed, reset and errno set. */
static inline bool
scratch_buffer_grow (struct scratch_buffer *buffer)
{
  size_t length = buffer->length * 2;
  scratch_buffer_free (buffer);
  scratch_buffer_init (buffer);
  if (length < buffer->length)
    {
      errno = ENOMEM;
      return false;
    }
  void *data = malloc (length);
  if (data == NULL)
    return false;
  buffer->data = data;
  buffer->length = length;
  return true;
}
#endif
EOF
}

# Every malloc/tst-*.c must be a test, an exclusion or a helper.
check_classified() {
  local f t
  for f in "$SRC"/malloc/tst-*.c; do
    t=$(basename "$f" .c)
    [[ " ${TESTS[*]} " == *" $t "* || $HELPERS == *" $t "* ]] || excluded_reason "$t" >/dev/null ||
      note "warning: $t is neither run nor excluded"
  done
}

excluded_reason() {
  local e
  for e in "${EXCLUDED[@]}"; do
    [[ ${e%%:*} == "$1" ]] && { echo "${e#*: }"; return 0; }
  done
  return 1
}

# ---- build ---------------------------------------------------------------------------------

# run_parallel FUNC ARG...: FUNC ARG for every ARG, JOBS at a time. Fails if any call failed.
run_parallel() {
  local func=$1 n=0 rc=0 arg
  shift
  for arg in "$@"; do
    "$func" "$arg" &
    n=$((n + 1))
    if ((n >= JOBS)); then
      wait -n || rc=1
      n=$((n - 1))
    fi
  done
  while ((n > 0)); do
    wait -n || rc=1
    n=$((n - 1))
  done
  return "$rc"
}

# The support/ files the tests need, plus the wrappers and helpers around them (what is not
# referenced is not linked).
SUPPORT_SRCS=(
  support_test_main check support_record_failure support_test_verify_impl
  support_test_compare_failure write_message ignore_stderr oom_error delayed_exit support_paths
  support_shared_allocate temp_file support_capture_subprocess support_capture_subprocess_check
  support_subprocess xmemstream
  xmalloc xcalloc xrealloc xstrdup xasprintf xposix_memalign
  xfork xwaitpid xpipe xclose xdup2 xwrite xopen xfopen xfclose xchdir xsysconf
  xmmap xmunmap xmprotect xsignal xsigaction xraise
  xpthread_create xpthread_join xpthread_detach xpthread_cancel xpthread_kill
  xpthread_check_return xpthread_attr_init xpthread_attr_destroy xpthread_attr_setstacksize
  xpthread_attr_setdetachstate xpthread_barrier_init xpthread_barrier_wait
  xpthread_barrier_destroy xpthread_barrierattr_init xpthread_barrierattr_destroy
  xpthread_barrierattr_setpshared xpthread_mutex_init xpthread_mutex_lock xpthread_mutex_unlock
  xpthread_mutex_destroy xpthread_cond_wait xpthread_cond_signal xpthread_sigmask xpthread_once
)

set_flags() {
  # glibc's test flags (Makeconfig), against the system headers; TEST_NO_MALLOPT as malloc/Makefile
  CFLAGS_ALL=(-std=gnu11 -fgnu89-inline -O2 -g -fmerge-all-constants -frounding-math -fno-common
    -pthread -D_GNU_SOURCE -include "$SHIM/glibc-tests-config.h" -I"$SHIM")
  CFLAGS_SUPPORT=("${CFLAGS_ALL[@]}" -I"$SRC/support" -D_FILE_OFFSET_BITS=64 -D_TIME_BITS=64)
  CFLAGS_TEST=("${CFLAGS_ALL[@]}" -DTEST_NO_MALLOPT)
}

compile_support() {
  local f=$1 extra=()
  if [[ $f == support_paths ]]; then
    extra=(-DSRCDIR_PATH="\"$SRC\"" -DOBJDIR_PATH="\"$WORK\""
      -DOBJDIR_ELF_LDSO_PATH="\"$WORK/elf/ld.so\"" -DINSTDIR_PATH='"/usr"'
      -DLIBDIR_PATH='"/usr/lib"' -DBINDIR_PATH='"/usr/bin"' -DSBINDIR_PATH='"/usr/sbin"'
      -DSLIBDIR_PATH='"/lib"' -DROOTSBINDIR_PATH='"/sbin"' -DCOMPLOCALEDIR_PATH='"/usr/lib/locale"')
  fi
  gcc "${CFLAGS_SUPPORT[@]}" "${extra[@]}" -c "$SRC/support/$f.c" -o "$WORK/obj/support/$f.o" \
    >"$WORK/build-logs/support-$f.log" 2>&1 ||
    { echo "glibc_tests.sh: support/$f.c does not compile:" >&2; cat "$WORK/build-logs/support-$f.log" >&2; return 1; }
}

build_support() {
  mkdir -p "$WORK/obj/support" "$WORK/lib"
  run_parallel compile_support "${SUPPORT_SRCS[@]}" || die "building glibc's support/ failed"
  ar rcs "$WORK/lib/libsupport.a" "$WORK"/obj/support/*.o
}

aux_object() {
  case $1 in
    tst-interpose*-nothread) echo "$WORK/obj/tst-interpose-aux-nothread.o" ;;
    tst-interpose*-thread) echo "$WORK/obj/tst-interpose-aux-thread.o" ;;
  esac
}

# build_test TEST: bin/native/TEST as glibc links it, bin/static/TEST with libaxmalloc.a. A
# failure leaves bin/<kind>/TEST.failed holding what went wrong.
build_test() {
  local t=$1 log=$WORK/build-logs/$1.log obj=$WORK/obj/$1.o native=() aux=()
  [[ -z $(aux_object "$t") ]] || aux=("$(aux_object "$t")")
  : >"$log"
  if ! gcc "${CFLAGS_TEST[@]}" -c "$SRC/malloc/$t.c" -o "$obj" >>"$log" 2>&1; then
    echo "does not compile" >"$WORK/bin/native/$t.failed"
    echo "does not compile" >"$WORK/bin/static/$t.failed"
    return 0
  fi
  [[ $STATIC_ONLY == *" $t "* ]] && native=(-static)
  gcc "${native[@]}" -pthread -o "$WORK/bin/native/$t" "$obj" "${aux[@]}" "$WORK/lib/libsupport.a" >>"$log" 2>&1 ||
    echo "does not link" >"$WORK/bin/native/$t.failed"
  # axmalloc before libc (gcc adds -lc last); -u malloc pulls it in even if the test never calls malloc
  if ! gcc -static -pthread -o "$WORK/bin/static/$t" "$obj" "${aux[@]}" "$WORK/lib/libsupport.a" "$AX_A" \
    -Wl,-u,malloc >>"$log" 2>&1; then
    if gcc -static -pthread -o "$WORK/bin/static/$t.glibc" "$obj" "${aux[@]}" "$WORK/lib/libsupport.a" >/dev/null 2>&1; then
      echo "links -static with glibc's malloc, but not with libaxmalloc.a" >"$WORK/bin/static/$t.failed"
    else
      echo "unsupported: does not link -static even with glibc's malloc" >"$WORK/bin/static/$t.failed"
    fi
  fi
}

build_tests() {
  mkdir -p "$WORK/bin/native" "$WORK/bin/static"
  local a
  for a in nothread thread; do
    gcc "${CFLAGS_TEST[@]}" -c "$SRC/malloc/tst-interpose-aux-$a.c" -o "$WORK/obj/tst-interpose-aux-$a.o" \
      >"$WORK/build-logs/tst-interpose-aux-$a.log" 2>&1 || die "malloc/tst-interpose-aux-$a.c does not compile"
  done
  run_parallel build_test "$@"
}

# ---- runs ----------------------------------------------------------------------------------

# test_timeout TEST: the source's TIMEOUT (glibc's driver default: 20 s)
test_timeout() {
  local t
  t=$(awk '$1 == "#define" && $2 == "TIMEOUT" { print $3; exit }' "$SRC/malloc/$1.c")
  echo "${t:-20}"
}

# set_env MODE TEST: MODE_ENV, what the mode sets, and TEST_ENV, what malloc/Makefile sets for
# the test (tst-*-ENV) or, for axmalloc, its equivalent.
set_env() {
  MODE_ENV=() TEST_ENV=()
  [[ $1 == preload ]] && MODE_ENV=("LD_PRELOAD=$AX_SO")
  case $2 in
    tst-malloc-check | tst-malloc-usable)
      if [[ $1 == native ]]; then
        TEST_ENV=(MALLOC_CHECK_=3 "LD_PRELOAD=$MALLOC_DEBUG_SO")
      else
        TEST_ENV=(AXMALLOC_CHECK=1)
      fi ;;
  esac
}

# reap_session SID: kills what is left in the session of a run (descendants of a test that its
# driver did not reap; glibc's driver puts the test in its own process group, not session).
reap_session() {
  local f line fields
  [[ $1 =~ ^[0-9]+$ ]] || return 0
  for f in /proc/[0-9]*/stat; do
    read -r line 2>/dev/null <"$f" || continue
    read -r -a fields <<<"${line##*) }"
    [[ ${fields[3]:-} == "$1" ]] && kill -KILL "${f//[^0-9]/}" 2>/dev/null
  done
  return 0
}

# On exit (also on ^C): the sessions of the runs still going.
reap_all() {
  local f
  for f in "$WORK"/run/*/*.sid; do
    [[ -f $f ]] && reap_session "$(<"$f")"
  done
  return 0
}

first_error() {
  grep -m1 -aE "error|Error|FAIL|not true|Timed out|axmalloc:|Didn't expect|Expected|Incorrect|Aborted|Segmentation" "$1" |
    cut -c1-160 || true
}

# run_test MODE TEST: runs it, prints the result line.
run_test() {
  local mode=$1 t=$2 bin=$WORK/bin/$1/$2 log=$WORK/logs/$1/$2.log dir=$WORK/run/$1/$2
  local limit ext rc=0 t0 secs why note=
  [[ $mode == preload ]] && bin=$WORK/bin/native/$t
  if [[ $mode == preload && $STATIC_ONLY == *" $t "* ]]; then
    echo "UNSUPPORTED $mode $t (static program: LD_PRELOAD does not apply)"
    return
  fi
  if [[ -f $bin.failed ]]; then
    why=$(cat "$bin.failed")
    if [[ $why == unsupported:* ]]; then
      echo "UNSUPPORTED $mode $t (${why#unsupported: })"
    else
      echo "FAIL $mode $t ($why; log $WORK/build-logs/$t.log)"
    fi
    return
  fi
  if [[ $mode == static ]] && ! grep -qE ' [TW] ax_malloc$' < <(nm "$bin"); then
    if [[ $t != tst-interpose* ]]; then
      echo "FAIL $mode $t (axmalloc is not linked in; log $WORK/build-logs/$t.log)"
      return
    fi
    note=", the test's own malloc: libaxmalloc.a not linked in"
  fi
  [[ $mode == preload && $t == tst-interpose* ]] && note=", the test's own malloc interposes over axmalloc's"
  set_env "$mode" "$t"
  ((${#TEST_ENV[@]} == 0)) || note+=", ${TEST_ENV[*]}"
  limit=$(($(test_timeout "$t") * TIMEOUTFACTOR))
  ext=$((limit + 15))
  rm -rf "$dir" && mkdir -p "$dir" "$(dirname "$log")"
  t0=$(date +%s%N)
  # In a session of its own (its id in $dir.sid), so that nothing of it outlives the run.
  # SIGINT: glibc's driver catches it and kills the test's process group itself.
  # shellcheck disable=SC2016
  (cd "$dir" && exec setsid sh -c 'echo $$ >"$0"; exec "$@"' "$dir.sid" env LC_ALL=C TMPDIR="$dir" \
    "${MODE_ENV[@]}" "${TEST_ENV[@]}" timeout -s INT -k 10 "$ext" "$bin") </dev/null >"$log" 2>&1 || rc=$?
  secs=$(awk -v ns=$(($(date +%s%N) - t0)) 'BEGIN { printf "%.1f", ns / 1e9 }')
  [[ ! -f $dir.sid ]] || reap_session "$(<"$dir.sid")"
  rm -f "$dir.sid"
  case $rc in
    0) echo "PASS $mode $t (${secs} s$note)"; rm -rf "$dir"; return ;;
    77) echo "UNSUPPORTED $mode $t (${secs} s$note: $(first_error "$log"); log $log)"; rm -rf "$dir"; return ;;
    124 | 137) why="timed out: killed by timeout(1) after ${ext} s" ;;
    *)
      if grep -q '^Timed out' "$log"; then
        why="timed out: glibc's driver killed it after ${limit} s (TIMEOUT x TIMEOUTFACTOR)"
      elif ((rc > 128)); then
        why="killed by signal $((rc - 128))"
      else
        why="exit $rc"
      fi ;;
  esac
  echo "FAIL $mode $t ($why, ${secs} s$note: $(first_error "$log"); log $log)"
}

# probe MODE: tst-malloc under MODE with AXMALLOC_VERBOSE=1 must print axmalloc's start-up
# lines (whatever the test's own verdict, which its regular run reports).
probe() {
  local mode=$1 bin=$WORK/bin/static/tst-malloc log=$WORK/logs/probe-$1.log pre=()
  [[ $mode == preload ]] && bin=$WORK/bin/native/tst-malloc pre=("LD_PRELOAD=$AX_SO")
  [[ -x $bin ]] || die "probe: $bin was not built (see $WORK/build-logs/tst-malloc.log)"
  mkdir -p "$WORK/logs"
  (cd "$WORK/run" && exec env "${pre[@]}" AXMALLOC_VERBOSE=1 TMPDIR="$WORK/run" \
    timeout -s INT -k 5 60 "$bin") </dev/null >"$log" 2>&1 || true
  grep -q '^axmalloc:' "$log" ||
    die "probe: axmalloc is not running in $mode mode: AXMALLOC_VERBOSE=1 tst-malloc printed no 'axmalloc:' line (log $log)"
  note "axmalloc runs in $mode mode (AXMALLOC_VERBOSE=1 tst-malloc: $(grep -m1 '^axmalloc:' "$log" | cut -c1-90))"
}

# run_all TASK...: each task "MODE TEST", JOBS at a time; prints the results in task order.
# Without --keep-going no task starts after the first failure.
run_all() {
  local tasks=("$@") n=$# next=0 printed=0 running=0 stop=0 line i
  RES=$WORK/results
  rm -rf "$RES" && mkdir -p "$RES"
  while ((printed < next || (next < n && stop == 0))); do
    while ((running < JOBS && next < n && stop == 0)); do
      # shellcheck disable=SC2086
      (run_test ${tasks[next]} >"$RES/$next.tmp" && mv "$RES/$next.tmp" "$RES/$next") &
      next=$((next + 1)) running=$((running + 1))
    done
    if ((running > 0)); then
      wait -n || true
      running=$((running - 1))
    fi
    # a failure stops new starts at once, even while earlier results are still being awaited
    for ((i = printed; i < next && KEEP_GOING != 1; i++)); do
      [[ -f $RES/$i && $(<"$RES/$i") == FAIL* ]] && stop=1
    done
    while ((printed < next)) && [[ -f $RES/$printed ]]; do
      line=$(cat "$RES/$printed")
      echo "$line"
      count "$line"
      [[ $line != FAIL* || $KEEP_GOING == 1 ]] || stop=1
      printed=$((printed + 1))
    done
  done
  NOT_STARTED=$((n - next))
}

declare -A COUNT
count() {
  local status=${1%% *} mode
  mode=${1#* } mode=${mode%% *}
  COUNT[$mode.$status]=$((${COUNT[$mode.$status]:-0} + 1))
}

summary() {
  local m line="glibc-tests:"
  for m in native preload static; do
    line+=" $m ${COUNT[$m.PASS]:-0} passed, ${COUNT[$m.FAIL]:-0} failed, ${COUNT[$m.UNSUPPORTED]:-0} unsupported;"
  done
  echo "$line $EXCLUDED_COUNT excluded"
}

main() {
  parse_args "$@"
  ensure_tarball
  check_libc
  local t0=$SECONDS t reason run=() tasks=() m
  # the tests asked for: run ones, excluded ones, unknown names
  if ((${#SELECTED[@]} == 0)); then
    run=("${TESTS[@]}")
    SELECTED=("${TESTS[@]}")
    for reason in "${EXCLUDED[@]}"; do SELECTED+=("${reason%%:*}"); done
  else
    for t in "${SELECTED[@]}"; do
      if [[ " ${TESTS[*]} " == *" $t "* ]]; then run+=("$t")
      elif ! excluded_reason "$t" >/dev/null; then die "unknown test '$t' (AX_GLIBC_TESTS)"; fi
    done
  fi
  rm -rf "${WORK:?}"/{obj,lib,bin,logs,run,results,build-logs}
  mkdir -p "$WORK/build-logs" "$WORK/run"
  extract_sources
  write_shims
  set_flags
  check_classified
  note "$GLIBC malloc tests in $WORK against $BUILD (-j$JOBS, TIMEOUTFACTOR=$TIMEOUTFACTOR)"
  build_support
  # tst-malloc is always built: it is the probe
  local build=("${run[@]}")
  [[ " ${run[*]} " == *" tst-malloc "* ]] || build+=(tst-malloc)
  build_tests "${build[@]}"
  note "built in $((SECONDS - t0)) s"
  for m in "${MODES[@]}"; do [[ $m == native ]] || probe "$m"; done

  EXCLUDED_COUNT=0
  for t in "${SELECTED[@]}"; do
    if reason=$(excluded_reason "$t"); then
      echo "EXCLUDED all $t ($reason)"
      EXCLUDED_COUNT=$((EXCLUDED_COUNT + 1))
    fi
  done
  # within each mode the longest TIMEOUTs start first: they bound the wall time
  local ordered
  mapfile -t ordered < <(for t in "${run[@]}"; do echo "$(test_timeout "$t") $t"; done |
    sort -s -k1,1nr | cut -d' ' -f2)
  for m in "${MODES[@]}"; do
    for t in "${ordered[@]}"; do
      if [[ " ${AX_GLIBC_SKIP:-} " == *" $m:$t "* ]]; then
        echo "SKIPPED $m $t (AX_GLIBC_SKIP)"
      else
        tasks+=("$m $t")
      fi
    done
  done
  NOT_STARTED=0
  trap reap_all EXIT
  ((${#tasks[@]} == 0)) || run_all "${tasks[@]}"
  ((NOT_STARTED == 0)) ||
    note "stopped after the first failure: $NOT_STARTED runs not started (--keep-going runs them all)"
  note "$((SECONDS - t0)) s in all; logs in $WORK/logs"
  summary
  local failed=0
  for m in native preload static; do failed=$((failed + ${COUNT[$m.FAIL]:-0})); done
  ((failed == 0))
}

main "$@"
