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
             COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/t_budget.sh $<TARGET_FILE:axmalloc>)
    set_tests_properties(t_budget PROPERTIES TIMEOUT 120)
  endif()
endif()
