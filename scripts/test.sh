#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install deps, build, and run every test: natively, then for AArch64 under qemu-user.
#
#   bash scripts/test.sh
#
# Stages (each runs even when an earlier one failed; the script exits non-zero if any did):
#   format              every C and C++ file in the repository as .clang-format wants it
#                       (clang-format --dry-run --Werror)
#   native              build/               Release, ctest -j2; as root this includes t_package,
#                       which builds the Debian packages (cpack -G DEB), installs them on this
#                       machine, uses them and purges them again (skipped when not root)
#   native/force-mt     the same build with AXMALLOC_FORCE_MT=1 (atomics while single-threaded)
#   native/loaded       the `quick` tests twice with `stress-ng --cpu 2` beside them: a test
#                       that fails once under load is a bug (docs/testing.md, "Flaky tests")
#   native/prof         ... with the heap profiler sampling every 4 KiB (AXMALLOC_PROF=1
#                       AXMALLOC_PROF_SAMPLE=4096), but for the tests labelled `noprof`, which
#                       pin down what it changes by design (tests/common/paths.cmake)
#   native/isa=<k>      ... with AXMALLOC_FORCE_ISA=<k> for each x86 bulk kernel (the tests
#                       labelled `kernel`, tests/common/paths.cmake)
#   native/page=<n>     ... with AXMALLOC_PAGE_SIZE=16384 and 65536
#   native/thp=<v>[,page=<n>] ... with AXMALLOC_THP=never and always (auto is the default), on
#                       4, 16 and 64 KiB pages: the tests labelled `thp` (tests/common/paths.cmake)
#   glibc-tests         scripts/glibc_tests.sh: glibc 2.36's own malloc/tst-* (Debian's
#                       glibc-source) preloaded and linked statically against build/
#   glibc-tests/prof    ... 14 of them again with the heap profiler sampling every 4 KiB
#   aarch64-runtime/*   build-aarch64/       toolchain/aarch64-linux-gnu.cmake, atomics chosen at
#                       run time; ctest under qemu-aarch64 with QEMU_CPU=max (LSE, SVE) and
#                       cortex-a57 (ARMv8.0, no LSE) with forced MT, 64 KiB pages with memory
#                       tagging (AXMALLOC_MTE=1, max; 16 KiB pages: the native pass), each
#                       NEON kernel (`kernel` tests), the heap profiler on (as native/prof),
#                       AXMALLOC_THP=always on 4 and 16 KiB pages and never on 64 KiB (`thp`)
#   aarch64-lse/max     build-aarch64-lse/   -DAX_AARCH64_ATOMICS=lse (needs an ARMv8.1 CPU);
#                       this and the next two build and run only the `atomics` and `race`
#                       tests (the atomic primitives, and threads interleaved at the
#                       remote-free points: target ax_race_tests)
#   aarch64-llsc/cortex-a57 build-aarch64-llsc/ -DAX_AARCH64_ATOMICS=llsc (on max it would run
#                       the same instructions: the build never looks at the CPU's atomics)
#   aarch64-builtin/*   build-aarch64-builtin/ -DAX_ATOMICS_BUILTIN=ON (the atomics TSan builds
#                       use, as __atomic builtins), on cortex-a57
#   valgrind            build-valgrind/      -DAX_VALGRIND=ON: memcheck client requests (ctest -L
#                       valgrind; target ax_valgrind_tests)
#   checked             build-checked/       -DAX_CHECKED=ON: checked mode compiled in, whole suite
#   ubsan               build-ubsan/         -DAX_SANITIZE=undefined, whole suite
#   tsan                build-tsan/          -DAX_SANITIZE=thread, the threaded tests (ctest -L tsan)
#   fuzz                build-fuzz/          scripts/fuzz.sh: clang + libFuzzer, bounded run
#
# Variant passes (forced paths, other CPUs) skip the tests that do not depend on the path the
# allocator takes at run time and cost the most: $VARIANT_EXCLUDE below.
#
# The last line is the sum over all stages: `N passed, N failed` (`, N skipped` is appended when
# ctest skipped tests). A stage that fails before ctest reports (configure, build, or a ctest that
# ends without its summary) counts as 1 failed.
#
# Environment (all optional):
#   AX_SKIP_DEPS=1           do not run scripts/deps.sh (no root, or deps known present)
#   AX_SKIP_CROSS=1          native stages only
#   AX_QUICK=1               only the default native run and the runtime aarch64 build on each CPU
#   AX_QEMU_CPUS="max cortex-a57"   CPU models for the aarch64 ctest passes
#   AX_TEST_TIMEOUT=300      per-test timeout (s) natively, for tests without a TIMEOUT property
#   AX_QEMU_TEST_TIMEOUT=900 the same under qemu
#   JOBS=2                   build and ctest parallelism
#   AX_CMAKE_ARGS="..."      extra arguments for both cmake configure steps
#   AX_FUZZ_SECONDS=30       length of the fuzz stage
#   AX_SKIP_EXTRA=1          skip the valgrind, checked, sanitizer and fuzz stages
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=scripts/lib.sh
source "$ROOT/scripts/lib.sh"

JOBS=${JOBS:-2}
NATIVE_DIR=build
CROSS_DIR=build-aarch64
TOOLCHAIN=$ROOT/toolchain/aarch64-linux-gnu.cmake
read -r -a QEMU_CPUS <<<"${AX_QEMU_CPUS:-max cortex-a57}"
read -r -a EXTRA_CMAKE_ARGS <<<"${AX_CMAKE_ARGS:-}"
NATIVE_TIMEOUT=${AX_TEST_TIMEOUT:-300}
QEMU_TIMEOUT=${AX_QEMU_TEST_TIMEOUT:-900}
# the layer check, host programs, installs, packages, the launcher, link recipes, instruction
# budgets, the misuse probes (their own three modes, 20-80 s a pass), the options' parser
# (t_optparse.* unsets every AXMALLOC_*, t_optsignal.* sets its own, t_optfuzz runs the parser
# in process: 12 s a pass under qemu): the same on every variant (t_package installs
# system-wide: once per run is enough)
# (anchored: wl_bitset_preload_smoke is not t_preload)
VARIANT_EXCLUDE="^(t_layers|t_layers[.]inverted|t_preload|t_progs|t_budget|t_install|t_package|t_lintian|t_man|t_spdx|t_launcher|t_linkorder|t_cxx_weakrefs|t_static_pie_kind|fuzz_replay[.]plants|t_misuse|t_optparse[.][a-z]+|t_optsignal([.][a-z]+)?|t_optfuzz|t_optneeds[.][a-z]+|t_docs|t_docs[.]blind|t_pprof_svg)$"
# ... and, where the path does not touch the heap profiler (the bulk kernels, the 16 KiB page
# size, which 64 KiB covers) or under qemu (30-40 s there, google-pprof included), its tests
# (t_prof, t_prof_static: the native stage, force-mt, 64 KiB pages and the first aarch64 pass
# run them)
PROF_EXCLUDE="^t_prof(_static)?$"
# The forced-kernel passes run the `kernel` tests, the fixed-atomics aarch64 builds these
# (tests/common/paths.cmake): the default pass and the first aarch64 pass run everything
ATOMICS_LABELS="atomics|race"

total_pass=0 total_fail=0 total_skip=0 any_failed=0 stage_t0=
summary=()

log() { printf '\n==== %s\n' "$*"; }

# record <stage> <status> <passed> <failed> <skipped> <seconds>
record() {
  local stage=$1 status=$2 p=$3 f=$4 s=$5 secs=$6
  total_pass=$((total_pass + p)) total_fail=$((total_fail + f)) total_skip=$((total_skip + s))
  [[ $status == ok ]] || any_failed=1
  # Deliberately not of the bare form `N passed, N failed`: only the last line is.
  summary+=("$(printf 'stage %-18s %-6s (%d passed, %d failed, %d skipped; %ds)' \
    "$stage" "$status" "$p" "$f" "$s" "$secs")")
}

# run_ctest <stage> <dir> <timeout> [VAR=value...] -- runs ctest, records the stage.
run_ctest() {
  # The stage's time includes its configure + build when stage_t0 was set before them.
  local stage=$1 dir=$2 timeout=$3 t0=${stage_t0:-$SECONDS} rc=0
  stage_t0=
  shift 3
  local envs=() args=()
  while (($#)) && [[ $1 != -- ]]; do envs+=("$1"); shift; done
  (($#)) && shift && args=("$@")
  local logf=$dir/ctest-${stage//[\/=,]/-}.log
  log "$stage: ctest ${envs[*]} ${args[*]}"
  env "${envs[@]}" ctest --test-dir "$dir" --output-on-failure -j "$JOBS" --timeout "$timeout" \
    --no-tests=error "${args[@]}" 2>&1 | tee "$logf" || rc=${PIPESTATUS[0]}
  # "100% tests passed, 0 tests failed out of 12" (colour codes stripped, last one wins)
  local line total failed skipped passed
  line=$(sed 's/\x1b\[[0-9;]*m//g' "$logf" | grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' | tail -n 1 || true)
  if [[ -z $line ]]; then
    echo "test.sh: $stage: ctest printed no summary (exit $rc)" >&2
    record "$stage" FAILED 0 1 0 $((SECONDS - t0))
    return
  fi
  failed=$(sed -E 's/.* ([0-9]+) tests? failed out of.*/\1/' <<<"$line")
  total=$(sed -E 's/.*failed out of ([0-9]+).*/\1/' <<<"$line")
  # ctest counts skipped tests as passed in that line; they are listed as "(Skipped)".
  skipped=$(grep -cE '^[[:space:]]+[0-9]+ - .* \(Skipped\)$' "$logf" || true)
  passed=$((total - failed - skipped))
  if ((rc == 0 && failed == 0)); then
    record "$stage" ok "$passed" "$failed" "$skipped" $((SECONDS - t0))
  else
    record "$stage" FAILED "$passed" "$((failed > 0 ? failed : 1))" "$skipped" $((SECONDS - t0))
  fi
}

finish() {
  printf '\n==== summary\n'
  printf '%s\n' "${summary[@]}"
  local extra=""
  ((total_skip == 0)) || extra=", $total_skip skipped"
  printf '%d passed, %d failed%s\n' "$total_pass" "$total_fail" "$extra"
  exit $((any_failed || total_fail > 0))
}

# glibc_stage: scripts/glibc_tests.sh against build/; its last line is
# `glibc-tests: native P passed, F failed, U unsupported; preload ...; static ...; E excluded`.
# The stage counts the axmalloc runs (preload and static); a failed native run (the harness
# itself) fails the stage too.
glibc_stage() {
  local stage=$1 t0=$SECONDS rc=0 logf line p=0 f=0 u=0 mode np nf nu
  shift
  logf=$(mktemp)
  log "$stage: $* scripts/glibc_tests.sh --keep-going $NATIVE_DIR"
  env "$@" bash "$ROOT/scripts/glibc_tests.sh" --keep-going -j "$JOBS" "$NATIVE_DIR" 2>&1 |
    tee "$logf" || rc=${PIPESTATUS[0]}
  line=$(grep -E '^glibc-tests: native ' "$logf" | tail -n 1 || true)
  rm -f "$logf"
  for mode in preload static; do
    read -r np nf nu < <(sed -nE "s/.*$mode ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) unsupported.*/\1 \2 \3/p" <<<"$line")
    p=$((p + ${np:-0})) f=$((f + ${nf:-0})) u=$((u + ${nu:-0}))
  done
  if ((rc == 0)) && [[ -n $line ]]; then
    record "$stage" ok "$p" "$f" "$u" $((SECONDS - t0))
  else
    record "$stage" FAILED "$p" "$((f > 0 ? f : 1))" "$u" $((SECONDS - t0))
  fi
  [[ -z $line ]] || summary+=("      $line")
}

# ---- dependencies -----------------------------------------------------------------------
if [[ ${AX_SKIP_DEPS:-0} != 1 ]]; then
  log "deps"
  t0=$SECONDS
  if ! bash "$ROOT/scripts/deps.sh"; then
    record deps FAILED 0 1 0 $((SECONDS - t0))
    finish
  fi
fi

# ---- format -----------------------------------------------------------------------------
# Every C and C++ file, workloads and tests included, as .clang-format (clang-format 14)
# formats it: `clang-format -i <file>` fixes one.
format_stage() {
  local t0=$SECONDS f files=() bad=()
  log "format: clang-format --dry-run --Werror"
  if ! command -v clang-format >/dev/null; then
    echo "test.sh: format: clang-format not installed" >&2
    record format FAILED 0 1 0 $((SECONDS - t0))
    return
  fi
  if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git -C "$ROOT" ls-files '*.c' '*.h' '*.cc' '*.cpp')
  else
    mapfile -t files < <(cd "$ROOT" && find src include tests bench fuzz -name '*.[ch]' -o -name '*.cc')
  fi
  for f in "${files[@]}"; do
    clang-format --dry-run --Werror "$ROOT/$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if ((${#bad[@]})); then
    echo "test.sh: format: ${#bad[@]} of ${#files[@]} files not clang-formatted: ${bad[*]}" >&2
    record format FAILED 0 1 0 $((SECONDS - t0))
  else
    echo "format: ${#files[@]} files clang-formatted"
    record format ok 1 0 0 $((SECONDS - t0))
  fi
}
format_stage

# ---- native -----------------------------------------------------------------------------
# The default run, then the same suite down every other path the allocator can take here:
# atomics forced on while single-threaded, each bulk kernel forced, 16 and 64 KiB pages.
# (The variants skip $VARIANT_EXCLUDE.)
log "native: configure + build ($NATIVE_DIR, Release)"
t0=$SECONDS stage_t0=$SECONDS
if ax_configure "$NATIVE_DIR" "" -DAX_BUILD_FUZZ=ON "${EXTRA_CMAKE_ARGS[@]}" && ax_build "$NATIVE_DIR"; then
  run_ctest native "$NATIVE_DIR" "$NATIVE_TIMEOUT"
  if [[ ${AX_QUICK:-0} != 1 ]]; then
    run_ctest native/force-mt "$NATIVE_DIR" "$NATIVE_TIMEOUT" AXMALLOC_FORCE_MT=1 -- -LE threads \
      -E "$VARIANT_EXCLUDE"
    if command -v stress-ng >/dev/null; then
      stress-ng --cpu 2 --timeout 600 >/dev/null 2>&1 &
      load_pid=$!
      run_ctest native/loaded "$NATIVE_DIR" "$NATIVE_TIMEOUT" -- -L quick --repeat until-fail:2
      kill "$load_pid" 2>/dev/null || true
      wait "$load_pid" 2>/dev/null || true
    fi
    prof_dir=$(mktemp -d) # (each test process writes its profile at exit)
    run_ctest native/prof "$NATIVE_DIR" "$NATIVE_TIMEOUT" AXMALLOC_PROF=1 AXMALLOC_PROF_SAMPLE=4096 \
      AXMALLOC_PROF_FILE="$prof_dir/p" -- -LE noprof -E "$VARIANT_EXCLUDE"
    rm -rf "$prof_dir"
    for isa in ${AX_NATIVE_ISAS:-sse2 avx2 avx512 erms}; do
      run_ctest "native/isa=$isa" "$NATIVE_DIR" "$NATIVE_TIMEOUT" AXMALLOC_FORCE_ISA=$isa -- \
        -L kernel -E "$VARIANT_EXCLUDE|$PROF_EXCLUDE"
    done
    for ps in 16384 65536; do
      # (16 KiB: the profiler's tests and the long stress runs left out; 64 KiB, which the
      # aarch64 tagging pass runs whole: the quick, kernel and profiler tests)
      excl=$VARIANT_EXCLUDE more=(-L "quick|kernel|prof")
      [[ $ps == 65536 ]] || { excl+="|$PROF_EXCLUDE"; more=(-LE stress); }
      run_ctest "native/page=$ps" "$NATIVE_DIR" "$NATIVE_TIMEOUT" AXMALLOC_PAGE_SIZE=$ps -- \
        -E "$excl" "${more[@]}"
    done
    # transparent huge pages advised everywhere and nowhere, on each page size (auto, the
    # default, is every other pass): the tests that see how mappings are advised and purged
    for thp in never always; do
      for ps in "" 16384 65536; do
        run_ctest "native/thp=$thp${ps:+,page=$ps}" "$NATIVE_DIR" "$NATIVE_TIMEOUT" AXMALLOC_THP=$thp \
          ${ps:+AXMALLOC_PAGE_SIZE=$ps} -- -L thp -E "$VARIANT_EXCLUDE"
      done
    done
    # (glibc's own malloc under the same tests, the harness's proof, is left to local runs:
    # `bash scripts/glibc_tests.sh build`)
    # (TIMEOUTFACTOR=3: tst-mallocfork2 and 3 take 53-97 s of their 100 s here, glibc's own
    # malloc 70-75 s; a loaded machine timed one out)
    # (tst-mallocfork2 and 3 fork a thousand times from a signal handler with 70 MB mapped:
    # 55-100 s each, glibc's malloc too; preloaded only, not again linked statically)
    glibc_stage glibc-tests AX_GLIBC_MODES="preload static" TIMEOUTFACTOR=3 \
      AX_GLIBC_SKIP="static:tst-mallocfork2 static:tst-mallocfork3"
    # The heap profiler sampling densely (one sample per 4 KiB) under the tests that found its
    # deadlocks (fork, cancellation) and its mallinfo2 error, and the threaded and aligned ones
    prof_dir=$(mktemp -d)
    glibc_stage glibc-tests/prof AX_GLIBC_MODES="preload static" TIMEOUTFACTOR=3 AXMALLOC_PROF=1 AXMALLOC_PROF_SAMPLE=4096 \
      AXMALLOC_PROF_FILE="$prof_dir/p" AX_GLIBC_TESTS="tst-malloc-fork-deadlock tst-mallinfo2 \
tst-malloc-stats-cancellation tst-malloc-thread-exit tst-malloc-usable tst-realloc tst-calloc \
tst-memalign tst-posix_memalign tst-mallocalign1 tst-valloc tst-pvalloc tst-malloc-too-large tst-trim1"
    rm -rf "$prof_dir"
  fi
else
  record native FAILED 0 1 0 $((SECONDS - t0))
fi

# ---- aarch64 under qemu-user ------------------------------------------------------------
# cross_stage <dir> <atomics mode> <runs...>; a run is "CPU[,VAR=value...]".
cross_stage() {
  local dir=$1 mode=$2 run cpu first=1 excl
  shift 2
  log "aarch64 ($mode): configure + build ($dir, Release, $(basename "$TOOLCHAIN"))"
  t0=$SECONDS stage_t0=$SECONDS
  local margs=(-DAX_AARCH64_ATOMICS="$mode")
  # builtin: the __atomic builtins TSan builds use (AX_ATOMICS_BUILTIN), compiled as LL/SC
  [[ $mode != builtin ]] || margs=(-DAX_AARCH64_ATOMICS=runtime -DAX_ATOMICS_BUILTIN=ON)
  # (the fixed-atomics builds run the `atomics` and `race` tests only: their programs are
  # the target ax_race_tests, tests/concurrency/concurrency.cmake)
  local bargs=(-DAX_BUILD_FUZZ=ON) target=()
  [[ $mode == runtime ]] || bargs=(-DAX_BUILD_BENCH=OFF) target=(--target ax_race_tests)
  if ax_configure "$dir" "$TOOLCHAIN" "${margs[@]}" "${bargs[@]}" \
    "${EXTRA_CMAKE_ARGS[@]}" && cmake --build "$dir" -j "$JOBS" "${target[@]}"; then
    for run in "$@"; do
      IFS=, read -r -a parts <<<"$run"
      cpu=${parts[0]}
      # the first run of the runtime build is the whole suite; the others are variants
      # (EXCLUDE=<regex> in a run leaves out more, LABEL=<regex> runs only the tests with
      # such a label, NOLABEL=<regex> leaves out those with one (tests/common/paths.cmake): none
      # is an environment variable)
      local envs=() more= label= nolabel= name
      for p in "${parts[@]:1}"; do
        case $p in
          EXCLUDE=*) more=${p#EXCLUDE=} ;;
          LABEL=*) label=${p#LABEL=} ;;
          NOLABEL=*) nolabel=${p#NOLABEL=} ;;
          *) envs+=("$p") ;;
        esac
      done
      excl=()
      [[ $first == 1 && $mode == runtime ]] ||
        excl=(-- ${label:+-L "$label"} ${nolabel:+-LE "$nolabel"}
          -E "$VARIANT_EXCLUDE|$PROF_EXCLUDE${more:+|$more}")
      first=0
      name=${run%%,EXCLUDE=*} name=${name%%,LABEL=*} name=${name%%,NOLABEL=*} # (they come last)
      run_ctest "aarch64-$mode/$name" "$dir" "$QEMU_TIMEOUT" "QEMU_CPU=$cpu" "${envs[@]}" "${excl[@]}"
    done
  else
    record "aarch64-$mode-build" FAILED 0 1 0 $((SECONDS - t0))
  fi
}

if [[ ${AX_SKIP_CROSS:-0} != 1 ]]; then
  # runtime (the default build): LSE where the CPU has it, LL/SC elsewhere
  runs=()
  # (cortex-a57, ARMv8.0: with AXMALLOC_FORCE_MT=1, so that every test takes the LL/SC
  # atomics; single-threaded without them it runs what max runs)
  for cpu in "${QEMU_CPUS[@]}"; do
    if [[ $cpu == cortex-a57 ]]; then runs+=("$cpu,AXMALLOC_FORCE_MT=1"); else runs+=("$cpu"); fi
  done
  if [[ ${AX_QUICK:-0} != 1 ]]; then
    # (CI has 30 minutes: what a pass would repeat of another is left out)
    # 64 KiB pages, with memory tagging (MTE) on: the whole suite with every block tagged
    # (one pass for both: CI has 30 minutes). glibc's memset clears with DC ZVA, which qemu
    # 7.2 faults (SEGV_MAPERR) on a tagged pointer; its A64FX variant (SVE) does not use
    # it. Static PIE programs crash in glibc's start-up with that tunable set, with or
    # without axmalloc: left out of this pass.
    runs+=("max,AXMALLOC_PAGE_SIZE=65536,AXMALLOC_MTE=1,GLIBC_TUNABLES=glibc.cpu.name=a64fx,EXCLUDE=t_static_pie")
    for isa in ${AX_AARCH64_ISAS:-neon dczva}; do runs+=("max,AXMALLOC_FORCE_ISA=$isa,LABEL=kernel"); done
    # the heap profiler sampling every 4 KiB, as native/prof (70 s; the profiles at exit land
    # in the tests' directory as axprof.<pid>.final.heap)
    runs+=("max,AXMALLOC_PROF=1,AXMALLOC_PROF_SAMPLE=4096,NOLABEL=noprof")
    # transparent huge pages advised everywhere (4 and 16 KiB pages) and nowhere (64 KiB)
    runs+=("max,AXMALLOC_THP=always,LABEL=thp" "max,AXMALLOC_THP=always,AXMALLOC_PAGE_SIZE=16384,LABEL=thp")
    runs+=("max,AXMALLOC_THP=never,AXMALLOC_PAGE_SIZE=65536,LABEL=thp")
  fi
  cross_stage "$CROSS_DIR" runtime "${runs[@]}"
  if [[ ${AX_QUICK:-0} != 1 ]]; then
    # the fixed-atomics builds: the tests that run atomics (tests/common/paths.cmake)
    cross_stage "$CROSS_DIR-lse" lse "max,LABEL=$ATOMICS_LABELS" # LSE only: needs ARMv8.1
    cross_stage "$CROSS_DIR-llsc" llsc "cortex-a57,LABEL=$ATOMICS_LABELS"
    cross_stage "$CROSS_DIR-builtin" builtin "cortex-a57,LABEL=$ATOMICS_LABELS"
  fi
fi

# ---- instrumented builds: valgrind, checked mode, sanitizers, fuzzing --------------------
# extra_stage <stage> <dir> <cmake args...> -- <env VAR=value...> -- <ctest args...>
# (STAGE_TARGET=<target> builds only that target.)
extra_stage() {
  local stage=$1 dir=$2 cargs=()
  shift 2
  while (($#)) && [[ $1 != -- ]]; do cargs+=("$1"); shift; done
  (($#)) && shift
  log "$stage: configure + build ($dir)"
  t0=$SECONDS stage_t0=$SECONDS
  if ax_configure "$dir" "" -DAX_BUILD_BENCH=OFF "${cargs[@]}" "${EXTRA_CMAKE_ARGS[@]}" &&
    cmake --build "$dir" -j "$JOBS" ${STAGE_TARGET:+--target "$STAGE_TARGET"}; then
    run_ctest "$stage" "$dir" "$NATIVE_TIMEOUT" "$@"
  else
    record "$stage" FAILED 0 1 0 $((SECONDS - t0))
  fi
}

# fuzz_stage: scripts/fuzz.sh, whose last line is `fuzz: N inputs, M allocator operations, K crashes`.
fuzz_stage() {
  local t0=$SECONDS rc=0 logf line
  logf=$(mktemp)
  log "fuzz: scripts/fuzz.sh ${AX_FUZZ_SECONDS:-30}"
  AX_SKIP_DEPS=1 bash "$ROOT/scripts/fuzz.sh" "${AX_FUZZ_SECONDS:-30}" 2>&1 | tee "$logf" ||
    rc=${PIPESTATUS[0]}
  line=$(grep -E '^fuzz: [0-9]+ inputs' "$logf" | tail -n 1 || true)
  rm -f "$logf"
  if ((rc == 0)) && [[ $line == *", 0 crashes" ]]; then
    record fuzz ok 1 0 0 $((SECONDS - t0))
  else
    record fuzz FAILED 0 1 0 $((SECONDS - t0))
  fi
  [[ -z $line ]] || summary+=("      $line")
}

if [[ ${AX_SKIP_EXTRA:-0} != 1 ]]; then
  STAGE_TARGET=ax_valgrind_tests extra_stage valgrind build-valgrind -DAX_VALGRIND=ON -- -- \
    -L valgrind
  # checked mode compiled in, the fuzz corpus replayed in it too
  extra_stage checked build-checked -DAX_CHECKED=ON -DAX_BUILD_FUZZ=ON -- -- -LE oom \
    -E "$VARIANT_EXCLUDE"
  extra_stage ubsan build-ubsan -DAX_SANITIZE=undefined -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -- UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 -- -LE stress -E "$VARIANT_EXCLUDE"
  # TSan: the threaded tests with malloc routed to ax_* (cmake/sanitize.cmake); static
  # programs cannot be built with TSan, hence the one target
  STAGE_TARGET=ax_tsan_tests extra_stage tsan build-tsan -DAX_SANITIZE=thread \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -- -- -L tsan
  fuzz_stage
fi

finish
