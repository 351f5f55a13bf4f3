# SPDX-License-Identifier: MIT
# The valgrind tests' driver (modes/modes.cmake registers them): runs one program under
# valgrind and checks the report.
#
#   cmake -DAX_VG=<valgrind> -DAX_VG_ARGS=a|b -DAX_PROG=<prog> [-DAX_PROG_ARGS=a|b]
#         -DAX_RC=<expected exit code> -DAX_EXPECT=re1|re2 -P valgrind.cmake
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
