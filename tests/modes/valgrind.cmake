# SPDX-License-Identifier: MIT
# Valgrind memcheck (issue 5): with -DAX_VALGRIND=ON axmalloc tells memcheck about its blocks
# (src/common/track.h), so `valgrind --soname-synonyms=somalloc=nomatch` checks programs
# running on axmalloc itself. Without nomatch memcheck replaces malloc with its own (any
# build): the plain runs below check that a leak is still reported then.
#
# Script mode (runs one program under valgrind and checks the report):
#   cmake -DAX_VG=<valgrind> -DAX_VG_ARGS=a|b -DAX_PROG=<prog> [-DAX_PROG_ARGS=a|b]
#         -DAX_RC=<expected exit code> -DAX_EXPECT=re1|re2 -P valgrind.cmake
if(CMAKE_SCRIPT_MODE_FILE)
  string(REPLACE "|" ";" vg_args "${AX_VG_ARGS}")
  string(REPLACE "|" ";" prog_args "${AX_PROG_ARGS}")
  execute_process(COMMAND ${AX_VG} ${vg_args} ${AX_PROG} ${prog_args}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("---- exit ${rc}\n${out}${err}----")
  if(NOT rc STREQUAL "${AX_RC}")
    message(FATAL_ERROR "exit status ${rc}, expected ${AX_RC}")
  endif()
  string(REPLACE "|" ";" expects "${AX_EXPECT}")
  foreach(re ${expects})
    if(NOT "${out}${err}" MATCHES "${re}")
      message(FATAL_ERROR "the report lacks '${re}'")
    endif()
  endforeach()
  message("ok: exit ${rc}, report matches ${AX_EXPECT}")
  return()
endif()

# The client requests add instructions to the fast paths by design: an AX_VALGRIND build's
# counts say nothing about the default build's instruction budget.
if(AX_VALGRIND AND TEST t_budget)
  set_tests_properties(t_budget PROPERTIES DISABLED TRUE)
endif()

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
            "-DAX_EXPECT=${expect}" -P ${CMAKE_CURRENT_SOURCE_DIR}/valgrind.cmake)
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
add_executable(t_vg_uaf t_vg_uaf.c)
target_include_directories(t_vg_uaf PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
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
