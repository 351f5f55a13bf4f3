# SPDX-License-Identifier: MIT
# The driver of the *_stats tests and t_static_nomalloc* (integration/integration.cmake): runs
# a program with AXMALLOC_STATS=1 and checks that axmalloc's exit statistics appear on stderr
# with a non-zero mallocs count.
#
#   cmake -DAX_PROG=<program> [-DAX_EMU=<emulator args joined with |>] -P stats.cmake
if(NOT AX_PROG)
  message(FATAL_ERROR "stats.cmake driver: AX_PROG not set")
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
