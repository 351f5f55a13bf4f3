# SPDX-License-Identifier: MIT
# The documents' commands and pictures (included by integration.cmake):
#
#   t_docs       every ```sh block of README.md and the EXAMPLES of man/axmalloc.1 and .3 run
#                as written in a scratch directory against this build, each command checked
#                for what it says (t_docs.py's header: the convention and its markers). The
#                native build runs the blocks that do not name aarch64; the cross build
#                those that do, under qemu-aarch64. About 15 s natively, 5 s cross.
#   t_docs.blind t_docs on t_docs_broken.md, whose every block must fail: commands broken as
#                the README's once were (a pkg-config that finds nothing, a preload of a name
#                ld.so does not find, a sample that lost a line, an empty SVG, ...). Native.
#   t_pprof_svg  google-pprof --svg and --collapsed on a profile of the heap profiler's: a
#                non-empty SVG that is XML, folded stacks (README, "Heap profiling"). Native;
#                skipped (77) without google-pprof or graphviz's dot.
#
# Only in the builds the documents describe: not in sanitizer, checked or valgrind builds,
# whose library is another one.
if(NOT AX_SANITIZE STREQUAL "" OR AX_CHECKED OR AX_VALGRIND)
  return()
endif()
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_FOUND)
  return()
endif()
if(CMAKE_CROSSCOMPILING)
  set(ax_docs_mode cross)
else()
  set(ax_docs_mode native)
endif()
add_test(NAME t_docs
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/t_docs.py
    --source ${PROJECT_SOURCE_DIR} --mode ${ax_docs_mode} --build ${CMAKE_BINARY_DIR}
    --cc ${CMAKE_C_COMPILER} --cmake ${CMAKE_COMMAND} "--emulator=${AX_EMU_ARG}")
# (skipped, 77, in scripts/test.sh's variant passes: t_docs.py's header)
set_tests_properties(t_docs PROPERTIES TIMEOUT 600 LABELS docs SKIP_RETURN_CODE 77)

if(NOT CMAKE_CROSSCOMPILING)
  # t_docs is not blind: every block of t_docs_broken.md, each broken in a way the documents
  # once were or could be, must fail it
  add_test(NAME t_docs.blind
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/t_docs.py
      --source ${PROJECT_SOURCE_DIR} --mode native --build ${CMAKE_BINARY_DIR}
      --cc ${CMAKE_C_COMPILER} --cmake ${CMAKE_COMMAND} --expect-failures
      tests/integration/t_docs_broken.md)
  set_tests_properties(t_docs.blind PROPERTIES TIMEOUT 300 LABELS docs SKIP_RETURN_CODE 77)

  add_test(NAME t_pprof_svg
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/t_pprof_svg.sh
      "cc=${CMAKE_C_COMPILER}" "lib=$<TARGET_SONAME_FILE:axmalloc>")
  set_tests_properties(t_pprof_svg PROPERTIES TIMEOUT 120 LABELS "docs" SKIP_RETURN_CODE 77)
endif()
