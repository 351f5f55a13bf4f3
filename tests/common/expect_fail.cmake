# SPDX-License-Identifier: MIT
# Death-test driver: runs a program that must fail, and checks how.
#
#   cmake -DAX_PROG=<program> [-DAX_ARGS=a|b] [-DAX_EMU=<emulator args joined with |>]
#         -DAX_EXPECT=<regex on stdout+stderr> -P expect_fail.cmake
#
# Passes when the program exits non-zero (or dies of a signal) and its output matches
# AX_EXPECT. A test of a crash must say which crash: a bare WILL_FAIL would also pass on
# the wrong one.
foreach(v AX_PROG AX_EXPECT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "expect_fail.cmake: ${v} not set")
  endif()
endforeach()
set(emu "")
if(AX_EMU)
  string(REPLACE "|" ";" emu "${AX_EMU}")
endif()
set(args "")
if(AX_ARGS)
  string(REPLACE "|" ";" args "${AX_ARGS}")
endif()
execute_process(COMMAND ${emu} ${AX_PROG} ${args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("---- ${AX_PROG} ${args}: exit ${rc}\n---- stdout:\n${out}---- stderr:\n${err}----")
if(rc STREQUAL "0")
  message(FATAL_ERROR "expected a failure, the program exited 0")
endif()
if(NOT "${out}${err}" MATCHES "${AX_EXPECT}")
  message(FATAL_ERROR "output does not match '${AX_EXPECT}'")
endif()
message("ok: failed as expected (${rc}), output matches '${AX_EXPECT}'")
