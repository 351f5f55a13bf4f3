# SPDX-License-Identifier: MIT
# Instruction budgets (issue 4 item 4): callgrind counts of axmalloc's hot operations must
# stay within 5% of bench/callgrind/budget.txt (written from a Release build by
# `bash bench/callgrind/budget.sh --write build`). Native Release builds with valgrind only:
# other build types compile different code, so their counts say nothing about the budget.
if(NOT CMAKE_CROSSCOMPILING)
  find_program(VALGRIND valgrind)
  if(NOT VALGRIND)
    message(STATUS "valgrind not found: t_budget (instruction budgets) not registered")
  elseif(NOT CMAKE_BUILD_TYPE STREQUAL "Release")
    message(STATUS "CMAKE_BUILD_TYPE is '${CMAKE_BUILD_TYPE}', not Release: t_budget not registered")
  else()
    add_test(NAME t_budget
             COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/t_budget.sh $<TARGET_FILE:axmalloc>)
    set_tests_properties(t_budget PROPERTIES TIMEOUT 120)
  endif()
endif()

# The same budgets on AArch64 (issue 13): qemu-aarch64 counts executed guest instructions
# through a TCG plugin (bench/qemu/insn_count.c, built by the test with the host's cc), for
# each atomics build on the CPU of its ctest pass (budget/t_arm_budget.sh picks
# bench/qemu/budget.<atomics>-<cpu>.txt; +10%). Not for the __atomic-builtin build (TSan's
# atomics: another instruction mix).
if(CMAKE_CROSSCOMPILING AND CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64" AND NOT AX_ATOMICS_BUILTIN)
  if(NOT CMAKE_BUILD_TYPE STREQUAL "Release")
    message(STATUS "CMAKE_BUILD_TYPE is '${CMAKE_BUILD_TYPE}', not Release: t_arm_budget not registered")
  else()
    add_test(NAME t_arm_budget
             COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/t_arm_budget.sh $<TARGET_FILE:axmalloc>)
    set_tests_properties(t_arm_budget PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
  endif()
endif()
