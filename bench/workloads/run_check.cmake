# SPDX-License-Identifier: MIT
# ctest helper for the workload smoke tests:
#   cmake -DPROG=<exe> [-DEMU=<emulator,args>] [-DPRELOAD=<lib>] -DARGS=<a,b,c>
#         -DEXPECT=<checksum> -P run_check.cmake      (lists comma-separated)
# Passes only if the program exits 0 and its stdout is exactly "checksum <EXPECT>".
string(REPLACE "," ";" ARGS "${ARGS}")
string(REPLACE "," ";" EMU "${EMU}")
if(PRELOAD)
  set(ENV{LD_PRELOAD} "${PRELOAD}")
endif()
execute_process(COMMAND ${EMU} ${PROG} ${ARGS}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "${PROG} ${ARGS}: exit status ${rc}\nstdout: ${out}\nstderr: ${err}")
endif()
if(NOT out STREQUAL "checksum ${EXPECT}\n")
  message(FATAL_ERROR "${PROG} ${ARGS}: expected 'checksum ${EXPECT}', got '${out}'\nstderr: ${err}")
endif()
message(STATUS "${out}${err}")
