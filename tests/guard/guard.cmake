# SPDX-License-Identifier: MIT
# Guarded sampling (AXMALLOC_GUARD, src/common/modes/guard*.c): the reports of misused guarded
# blocks and the fault handler.

# t_guard_report.c misuses a guarded block one way per run; t_guard_report.sh checks each report
# (kind, address against the block, size, the stacks naming the program's alloc_site and
# free_site), the signal the process died of, and the program's own SIGSEGV handler installed
# before or after ours. -O0 -g with frame pointers: every misuse stays in the program and
# every frame has its function. Linked with libaxmalloc.so; in a cross build under the
# emulator. Again with the allocator's page size at 16 KiB and 64 KiB (the pool's pages).
add_executable(t_guard_report ${CMAKE_CURRENT_LIST_DIR}/t_guard_report.c)
target_compile_options(t_guard_report PRIVATE -O0 -g -fno-omit-frame-pointer -fno-builtin -Wall
                       -Wextra -Wno-unused-parameter)
target_link_libraries(t_guard_report PRIVATE axmalloc Threads::Threads)
find_program(AX_BASH_GUARD bash REQUIRED)
foreach(page "" 16384 65536)
  set(name t_guard_report)
  if(page)
    math(EXPR kib "${page} / 1024")
    set(name t_guard_report.${kib}k)
  endif()
  add_test(NAME ${name}
    COMMAND ${AX_BASH_GUARD} ${CMAKE_CURRENT_LIST_DIR}/t_guard_report.sh
            $<TARGET_FILE:t_guard_report> "${AX_EMU_ARG}" "${page}")
  set_tests_properties(${name} PROPERTIES LABELS guard TIMEOUT 300)
endforeach()

# t_guard_classify.c: the handler's reading of faults on a pool the test fills itself (every
# arrangement of neighbours), linked -static with libaxmalloc.a for its hidden names.
ax_sys_static(t_guard_classify SOURCES t_guard_classify.c LIBS axmalloc_static)
target_include_directories(t_guard_classify PRIVATE ${PROJECT_SOURCE_DIR}/src/common
                           ${PROJECT_SOURCE_DIR}/src/arch/${AX_ARCH})
add_test(NAME t_guard_classify COMMAND t_guard_classify)
set_tests_properties(t_guard_classify PROPERTIES LABELS guard ENVIRONMENT AXMALLOC_GUARD=0)
# Guarded sampling is off in checked mode (its own checks cover those blocks): not in an
# AX_CHECKED=ON build.
if(AX_CHECKED)
  set_tests_properties(t_guard_report t_guard_report.16k t_guard_report.64k PROPERTIES
                       DISABLED TRUE)
endif()
