# SPDX-License-Identifier: MIT
# The platform the allocator stands on: the architecture backend's atomics and bulk kernels
# (src/arch/<arch>/), and what the kernel decides at run time (the page size, transparent
# huge pages).

# ---- atomics -----------------------------------------------------------------------------
# The architecture backend's atomics (src/arch/<arch>/arch_atomic.h).
#
# t_atomic compiles the arch header itself (and cpu_<arch>.c, whose symbols are hidden in
# the library) with the library's atomics definitions, and also links libaxmalloc to check
# ax_info(). AArch64 builds add the instruction-level checks: the objdump scan of the
# library, and the SIGILL guard (an lse build dies on an ARMv8.0 CPU, a runtime build runs).
# AX_ATOMICS_MODE, AX_ATOMICS_DEFINITIONS and AX_ATOMICS_OPTIONS come from
# src/arch/aarch64/arch.cmake (empty on x86-64).

if(CMAKE_CROSSCOMPILING)
  set(AX_ATOMIC_ITERS 20000) # per thread and family; qemu-user is 10-30x slower
else()
  set(AX_ATOMIC_ITERS 200000)
endif()

ax_test(t_atomic SOURCES t_atomic.c ${PROJECT_SOURCE_DIR}/src/arch/${AX_ARCH}/cpu_${AX_ARCH}.c
        ARGS ${AX_ATOMIC_ITERS})
target_include_directories(t_atomic PRIVATE ${PROJECT_SOURCE_DIR}/src/arch/${AX_ARCH}
                           ${PROJECT_SOURCE_DIR}/src/common)
target_compile_definitions(t_atomic PRIVATE ${AX_ATOMICS_DEFINITIONS})
target_compile_options(t_atomic PRIVATE ${AX_ATOMICS_OPTIONS})
set_tests_properties(t_atomic PROPERTIES LABELS atomics TIMEOUT 300)

if(AX_ARCH STREQUAL "x86_64")
  set_tests_properties(t_atomic PROPERTIES ENVIRONMENT "AX_EXPECT_ATOMICS=x86-lock")
elseif(AX_ARCH STREQUAL "aarch64")
  target_compile_options(t_atomic PRIVATE -mno-outline-atomics)
  # The mode each variant must prove it used (t_atomic checks AX_EXPECT_ATOMICS against
  # the build mode and HWCAP_ATOMICS, then ax_arch_atomics_name() and ax_info()).
  if(AX_ATOMICS_MODE STREQUAL "runtime")
    # plain t_atomic follows the outer QEMU_CPU; these two pin both sides
    add_test(NAME t_atomic.lse COMMAND t_atomic ${AX_ATOMIC_ITERS})
    set_tests_properties(t_atomic.lse PROPERTIES
      ENVIRONMENT "QEMU_CPU=max;AX_EXPECT_ATOMICS=lse" LABELS atomics TIMEOUT 300)
    add_test(NAME t_atomic.llsc COMMAND t_atomic ${AX_ATOMIC_ITERS})
    set_tests_properties(t_atomic.llsc PROPERTIES
      ENVIRONMENT "QEMU_CPU=cortex-a57;AX_EXPECT_ATOMICS=llsc" LABELS atomics TIMEOUT 300)
  else()
    set_tests_properties(t_atomic PROPERTIES ENVIRONMENT "AX_EXPECT_ATOMICS=${AX_ATOMICS_MODE}")
  endif()

  # Cross-thread malloc/free through the library only (t_atomic xfree), on a core without
  # LSE. An lse build must die there with SIGILL (128 + 4 = 132 from sh; WILL_FAIL cannot
  # expect a signal). `sh -c` is not a target name, so the emulator is passed explicitly;
  # ulimit -c 0 stops qemu from writing the guest's core file into the build tree.
  if(AX_ATOMICS_MODE STREQUAL "lse")
    set(ax_sigill_sh
        "ulimit -c 0; \"$@\"; rc=$?; echo \"exit status $rc (want 132: SIGILL)\"; test $rc -eq 132")
    add_test(NAME t_atomic.sigill
      COMMAND sh -c "${ax_sigill_sh}" sh
              ${CMAKE_CROSSCOMPILING_EMULATOR} $<TARGET_FILE:t_atomic> xfree)
    set_tests_properties(t_atomic.sigill PROPERTIES
      ENVIRONMENT "QEMU_CPU=cortex-a57" LABELS atomics TIMEOUT 120)
    # the same program on an LSE core: the SIGILL above is the CPU's, not a bug
    add_test(NAME t_atomic.xfree COMMAND t_atomic xfree)
    set_tests_properties(t_atomic.xfree PROPERTIES
      ENVIRONMENT "QEMU_CPU=max;AX_EXPECT_ATOMICS=lse" LABELS atomics TIMEOUT 120)
  else()
    add_test(NAME t_atomic.xfree.a57 COMMAND t_atomic xfree)
    set_tests_properties(t_atomic.xfree.a57 PROPERTIES
      ENVIRONMENT "QEMU_CPU=cortex-a57;AX_EXPECT_ATOMICS=llsc" LABELS atomics TIMEOUT 120)
  endif()

  # Host-side disassembly of libaxmalloc.so: inline LSE and/or LL/SC, no outline helpers.
  set(ax_objdump "${CMAKE_OBJDUMP}")
  if(NOT ax_objdump OR NOT ax_objdump MATCHES "aarch64")
    find_program(ax_objdump_aarch64 aarch64-linux-gnu-objdump)
    if(ax_objdump_aarch64)
      set(ax_objdump "${ax_objdump_aarch64}")
    endif()
  endif()
  add_test(NAME t_objdump_atomics
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/t_objdump_atomics.sh $<TARGET_FILE:axmalloc>
            ${AX_ATOMICS_MODE} ${ax_objdump})
  set_tests_properties(t_objdump_atomics PROPERTIES LABELS atomics TIMEOUT 120)
endif()

# ---- bulk kernels ------------------------------------------------------------------------
# The bulk kernels and their dispatch (t_bulk.c; src/arch/<arch>/arch_bulk.h; docs/bulk.md).
#
#   t_bulk            guard-band sweeps of this backend's kernels (with their per-file ISA
#                     flags) and of the other backend's kernels built through SIMDe without
#                     flags (portable code), then the allocator checks
#   t_bulk.<kernel>   AXMALLOC_FORCE_ISA=<kernel>: ax_info() reports it (when the CPU has
#                     it); calloc/realloc correct with it; one per name in arch_bulk.h's list
#   t_bulk.nonsense   an unknown name is ignored, and said (a kernel the CPU lacks: only under
#                     AXMALLOC_VERBOSE, since the test passes force every kernel everywhere)
#   t_bulk.objdump    the library's kernels are the intended instructions, and no code
#                     outside the AVX kernels uses ymm/zmm registers
ax_bulk_kernel_properties() # per-file ISA flags, for this directory's targets

if(AX_ARCH STREQUAL "x86_64")
  set(ax_other_arch aarch64)
else()
  set(ax_other_arch x86_64)
endif()
file(GLOB ax_other_bulk ${PROJECT_SOURCE_DIR}/src/arch/${ax_other_arch}/bulk_*.c)
list(FILTER ax_other_bulk EXCLUDE REGEX "/bulk_detect\\.c$") # cpuid / mrs: native only

ax_test(t_bulk SOURCES t_bulk.c ${AX_BULK_SOURCES} ${ax_other_bulk}
        ${PROJECT_SOURCE_DIR}/src/arch/${AX_ARCH}/cpu_${AX_ARCH}.c)
target_include_directories(t_bulk PRIVATE ${PROJECT_SOURCE_DIR}/src/arch)
target_include_directories(t_bulk SYSTEM PRIVATE ${AX_SIMDE_INCLUDE})
set_tests_properties(t_bulk PROPERTIES ENVIRONMENT_MODIFICATION "AXMALLOC_FORCE_ISA=unset:")

# One variant per kernel name of the list (the X(name, ...) rows of arch_bulk.h), plus libc.
file(READ ${PROJECT_SOURCE_DIR}/src/arch/${AX_ARCH}/arch_bulk.h ax_bulk_header)
string(REGEX MATCHALL "\n  X\\([a-z0-9_]+," ax_bulk_rows "${ax_bulk_header}")
set(ax_bulk_names libc)
foreach(row IN LISTS ax_bulk_rows)
  string(REGEX REPLACE "^\n  X\\(([a-z0-9_]+),$" "\\1" name "${row}")
  list(APPEND ax_bulk_names ${name})
endforeach()
foreach(name IN LISTS ax_bulk_names)
  add_test(NAME t_bulk.${name} COMMAND t_bulk alloc)
  set_tests_properties(t_bulk.${name} PROPERTIES ENVIRONMENT "AXMALLOC_FORCE_ISA=${name}")
endforeach()
add_test(NAME t_bulk.nonsense COMMAND t_bulk alloc)
set_tests_properties(t_bulk.nonsense PROPERTIES
  ENVIRONMENT "AXMALLOC_FORCE_ISA=nonsense" ENVIRONMENT_MODIFICATION "AXMALLOC_VERBOSE=unset:"
  PASS_REGULAR_EXPRESSION "AXMALLOC_FORCE_ISA=nonsense is not a bulk kernel \\(libc, [^\n]*\\): the default none is used\n(.*\n)?t_bulk: OK"
  FAIL_REGULAR_EXPRESSION "CHECK failed")

# objdump: <function>:<extended regex that must occur in its body>; "!avx:<regex>" must not
# occur in any function whose name does not contain "avx".
if(AX_ARCH STREQUAL "x86_64")
  set(ax_bulk_insns
    "axi_bulk_zero_sse2:movaps|movdqa"
    "axi_bulk_zero_avx2:vmovdqa[[:space:]]+%ymm"
    "axi_bulk_copy_avx2:vmovdqa[[:space:]]+%ymm"
    "axi_bulk_zero_avx2_nt:vmovntdq[[:space:]]+%ymm"
    "axi_bulk_copy_avx2_nt:vmovntdq[[:space:]]+%ymm"
    "axi_bulk_zero_avx512:vmovdqa64[[:space:]]+%zmm"
    "axi_bulk_copy_avx512:vmovdqa64[[:space:]]+%zmm"
    "axi_bulk_zero_avx512_nt:vmovntdq[[:space:]]+%zmm"
    "axi_bulk_copy_avx512_nt:vmovntdq[[:space:]]+%zmm"
    "axi_bulk_zero_erms:rep stos"
    "axi_bulk_copy_erms:rep movsb"
    "!avx:%[yz]mm")
else()
  set(ax_bulk_insns
    "axi_bulk_zero_neon:stp[[:space:]]+q"
    "axi_bulk_copy_neon:ldp[[:space:]]+q"
    "axi_bulk_zero_dczva:dc[[:space:]]+zva")
endif()
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/t_bulk_objdump.sh [=[
# usage: t_bulk_objdump.sh <objdump> <library> <function>:<regex>... (see tests/platform/platform.cmake)
od=$1 lib=$2
shift 2
dis=$("$od" -d --no-show-raw-insn "$lib") || exit 1
st=0
for spec in "$@"; do
  fn=${spec%%:*} re=${spec#*:}
  case $fn in
  !*)
    bad=$(printf '%s\n' "$dis" | awk -v s="${fn#!}" '/^[0-9a-f]+ <.*>:$/ {p = index($2, s) == 0} p' |
      grep -E "$re" | head -3)
    if [ -n "$bad" ]; then
      echo "FAIL: /$re/ outside the ${fn#!} kernels:"; echo "$bad"; st=1
    else
      echo "ok: no /$re/ outside the ${fn#!} kernels"
    fi ;;
  *)
    hit=$(printf '%s\n' "$dis" | awk -v f="<$fn>:" '$2 == f {p = 1; next} /^$/ {p = 0} p' |
      grep -E "$re" | head -1)
    if [ -n "$hit" ]; then echo "ok: $fn: $hit"; else echo "FAIL: $fn: no /$re/"; st=1; fi ;;
  esac
done
exit $st
]=])
add_test(NAME t_bulk.objdump
  COMMAND sh ${CMAKE_CURRENT_BINARY_DIR}/t_bulk_objdump.sh ${CMAKE_OBJDUMP}
          $<TARGET_FILE:axmalloc> ${ax_bulk_insns})

# ---- the page size -----------------------------------------------------------------------
# The page size is read at run time; AXMALLOC_PAGE_SIZE pretends a 16 or 64 KiB kernel.
ax_test(t_pagesize SOURCES t_pagesize.c)
foreach(ps 16384 65536)
  add_test(NAME t_pagesize.${ps} COMMAND t_pagesize)
  set_tests_properties(t_pagesize.${ps} PROPERTIES ENVIRONMENT "AXMALLOC_PAGE_SIZE=${ps}")
endforeach()

# ---- transparent huge pages --------------------------------------------------------------
# Transparent huge pages (thp.c): the option and the kernel's mode and size, read at run time.
# The real kernel with each AXMALLOC_THP value, then fake sysfs directories (thp/) for the
# kernels this machine is not: 2 MiB pages in `always` mode, `never`, none at all, and the
# AArch64 16 and 64 KiB page kernels' 32 and 512 MiB huge pages.
set(thp_smaps "")
if(NOT CMAKE_CROSSCOMPILING) # (under qemu-user /proc/self/smaps is the emulator's)
  set(thp_smaps smaps)
endif()
# (env: the option the environment gives, auto when none: a variant pass may set one)
ax_test(t_thp SOURCES t_thp.c ARGS env real real purge ${thp_smaps})
add_test(NAME t_thp.never COMMAND t_thp never real real purge ${thp_smaps})
add_test(NAME t_thp.always COMMAND t_thp always real real purge ${thp_smaps})
set_tests_properties(t_thp.never PROPERTIES ENVIRONMENT "AXMALLOC_THP=never")
set_tests_properties(t_thp.always PROPERTIES ENVIRONMENT "AXMALLOC_THP=always")
set(thp_dir ${CMAKE_CURRENT_LIST_DIR}/thp)
# name  option  fake directory  kernel  size  [more arguments]
foreach(c
    "madvise_2m|auto|madvise_2m|madvise|2097152|purge"
    "madvise_2m.large|large|madvise_2m|madvise|2097152|purge"
    "madvise_2m.cheap|auto|madvise_2m|madvise|2097152|purge|@200000,900000"
    "madvise_2m.dear|auto|madvise_2m|madvise|2097152|purge|@900000,400000"
    "always_2m.large|large|always_2m|always|2097152|purge"
    "madvise_2m.always|always|madvise_2m|madvise|2097152|purge"
    "madvise_2m.never|never|madvise_2m|madvise|2097152"
    "always_2m|auto|always_2m|always|2097152|purge"
    "always_2m.never|never|always_2m|always|2097152"
    "always_2m.always|always|always_2m|always|2097152|purge"
    "never|auto|never|never|0"
    "never.always|always|never|never|0|purge"
    "absent|auto|absent|absent|0"
    "absent.always|always|absent|absent|0"
    "badsize|always|badsize|absent|0"
    "madvise_32m|auto|madvise_32m|madvise|33554432"
    "madvise_32m.always|always|madvise_32m|madvise|33554432|purge"
    "madvise_32m.large|large|madvise_32m|madvise|33554432"
    "madvise_512m|auto|madvise_512m|madvise|536870912"
    "madvise_512m.large|large|madvise_512m|madvise|536870912")
  string(REPLACE "|" ";" f "${c}")
  list(GET f 0 name)
  list(GET f 1 opt)
  list(GET f 2 dir)
  list(GET f 3 kernel)
  list(GET f 4 size)
  set(more "")
  list(LENGTH f n)
  if(n GREATER 5)
    list(SUBLIST f 5 -1 more)
  endif()
  # @<huge>,<small>: the costs every probe reports (AXMALLOC_THP_PROBE), and the line it says
  # (checked on its own: a second (.*\n)* in one expression took ctest 50 s of backtracking)
  set(probe "")
  list(FILTER more EXCLUDE REGEX "^@")
  add_test(NAME t_thp.fake.${name} COMMAND t_thp ${opt} ${kernel} ${size} ${more})
  if(c MATCHES "@([0-9]+),([0-9]+)")
    set(probe ";AXMALLOC_THP_PROBE=${CMAKE_MATCH_1},${CMAKE_MATCH_2}")
    math(EXPR h "${CMAKE_MATCH_1} / 1000")
    math(EXPR l "${CMAKE_MATCH_2} / 1000")
    set(verdict "not advised")
    if(CMAKE_MATCH_1 LESS CMAKE_MATCH_2)
      set(verdict "advised")
    endif()
    set_tests_properties(t_thp.fake.${name} PROPERTIES
      ENVIRONMENT "AXMALLOC_THP=${opt};AXMALLOC_THP_SYSFS=${thp_dir}/${dir};AXMALLOC_VERBOSE=1${probe}"
      PASS_REGULAR_EXPRESSION "huge blocks ${verdict}: a huge page faulted in for ${h} us/MiB, OS pages for ${l} \\(probe 1; kernel defrag [a-z+]+\\)"
      FAIL_REGULAR_EXPRESSION "CHECK failed|FAILED")
  else()
    set_tests_properties(t_thp.fake.${name} PROPERTIES ENVIRONMENT
      "AXMALLOC_THP=${opt};AXMALLOC_THP_SYSFS=${thp_dir}/${dir};AXMALLOC_VERBOSE=1"
      PASS_REGULAR_EXPRESSION "transparent huge pages ${opt} \\(kernel: ${kernel}, huge page [0-9]+ KiB, defrag [a-z+]+\\)(.*\n)*t_thp ${opt} ${kernel} ${size}: OK")
  endif()
endforeach()
# a value that is none of the three: said, and auto used
add_test(NAME t_thp.bad_option COMMAND t_thp auto madvise 2097152)
set_tests_properties(t_thp.bad_option PROPERTIES ENVIRONMENT
  "AXMALLOC_THP=sometimes;AXMALLOC_THP_SYSFS=${thp_dir}/madvise_2m"
  PASS_REGULAR_EXPRESSION "AXMALLOC_THP=sometimes is not auto, never, always or large: the default auto is used(.*\n)*t_thp auto madvise 2097152: OK")

# ---- growth in reserved address space ----------------------------------------------------
# A huge block that realloc moves takes a reservation ahead of it and grows there in place
# (huge.c): one address, its bytes kept, counted as address space and never as resident, given
# back at free and shrink; natively also /proc/self/maps and smaps (---p, Rss 0) and RLIMIT_AS
# (qemu-user shows its own /proc/self and does not pass RLIMIT_AS on). Each page size too.
set(huge_resv_args "")
if(NOT CMAKE_CROSSCOMPILING)
  set(huge_resv_args maps limit)
endif()
ax_test(t_huge_resv SOURCES t_huge_resv.c ARGS ${huge_resv_args})
add_test(NAME t_huge_resv.never COMMAND t_huge_resv ${huge_resv_args})
set_tests_properties(t_huge_resv.never PROPERTIES ENVIRONMENT "AXMALLOC_THP=never")
foreach(ps 16384 65536)
  add_test(NAME t_huge_resv.${ps} COMMAND t_huge_resv ${huge_resv_args})
  set_tests_properties(t_huge_resv.${ps} PROPERTIES ENVIRONMENT "AXMALLOC_PAGE_SIZE=${ps}")
endforeach()
set_tests_properties(t_huge_resv t_huge_resv.never t_huge_resv.16384 t_huge_resv.65536
  PROPERTIES TIMEOUT 120)
