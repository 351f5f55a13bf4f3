#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sanitizer builds of the test suite (cmake/sanitize.cmake), natively.
#
#   bash scripts/sanitize.sh [undefined|thread|all]      (default: all)
#
#   undefined  build-ubsan/  the whole tree (library, tests, workloads) with
#              -fsanitize=undefined -fno-sanitize-recover=all; the whole ctest suite except
#              the tests in UBSAN_EXCLUDE below. Any UBSan finding aborts its test.
#   thread     build-tsan/   the library (atomics as __atomic builtins) and the threaded
#              tests with malloc & co. routed to ax_* (tests/common/tsan_route.h), TSan on all of
#              them; ctest -L tsan (the tsan.* tests). Any race report fails its test.
#
# RelWithDebInfo: line numbers in the reports, and -O2 code close to the shipped one.
# Prints each ctest summary; exits non-zero when a stage failed.
#
# Environment (optional): JOBS=2 (build and ctest parallelism), AX_SAN_TIMEOUT=300 (per-test
# timeout for tests without a TIMEOUT property), AX_CMAKE_ARGS="..." (extra configure args).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
# shellcheck source=scripts/lib.sh
source "$ROOT/scripts/lib.sh"

JOBS=${JOBS:-2}
TIMEOUT=${AX_SAN_TIMEOUT:-300}
read -r -a EXTRA_CMAKE_ARGS <<<"${AX_CMAKE_ARGS:-}"

# Not run under UBSan, and why:
#   t_budget     callgrind instruction counts of the Release build (budget.txt); an
#                instrumented build counts other code (not even registered unless Release)
#   t_linkorder  links test programs itself with a plain `cc -static` command line, which
#                cannot link an instrumented libaxmalloc.a (no UBSan runtime on it)
#   t_progs      time only: real programs (CPython's tests, gcc, git, ...) under LD_PRELOAD,
#                4-5 minutes even uninstrumented, over the stage's 3-minute budget; it
#                passes under UBSan (AX_UBSAN_EXCLUDE='^(t_budget|t_linkorder)$' runs it)
UBSAN_EXCLUDE=${AX_UBSAN_EXCLUDE:-'^(t_budget|t_linkorder|t_progs)$'}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# (the tsan.* tests set TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 themselves)

status=0
summaries=()

# UBSan's runtime initializes itself in a constructor that runs after libstdc++'s, which
# already calls malloc. A finding in the allocator before then deadlocks instead of being
# reported (the report initializes UBSan, whose dlsym calls malloc, which hits the same
# finding and waits for the init lock it holds): every test would hang until its timeout.
# So one program runs first; if it hangs, print where and skip the suite.
# pre: <dir> built. post: 0 when the program finished (passed or failed) in time.
ubsan_preflight() {
  local prog=$1/tests/t_api pid
  [[ -x $prog ]] || return 0
  "$prog" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 60); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid"; return 0; }
    sleep 1
  done
  echo "sanitize.sh: $prog hangs after 60 s: a UBSan finding before UBSan's init;" \
    "its stack:" >&2
  if command -v gdb >/dev/null 2>&1; then
    gdb -p "$pid" -batch -ex bt 2>/dev/null | grep -E '^#' | grep -vE '__sanitizer|__ubsan' >&2
  fi
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 1
}

# stage <name> <dir> <build target> <ctest args...>
stage() {
  local name=$1 dir=$2 target=$3 t0=$SECONDS log
  shift 3
  printf '\n==== %s: configure + build (%s)\n' "$name" "$dir"
  # benchmark: the Google Benchmark programs test nothing (the workloads do, and stay)
  if ! ax_configure "$dir" "" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAX_SANITIZE="$name" \
    -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON "${EXTRA_CMAKE_ARGS[@]}" ||
    ! cmake --build "$dir" -j "$JOBS" --target "$target"; then
    summaries+=("$name: configure/build FAILED")
    status=1
    return
  fi
  if [[ $name == undefined ]] && ! ubsan_preflight "$dir"; then
    summaries+=("$name: FAILED (deadlocked UBSan report in the allocator, before UBSan init)")
    status=1
    return
  fi
  printf '\n==== %s: ctest %s\n' "$name" "$*"
  log=$dir/ctest-sanitize.log
  ctest --test-dir "$dir" --output-on-failure -j "$JOBS" --timeout "$TIMEOUT" --no-tests=error \
    "$@" 2>&1 | tee "$log"
  [[ ${PIPESTATUS[0]} == 0 ]] || status=1
  summaries+=("$name: $(grep -E '^[0-9]+% tests passed' "$log" | tail -n 1) ($((SECONDS - t0)) s)")
}

what=${1:-all}
case $what in
undefined | thread | all) ;;
*) echo "usage: $0 [undefined|thread|all]" >&2; exit 2 ;;
esac
if [[ $what == undefined || $what == all ]]; then
  stage undefined build-ubsan all -E "$UBSAN_EXCLUDE"
fi
if [[ $what == thread || $what == all ]]; then
  stage thread build-tsan ax_tsan_tests -L tsan
fi

printf '\n==== sanitize.sh summary\n'
printf '%s\n' "${summaries[@]}"
exit $status
