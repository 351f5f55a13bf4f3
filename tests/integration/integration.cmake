# SPDX-License-Identifier: MIT
# System tests: threads, fork, static linking, LD_PRELOAD of real programs.
#
# Included from tests/CMakeLists.txt (ax_test() is defined there). This file also
# serves as its own test driver in script mode (cmake -P system.cmake, see the end of
# the block below): it runs a program with AXMALLOC_STATS=1 and checks that axmalloc's
# exit statistics appear on stderr with a non-zero mallocs count.

# ---- script mode: stats driver ------------------------------------------------------
#   cmake -DAX_PROG=<program> [-DAX_EMU=<emulator args joined with |>] -P system.cmake
if(CMAKE_SCRIPT_MODE_FILE)
  if(NOT AX_PROG)
    message(FATAL_ERROR "system.cmake driver: AX_PROG not set")
  endif()
  set(emu "")
  if(AX_EMU)
    string(REPLACE "|" ";" emu "${AX_EMU}")
  endif()
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env AXMALLOC_STATS=1 ${emu} ${AX_PROG}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("---- stdout of ${AX_PROG}:\n${out}---- stderr:\n${err}----")
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "${AX_PROG} exited with ${rc}")
  endif()
  if(NOT out MATCHES "OK")
    message(FATAL_ERROR "${AX_PROG} did not print OK")
  endif()
  string(FIND "${err}" "axmalloc stats (pid " pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "AXMALLOC_STATS=1: no 'axmalloc stats (pid N):' on stderr: the program "
                        "does not run axmalloc (glibc's malloc linked instead?)")
  endif()
  string(SUBSTRING "${err}" ${pos} -1 stats)
  if(NOT stats MATCHES "mallocs[^0-9\n]*([0-9]+)")
    message(FATAL_ERROR "axmalloc stats: found, but no mallocs count in it")
  endif()
  if(CMAKE_MATCH_1 EQUAL 0)
    message(FATAL_ERROR "axmalloc stats: mallocs is 0: libc's allocations did not reach "
                        "axmalloc")
  endif()
  message("ok: axmalloc stats present, mallocs ${CMAKE_MATCH_1}")
  return()
endif()

# ---- sizes: smaller under qemu-user (10-30x slower) ----------------------------------
if(CMAKE_CROSSCOMPILING)
  set(AX_SYS_STORM_ITERS 50000)
  set(AX_SYS_PRODCONS_BLOCKS 600000)
  set(AX_SYS_THREADS 2000)
  set(AX_SYS_POOL_THREADS 300)
  # /proc/self/statm under qemu-user is qemu's RSS, which grows ~270 KiB per guest thread
  # (qemu 7.2, glibc malloc too): skip the RSS checks, keep the ax_stats ones.
  set(AX_SYS_THREADS_RSS_MIB 0)
  set(AX_SYS_FORKS 20)
  set(AX_SYS_FORK_TIMEOUT 60)
  # qemu-user 7.2 aborts in pthread_create in the child of a multithreaded process
  # ("cpu_exec: assertion failed: (cpu == current_cpu)"), with any malloc.
  set(AX_SYS_FORK_CHILD_THREAD 0)
  set(AX_SYS_TIMEOUT_SCALE 4)
else()
  set(AX_SYS_STORM_ITERS 300000)
  set(AX_SYS_PRODCONS_BLOCKS 3000000)
  set(AX_SYS_THREADS 10000)
  set(AX_SYS_POOL_THREADS 1000)
  set(AX_SYS_THREADS_RSS_MIB 200)
  set(AX_SYS_FORKS 20)
  set(AX_SYS_FORK_TIMEOUT 20)
  set(AX_SYS_FORK_CHILD_THREAD 1)
  set(AX_SYS_TIMEOUT_SCALE 1)
endif()
math(EXPR AX_SYS_TIMEOUT "300 * ${AX_SYS_TIMEOUT_SCALE}")

# ---- multithreaded ---------------------------------------------------------------------
ax_test(t_mt_storm SOURCES t_mt_storm.c ARGS 4 ${AX_SYS_STORM_ITERS})
ax_test(t_mt_prodcons SOURCES t_mt_prodcons.c ARGS ${AX_SYS_PRODCONS_BLOCKS})
ax_test(t_mt_threads SOURCES t_mt_threads.c ARGS ${AX_SYS_THREADS} ${AX_SYS_THREADS_RSS_MIB})
ax_test(t_fork SOURCES t_fork.c
        ARGS ${AX_SYS_FORKS} ${AX_SYS_FORK_TIMEOUT} ${AX_SYS_FORK_CHILD_THREAD})
ax_test(t_mt_pool SOURCES t_mt_pool.c ARGS ${AX_SYS_POOL_THREADS} 3)
set_tests_properties(t_mt_storm t_mt_prodcons t_mt_threads t_mt_pool t_fork
  PROPERTIES TIMEOUT ${AX_SYS_TIMEOUT} LABELS system)

# ---- static linking --------------------------------------------------------------------
# Every program here is linked -static against glibc's libc.a: any symbol of the malloc
# family that axmalloc does not define pulls libc.a(malloc.o) in, and the link fails
# with a duplicate definition.
#
# A test that runs the program with AXMALLOC_STATS=1 (through this file in script mode)
# and checks axmalloc's statistics reach stderr with a non-zero mallocs count.
function(ax_sys_stats_test name target)
  add_test(NAME ${name}
    COMMAND ${CMAKE_COMMAND} "-DAX_EMU=${AX_EMU_ARG}" "-DAX_PROG=$<TARGET_FILE:${target}>"
            -P ${CMAKE_CURRENT_SOURCE_DIR}/system.cmake)
  set_tests_properties(${name} PROPERTIES TIMEOUT ${AX_SYS_TIMEOUT} LABELS "system;static")
endfunction()

# ax_sys_static(<name> SOURCES .. [LIBS ..] [DEFS ..] [OPTIONS <link options>] [DEPENDS ..]
#               [PIE]): a -static program (-static-pie with PIE).
function(ax_sys_static name)
  cmake_parse_arguments(S "PIE" "" "SOURCES;LIBS;DEFS;OPTIONS;DEPENDS" ${ARGN})
  add_executable(${name} ${S_SOURCES})
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
                             ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(${name} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  target_compile_definitions(${name} PRIVATE ${S_DEFS})
  target_link_libraries(${name} PRIVATE ${S_LIBS} Threads::Threads)
  if(S_PIE)
    set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    target_link_options(${name} PRIVATE -static-pie ${S_OPTIONS})
  else()
    target_link_options(${name} PRIVATE -static ${S_OPTIONS})
  endif()
  if(S_DEPENDS)
    add_dependencies(${name} ${S_DEPENDS})
  endif()
endfunction()

# C program calling the malloc family itself, linked with libaxmalloc.a.
ax_sys_static(t_static_c SOURCES t_static_c.c LIBS axmalloc_static)
add_test(NAME t_static_c COMMAND t_static_c)
set_tests_properties(t_static_c PROPERTIES LABELS "system;static")
ax_sys_stats_test(t_static_c_stats t_static_c)

# C++: std::string/std::vector churn, aligned new, exceptions, std::thread.
ax_sys_static(t_static_cxx SOURCES t_static_cxx.cc LIBS axmalloc_static)
set_target_properties(t_static_cxx PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
add_test(NAME t_static_cxx COMMAND t_static_cxx)
set_tests_properties(t_static_cxx PROPERTIES LABELS "system;static")
ax_sys_stats_test(t_static_cxx_stats t_static_cxx)
# ... and the same program linked with the relocatable axmalloc.o (README's C++ recipe).
ax_sys_static(t_static_cxx_o SOURCES t_static_cxx.cc LIBS ${AX_RELOC_OBJECT}
              DEPENDS axmalloc_reloc)
set_target_properties(t_static_cxx_o PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON
                      LINK_DEPENDS ${AX_RELOC_OBJECT})
add_test(NAME t_static_cxx_o COMMAND t_static_cxx_o)
set_tests_properties(t_static_cxx_o PROPERTIES LABELS "system;static")

# A program that never calls malloc itself, three ways of linking axmalloc in:
# 1. the relocatable axmalloc.o (the shipped answer to this case),
ax_sys_static(t_static_nomalloc SOURCES t_static_nomalloc.c LIBS ${AX_RELOC_OBJECT}
              DEPENDS axmalloc_reloc)
set_target_properties(t_static_nomalloc PROPERTIES LINK_DEPENDS ${AX_RELOC_OBJECT})
ax_sys_stats_test(t_static_nomalloc t_static_nomalloc)
# 2. libaxmalloc.a under -Wl,--whole-archive ... -Wl,--no-whole-archive,
ax_sys_static(t_static_nomalloc_wa SOURCES t_static_nomalloc.c DEFS AX_SELF_CHECK
              LIBS "$<LINK_LIBRARY:WHOLE_ARCHIVE,axmalloc_static>")
ax_sys_stats_test(t_static_nomalloc_wa t_static_nomalloc_wa)
# 3. libaxmalloc.a with -Wl,-u,malloc (the documented one-flag alternative).
ax_sys_static(t_static_nomalloc_u SOURCES t_static_nomalloc.c LIBS axmalloc_static
              OPTIONS -Wl,-u,malloc)
ax_sys_stats_test(t_static_nomalloc_u t_static_nomalloc_u)

# -static-pie: a position-independent static program (axmalloc's objects are PIC).
ax_sys_static(t_static_pie_c SOURCES t_static_c.c LIBS axmalloc_static PIE)
add_test(NAME t_static_pie_c COMMAND t_static_pie_c)
ax_sys_static(t_static_pie_cxx SOURCES t_static_cxx.cc LIBS axmalloc_static PIE
              OPTIONS ${AX_CXX_STATIC_LINK_FLAGS})
set_target_properties(t_static_pie_cxx PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
add_test(NAME t_static_pie_cxx COMMAND t_static_pie_cxx)
ax_sys_stats_test(t_static_pie_cxx_stats t_static_pie_cxx)
# ... and its binaries are really static PIE (ET_DYN without an interpreter).
add_test(NAME t_static_pie_kind
  COMMAND sh -c "f=$1; readelf -h \"$f\" | grep -q 'DYN' && ! readelf -l \"$f\" | grep -q INTERP && echo static-pie: ok"
          sh $<TARGET_FILE:t_static_pie_cxx>)
set_tests_properties(t_static_pie_c t_static_pie_cxx t_static_pie_kind PROPERTIES
  LABELS "system;static" )
set_tests_properties(t_static_pie_kind PROPERTIES PASS_REGULAR_EXPRESSION "static-pie: ok")

# Link order: libc before axmalloc must not link (a duplicate malloc), never mix.
add_test(NAME t_linkorder
  COMMAND ${CMAKE_COMMAND} -DAX_CC=${CMAKE_C_COMPILER} -DAX_INCLUDE=${PROJECT_SOURCE_DIR}/include
          "-DAX_EMU=${AX_EMU_ARG}"
          -DAX_LIB=$<TARGET_FILE:axmalloc_static> -DAX_OBJ=${AX_RELOC_OBJECT}
          -DAX_SRC=${CMAKE_CURRENT_SOURCE_DIR}/t_linkorder.c
          -DAX_WORK=${CMAKE_CURRENT_BINARY_DIR}/t_linkorder.d
          -P ${CMAKE_CURRENT_SOURCE_DIR}/t_linkorder.cmake)
set_tests_properties(t_linkorder PROPERTIES LABELS "system;static")

# ---- LD_PRELOAD into real host programs (host binaries: native builds only) ----------
if(NOT CMAKE_CROSSCOMPILING)
  add_test(NAME t_preload
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/t_preload.sh $<TARGET_FILE:axmalloc>)
  set_tests_properties(t_preload PROPERTIES TIMEOUT 600 LABELS system)
endif()
