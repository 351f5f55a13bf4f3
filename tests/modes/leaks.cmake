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

# The scan with other threads running (issue 38, defect 3), and a block over 4 GiB:
# tests/t_leaks_scan.c, linked with libaxmalloc.so and, for the stops inside the scan, with
# axmalloc_hooks (tests/race.cmake); under the emulator too, but for the 4 GiB block (the
# scan reads all of it: 0.4 s natively; `stress`: not in the 16 KiB page and UBSan passes)
ax_test(t_leaks_scan_prog SOURCES t_leaks_scan.c)
set_tests_properties(t_leaks_scan_prog PROPERTIES WILL_FAIL ON) # (the program alone: usage)
add_executable(t_leaks_scan_hooks t_leaks_scan.c)
target_include_directories(t_leaks_scan_hooks PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_options(t_leaks_scan_hooks PRIVATE -Wall -Wextra -Wno-unused-parameter
                       -DAX_TEST_HOOKS=1)
target_link_libraries(t_leaks_scan_hooks PRIVATE axmalloc_hooks Threads::Threads)
add_test(NAME t_leaks_scan
  COMMAND ${AX_BASH_LEAKS} ${CMAKE_CURRENT_SOURCE_DIR}/t_leaks_scan.sh threads
          $<TARGET_FILE:t_leaks_scan_prog> $<TARGET_FILE:t_leaks_scan_hooks> "${AX_EMU_ARG}")
set_tests_properties(t_leaks_scan PROPERTIES LABELS "leaks;threads" TIMEOUT 120)
if(NOT CMAKE_CROSSCOMPILING)
  add_test(NAME t_leaks_scan.big COMMAND ${AX_BASH_LEAKS}
           ${CMAKE_CURRENT_SOURCE_DIR}/t_leaks_scan.sh big $<TARGET_FILE:t_leaks_scan_prog>)
  set_tests_properties(t_leaks_scan.big PROPERTIES LABELS "leaks;stress" TIMEOUT 120
                       SKIP_RETURN_CODE 77)
endif()
if(AX_CHECKED)
  set_tests_properties(t_leaks_scan PROPERTIES DISABLED TRUE)
  if(TEST t_leaks_scan.big)
    set_tests_properties(t_leaks_scan.big PROPERTIES DISABLED TRUE)
  endif()
endif()
