# SPDX-License-Identifier: MIT
# The exact leak checker (AXMALLOC_LEAKS): tests/t_leaks.c leaks known blocks from a static
# function, tests/t_leaks.sh checks the report, the exit status, suppressions, a cross-thread
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
    COMMAND ${AX_BASH_LEAKS} ${CMAKE_CURRENT_SOURCE_DIR}/t_leaks.sh $<TARGET_FILE:${prog}>
            "${AX_EMU_ARG}")
  set_tests_properties(${name} PROPERTIES LABELS "leaks" TIMEOUT 120)
endforeach()
# The leak checker is off in checked mode: not in an AX_CHECKED=ON build.
if(AX_CHECKED)
  set_tests_properties(t_leaks t_leaks_static PROPERTIES DISABLED TRUE)
endif()
