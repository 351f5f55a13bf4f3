# SPDX-License-Identifier: MIT
# The debugging modes: checked mode, heap misuse probes, memory tagging, the exact leak
# checker, the sampling heap profiler, valgrind memcheck.

# ---- checked mode (src/common/modes/check.c) --------------------------------------------
# t_check: every detection (overflow, double free, use after free, corrupted free list)
# for small/medium/large/huge blocks and cross-thread frees, each in a forked child that
# must die of SIGABRT with the exact message (t_check.c checks both). In an AX_CHECKED=ON
# build checked mode is always on; otherwise AXMALLOC_CHECK=1 switches it on.
ax_test(t_check SOURCES t_check.c ENV AXMALLOC_CHECK=1)
set_tests_properties(t_check PROPERTIES LABELS checked)
# ... with AXMALLOC_PROF=1: each report also names the stacks that found the error,
# allocated the block and freed it (the profiler's unwinder, check.c)
add_test(NAME t_check.stacks COMMAND t_check)
set_tests_properties(t_check.stacks PROPERTIES LABELS checked
                     ENVIRONMENT "AXMALLOC_CHECK=1;AXMALLOC_PROF=1")

# Correct programs raise no false alarm in checked mode: the same tests again. (t_api,
# t_realloc and t_stats are left out: they assert malloc_usable_size() == the class size
# and per-class counts, which checked mode changes by design: usable size = requested.)
set(AX_CHECKED_RUNS
  "t_churn" "t_calloc" "t_align" "t_errno" "t_trim"
  "t_mt_storm|4|${AX_SYS_STORM_ITERS}"
  "t_mt_prodcons|${AX_SYS_PRODCONS_BLOCKS}"
  "t_fork|${AX_SYS_FORKS}|${AX_SYS_FORK_TIMEOUT}|${AX_SYS_FORK_CHILD_THREAD}")
# Under qemu-aarch64 -cpu max checked mode tags memory (MTE), and glibc's memset clears with
# DC ZVA, which qemu 7.2 faults (SEGV_MAPERR) on a tagged pointer: these programs memset
# what they allocate, so they get glibc's A64FX memset (SVE, no DC ZVA) there. Elsewhere the
# tunable names a CPU that is not there and changes nothing.
set(AX_CHECKED_ENV "AXMALLOC_CHECK=1")
if(CMAKE_CROSSCOMPILING AND CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64")
  list(APPEND AX_CHECKED_ENV "GLIBC_TUNABLES=glibc.cpu.name=a64fx")
endif()
foreach(run ${AX_CHECKED_RUNS})
  string(REPLACE "|" ";" run "${run}")
  list(POP_FRONT run t)
  add_test(NAME ${t}.checked COMMAND ${t} ${run})
  set_tests_properties(${t}.checked PROPERTIES ENVIRONMENT "${AX_CHECKED_ENV}" LABELS checked
                       TIMEOUT ${AX_SYS_TIMEOUT})
endforeach()

# ---- heap misuse probes (t_misuse.c, t_misuse_cxx.cc, t_misuse.sh) ----------------------------
# mimalloc-bench's security groups, each probe in a process of its own under glibc, axmalloc
# and checked mode; misuse_expected.txt says which each must catch. The programs do not
# link axmalloc (the driver preloads it) and are built without optimization, so that no misuse
# is optimized away.
add_executable(t_misuse ${CMAKE_CURRENT_LIST_DIR}/t_misuse.c)
add_executable(t_misuse_cxx ${CMAKE_CURRENT_LIST_DIR}/t_misuse_cxx.cc)
set_target_properties(t_misuse_cxx PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
target_compile_options(t_misuse PRIVATE -O0 -fno-builtin)
target_compile_options(t_misuse_cxx PRIVATE -O0 -fno-builtin -fsized-deallocation)
add_dependencies(t_misuse axmalloc)
add_test(NAME t_misuse
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/t_misuse.sh $<TARGET_FILE:t_misuse>
          $<TARGET_FILE:t_misuse_cxx> $<TARGET_FILE:axmalloc>
          ${CMAKE_CURRENT_LIST_DIR}/misuse_expected.txt "${AX_EMU_ARG}")
set_tests_properties(t_misuse PROPERTIES LABELS "checked;misuse" TIMEOUT 900)
if(AX_CHECKED) # (its "default" column would be checked mode too)
  set_tests_properties(t_misuse PROPERTIES DISABLED TRUE)
endif()

# ---- memory tagging (AArch64 MTE) ----------------------------------------------------------
ax_test(t_mte SOURCES t_mte.c ENV AXMALLOC_MTE=1) # hardware-caught misuse

# ---- the exact leak checker ----------------------------------------------------------------
# The exact leak checker (AXMALLOC_LEAKS): t_leaks.c leaks known blocks from a static
# function, t_leaks.sh checks the report, the exit status, suppressions, a cross-thread
# free and a fork child. -O2 and no -rdynamic: the function's name comes from .symtab. Linked
# with libaxmalloc.so and, statically, with libaxmalloc.a; in a cross build both run under
# the emulator.
find_program(AX_BASH_LEAKS bash REQUIRED)
ax_test(t_leaks_prog SOURCES t_leaks.c)
set_tests_properties(t_leaks_prog PROPERTIES WILL_FAIL ON) # (the program alone: usage, exit 2)
ax_sys_static(t_leaks_static SOURCES t_leaks.c LIBS axmalloc_static)
foreach(prog t_leaks_prog t_leaks_static)
  target_compile_options(${prog} PRIVATE -O2 -fno-builtin)
  string(REPLACE "_prog" "" name ${prog})
  add_test(NAME ${name}
    COMMAND ${AX_BASH_LEAKS} ${CMAKE_CURRENT_LIST_DIR}/t_leaks.sh $<TARGET_FILE:${prog}>
            "${AX_EMU_ARG}")
  set_tests_properties(${name} PROPERTIES LABELS "leaks" TIMEOUT 120)
endforeach()
# The leak checker is off in checked mode: not in an AX_CHECKED=ON build.
if(AX_CHECKED)
  set_tests_properties(t_leaks t_leaks_static PROPERTIES DISABLED TRUE)
endif()

# A C++ program's report (t_leaks_cxx.cc, -O2 -g; issue 42): demangled names, the allocation's
# source line (addr2line), std::string objects lost directly and their buffers indirectly,
# direct first, suppressions by demangled name, no addr2line, the heap profiler asked for too.
# Linked with libaxmalloc.so; in a cross build under the emulator (addr2line is the host's:
# it reads the target's files).
add_executable(t_leaks_cxx ${CMAKE_CURRENT_LIST_DIR}/t_leaks_cxx.cc)
target_link_libraries(t_leaks_cxx PRIVATE axmalloc Threads::Threads)
# ... and linked -static with libaxmalloc.a: the demangler is the program's own libstdc++'s
# (a weak reference in symbolize.c: its terminate handler pulls it in)
ax_sys_static(t_leaks_cxx_static SOURCES t_leaks_cxx.cc LIBS axmalloc_static)
foreach(prog t_leaks_cxx t_leaks_cxx_static)
  target_compile_options(${prog} PRIVATE -O2 -g -Wall -Wextra)
  add_test(NAME ${prog}
    COMMAND ${AX_BASH_LEAKS} ${CMAKE_CURRENT_LIST_DIR}/t_leaks_cxx.sh $<TARGET_FILE:${prog}>
            ${CMAKE_CURRENT_LIST_DIR}/t_leaks_cxx.cc "${AX_EMU_ARG}")
  set_tests_properties(${prog} PROPERTIES LABELS "leaks" TIMEOUT 120)
  if(AX_CHECKED)
    set_tests_properties(${prog} PROPERTIES DISABLED TRUE)
  endif()
endforeach()

# The scan with other threads running (issue 38, defect 3), and a block over 4 GiB:
# t_leaks_scan.c, linked with libaxmalloc.so and, for the stops inside the scan, with
# axmalloc_hooks (concurrency/concurrency.cmake); under the emulator too, but for the 4 GiB block (the
# scan reads all of it: 0.4 s natively; `stress`: not in the 16 KiB page and UBSan passes)
ax_test(t_leaks_scan_prog SOURCES t_leaks_scan.c)
set_tests_properties(t_leaks_scan_prog PROPERTIES WILL_FAIL ON) # (the program alone: usage)
add_executable(t_leaks_scan_hooks ${CMAKE_CURRENT_LIST_DIR}/t_leaks_scan.c)
target_include_directories(t_leaks_scan_hooks PRIVATE ${AX_TESTS_COMMON})
target_compile_options(t_leaks_scan_hooks PRIVATE -Wall -Wextra -Wno-unused-parameter
                       -DAX_TEST_HOOKS=1)
target_link_libraries(t_leaks_scan_hooks PRIVATE axmalloc_hooks Threads::Threads)
add_test(NAME t_leaks_scan
  COMMAND ${AX_BASH_LEAKS} ${CMAKE_CURRENT_LIST_DIR}/t_leaks_scan.sh threads
          $<TARGET_FILE:t_leaks_scan_prog> $<TARGET_FILE:t_leaks_scan_hooks> "${AX_EMU_ARG}")
set_tests_properties(t_leaks_scan PROPERTIES LABELS "leaks;threads" TIMEOUT 120)
if(NOT CMAKE_CROSSCOMPILING)
  add_test(NAME t_leaks_scan.big COMMAND ${AX_BASH_LEAKS}
           ${CMAKE_CURRENT_LIST_DIR}/t_leaks_scan.sh big $<TARGET_FILE:t_leaks_scan_prog>)
  set_tests_properties(t_leaks_scan.big PROPERTIES LABELS "leaks;stress" TIMEOUT 120
                       SKIP_RETURN_CODE 77)
endif()
if(AX_CHECKED)
  set_tests_properties(t_leaks_scan PROPERTIES DISABLED TRUE)
  if(TEST t_leaks_scan.big)
    set_tests_properties(t_leaks_scan.big PROPERTIES DISABLED TRUE)
  endif()
endif()

# ---- the sampling heap profiler -------------------------------------------------------------
# The sampling heap profiler (AXMALLOC_PROF): t_prof.c allocates known amounts from
# known functions, t_prof.sh reads its profiles with google-pprof and checks the numbers,
# the leak report and the dump on a signal. Linked with libaxmalloc.so and, statically, with
# libaxmalloc.a (the stack walk and the section bounds of a static program); in a cross
# build both run under the emulator and pprof symbolizes with the target's binutils.
find_program(AX_BASH_PROF bash REQUIRED)
set(ax_prof_tools "")
if(CMAKE_CROSSCOMPILING AND AX_CROSS_TRIPLE)
  # pprof's --tools takes a path prefix: /usr/bin/aarch64-linux-gnu- (binutils-aarch64-linux-gnu)
  find_program(AX_CROSS_NM ${AX_CROSS_TRIPLE}-nm)
  if(AX_CROSS_NM)
    get_filename_component(ax_nm_dir ${AX_CROSS_NM} DIRECTORY)
    set(ax_prof_tools "${ax_nm_dir}/${AX_CROSS_TRIPLE}-")
  endif()
endif()

ax_test(t_prof_prog SOURCES t_prof.c)
set_tests_properties(t_prof_prog PROPERTIES WILL_FAIL ON) # (the program alone: usage, exit 2)
ax_sys_static(t_prof_static SOURCES t_prof.c LIBS axmalloc_static)
target_compile_options(t_prof_static PRIVATE -fno-builtin)

foreach(prog t_prof_prog t_prof_static)
  string(REPLACE "_prog" "" name ${prog})
  add_test(NAME ${name}
    COMMAND ${AX_BASH_PROF} ${CMAKE_CURRENT_LIST_DIR}/t_prof.sh $<TARGET_FILE:${prog}>
            "${AX_EMU_ARG}" "${ax_prof_tools}")
  set_tests_properties(${name} PROPERTIES LABELS "prof" SKIP_RETURN_CODE 77 TIMEOUT 600)
endforeach()

# Profiles by the program's own measure (issue 42): AXMALLOC_PROF_INTERVAL and
# AXMALLOC_PROF_GDUMP counted in the profile directory; none without them
ax_test(t_prof_dumps SOURCES t_prof_dumps.c ARGS interval)
add_test(NAME t_prof_dumps.peak COMMAND t_prof_dumps peak)
add_test(NAME t_prof_dumps.none COMMAND t_prof_dumps none)
foreach(c "t_prof_dumps|interval|1m|0|4096" "t_prof_dumps.peak|peak|0|1|1m"
          "t_prof_dumps.none|none|0|0|4096")
  string(REPLACE "|" ";" c "${c}")
  list(GET c 0 test)
  list(GET c 1 mode)
  list(GET c 2 interval)
  list(GET c 3 gdump)
  list(GET c 4 sample)
  set_tests_properties(${test} PROPERTIES LABELS "prof" SKIP_RETURN_CODE 77 ENVIRONMENT
    "AXMALLOC_PROF=1;AXMALLOC_PROF_SAMPLE=${sample};AXMALLOC_PROF_FILE=${CMAKE_CURRENT_BINARY_DIR}/t_prof_dumps.${mode};AXMALLOC_PROF_INTERVAL=${interval};AXMALLOC_PROF_GDUMP=${gdump}")
endforeach()

# A JIT's unwind tables registered, walked and deregistered under every mode that walks stacks
# at malloc or free (t_jit_frames.c): a hang is the failure (TIMEOUT)
ax_test(t_jit_frames SOURCES t_jit_frames.c)
foreach(mode "check|AXMALLOC_CHECK=1;AXMALLOC_PROF=1" "leaks|AXMALLOC_LEAKS=1"
             "prof|AXMALLOC_PROF=1;AXMALLOC_PROF_SAMPLE=1;AXMALLOC_PROF_FILE=${CMAKE_CURRENT_BINARY_DIR}/t_jit_frames"
             "guard|AXMALLOC_GUARD=1")
  string(REGEX MATCH "^([^|]*)\\|(.*)$" _ "${mode}")
  add_test(NAME t_jit_frames.${CMAKE_MATCH_1} COMMAND t_jit_frames)
  set_tests_properties(t_jit_frames.${CMAKE_MATCH_1} PROPERTIES ENVIRONMENT "${CMAKE_MATCH_2}"
                       TIMEOUT 120 SKIP_RETURN_CODE 77 LABELS noprof)
endforeach()
set_tests_properties(t_jit_frames PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)

# ---- valgrind memcheck (driver: valgrind.cmake; last: returns early) ----------------------
# Valgrind memcheck (issue 5): with -DAX_VALGRIND=ON axmalloc tells memcheck about its blocks
# (src/common/track.h), so `valgrind --soname-synonyms=somalloc=nomatch` checks programs
# running on axmalloc itself. Without nomatch memcheck replaces malloc with its own (any
# build): the plain runs below check that a leak is still reported then.

# valgrind runs host programs: native builds only.
if(CMAKE_CROSSCOMPILING)
  return()
endif()
find_program(AX_VALGRIND_EXE valgrind)
if(NOT AX_VALGRIND_EXE)
  message(STATUS "valgrind not found: valgrind tests not registered")
  return()
endif()

# ax_vg_test(<name> <target> RC <code> EXPECT <regex...> [VG <valgrind args>] [ARGS <args>])
function(ax_vg_test name target)
  cmake_parse_arguments(V "" "RC" "EXPECT;VG;ARGS" ${ARGN})
  string(REPLACE ";" "|" vg "--error-exitcode=99;--leak-check=full;${V_VG}")
  string(REPLACE ";" "|" args "${V_ARGS}")
  string(REPLACE ";" "|" expect "${V_EXPECT}")
  add_test(NAME ${name}
    COMMAND ${CMAKE_COMMAND} -DAX_VG=${AX_VALGRIND_EXE} "-DAX_VG_ARGS=${vg}"
            -DAX_PROG=$<TARGET_FILE:${target}> "-DAX_PROG_ARGS=${args}" -DAX_RC=${V_RC}
            "-DAX_EXPECT=${expect}" -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/valgrind.cmake)
  set_tests_properties(${name} PROPERTIES LABELS valgrind TIMEOUT 300)
endfunction()

ax_test(t_vg_leak SOURCES t_vg_leak.c)
set_tests_properties(t_vg_leak PROPERTIES LABELS valgrind)
# Plain valgrind, any build: memcheck's own malloc replaces axmalloc's and finds the leak.
# (With --leak-check=full a definite leak counts as an error: --error-exitcode's 99.)
ax_vg_test(t_vg_leak.plain t_vg_leak RC 99 ARGS plain
  EXPECT "definitely lost: 4,144 bytes in 2 blocks")

if(NOT AX_VALGRIND)
  message(STATUS "AX_VALGRIND is OFF: memcheck client-request tests not registered")
  return()
endif()

set(AX_VG_OURS --soname-synonyms=somalloc=nomatch)
ax_test(t_vg_clean SOURCES t_vg_clean.c)
set_tests_properties(t_vg_clean PROPERTIES LABELS valgrind)
# t_vg_uaf misbehaves on purpose: it runs only under valgrind (no plain test).
add_executable(t_vg_uaf ${CMAKE_CURRENT_LIST_DIR}/t_vg_uaf.c)
target_include_directories(t_vg_uaf PRIVATE ${AX_TESTS_COMMON})
target_compile_options(t_vg_uaf PRIVATE -fno-builtin -Wall -Wextra)
target_link_libraries(t_vg_uaf PRIVATE axmalloc Threads::Threads)

# The leak, found in axmalloc's own blocks (the stack names axmalloc's malloc).
ax_vg_test(t_vg_leak.memcheck t_vg_leak RC 99 VG ${AX_VG_OURS}
  EXPECT "definitely lost: 4,144 bytes in 2 blocks" "ERROR SUMMARY: 2 errors"
         "at 0x[0-9A-F]+: [a-z_]+ \\(in [^)]*libaxmalloc")
# Uses after free: memcheck names the freed block; our error exit code proves it counted.
foreach(m write read write_huge read_medium)
  string(REGEX MATCH "^(write|read)" verb "${m}")
  if(verb STREQUAL "write")
    set(what "Invalid write of size 1")
  else()
    set(what "Invalid read of size 1")
  endif()
  ax_vg_test(t_vg_uaf.${m} t_vg_uaf RC 99 VG ${AX_VG_OURS} ARGS ${m}
    EXPECT "${what}" "Address 0x[0-9a-f]+ is 10 bytes inside a block of size [0-9,]+ free'd"
           "ERROR SUMMARY: 1 errors")
endforeach()
# A correct program: not one error, nothing lost.
ax_vg_test(t_vg_clean.memcheck t_vg_clean RC 0 VG ${AX_VG_OURS}
  EXPECT "ERROR SUMMARY: 0 errors from 0 contexts" "t_vg_clean: OK"
         "All heap blocks were freed")
# The same under checked mode: its canaries, trailers and fill patterns stay hidden.
ax_vg_test(t_vg_clean.checked t_vg_clean RC 0 VG ${AX_VG_OURS}
  EXPECT "ERROR SUMMARY: 0 errors from 0 contexts" "t_vg_clean: OK")
set_tests_properties(t_vg_clean.checked PROPERTIES ENVIRONMENT "AXMALLOC_CHECK=1")

# The programs of the tests labelled `valgrind`: what scripts/test.sh's valgrind stage builds
add_custom_target(ax_valgrind_tests DEPENDS axmalloc t_vg_leak t_vg_clean t_vg_uaf)
