# SPDX-License-Identifier: MIT
# Link-order recipes, checked with the real compiler (script mode):
#
#   cmake -DAX_CC=<cc> -DAX_INCLUDE=<dir> -DAX_LIB=<libaxmalloc.a> -DAX_OBJ=<axmalloc.o>
#         -DAX_SRC=<t_linkorder.c> -DAX_WORK=<dir> [-DAX_EMU=<emulator args joined with |>]
#         -P t_linkorder.cmake
#
# The right order links, and the program runs on axmalloc; libc named before axmalloc (libaxmalloc.a or axmalloc.o) must fail
# with a duplicate definition of malloc, never produce a program in which glibc's malloc
# and axmalloc's objects are mixed. (Every object of axmalloc pulls in alloc.o, which
# defines malloc: see src/common/linkage.h.)
file(MAKE_DIRECTORY ${AX_WORK})
function(try_link name expect_ok)
  execute_process(COMMAND ${AX_CC} -static -I${AX_INCLUDE} ${AX_SRC} ${ARGN} -pthread
                          -o ${AX_WORK}/${name}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(SUBSTRING "${err}" 0 600 head)
  if(expect_ok AND NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: expected to link, failed:\n${err}")
  elseif(expect_ok)
    string(REPLACE "|" ";" emu "${AX_EMU}")
    execute_process(COMMAND ${emu} ${AX_WORK}/${name} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                    ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT out MATCHES "t_linkorder: OK")
      message(FATAL_ERROR "${name}: linked, but does not run on axmalloc (${rc}):\n${out}${err}")
    endif()
  elseif(NOT expect_ok)
    if(rc EQUAL 0)
      message(FATAL_ERROR "${name}: linked, but libc's malloc and axmalloc are mixed in it")
    endif()
    if(NOT err MATCHES "multiple definition of `malloc'")
      message(FATAL_ERROR "${name}: failed, but not with a duplicate malloc:\n${err}")
    endif()
  endif()
  message("ok: ${name} (${ARGN}): ${head}")
endfunction()
try_link(right_order_a TRUE ${AX_LIB})
try_link(right_order_o TRUE ${AX_OBJ})
try_link(libc_first_a FALSE -lc ${AX_LIB})
try_link(libc_first_o FALSE -lc ${AX_OBJ})
