# SPDX-License-Identifier: MIT
# Sanitizer builds of the whole tree (scripts/sanitize.sh). Included by the top-level
# CMakeLists.txt before any target exists, so the flags below reach every target: the
# library, the tests and the workloads.
#
#   -DAX_SANITIZE=undefined  UBSan (-fsanitize=undefined -fno-sanitize-recover=all): any
#                            finding aborts the program, so the ctest suite fails on it.
#   -DAX_SANITIZE=thread     TSan, native builds only. Forces AX_ATOMICS_BUILTIN=ON.
#   -DAX_ATOMICS_BUILTIN=ON  the ax_arch_* atomics as __atomic builtins
#                            (src/arch/generic/atomic_builtin.h) instead of inline asm, which
#                            TSan cannot see (it would report the data they order as races).

set(AX_SANITIZE "" CACHE STRING "Sanitizer build of the whole tree: undefined, thread or empty")
set_property(CACHE AX_SANITIZE PROPERTY STRINGS "" undefined thread)
option(AX_ATOMICS_BUILTIN "ax_arch_* atomics as __atomic builtins, no inline asm" OFF)

if(AX_SANITIZE STREQUAL "undefined")
  add_compile_options(-fsanitize=undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=undefined)
  # -static works: gcc links libubsan.a then. But libubsan.a's vptr checker
  # (ubsan_type_hash_itanium.o) needs __dynamic_cast and a typeinfo from libstdc++, and gcc
  # puts -lubsan after -lstdc++, so a -static C++ link misses them: ask for both up front
  # (harmless in a dynamic link, where libstdc++.so has them anyway).
  add_link_options("$<$<LINK_LANGUAGE:CXX>:-Wl,-u,__dynamic_cast>"
                   "$<$<LINK_LANGUAGE:CXX>:-Wl,-u,_ZTIN10__cxxabiv121__vmi_class_type_infoE>")
elseif(AX_SANITIZE STREQUAL "thread")
  if(CMAKE_CROSSCOMPILING)
    message(FATAL_ERROR "AX_SANITIZE=thread: native builds only (TSan does not run under qemu)")
  endif()
  set(AX_ATOMICS_BUILTIN ON) # shadows the option, so a later plain configure gets it back
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT AX_SANITIZE STREQUAL "")
  message(FATAL_ERROR "AX_SANITIZE=${AX_SANITIZE}: expected undefined, thread or nothing")
endif()

# ---- TSan: the threaded tests, with malloc & co. routed to ax_* --------------------------
# TSan's runtime defines malloc itself and comes first in the link, so a test calling malloc
# would exercise TSan's allocator. These tests are compiled with tests/common/tsan_route.h
# force-included (malloc -> ax_malloc, ...), and registered once more as tsan.<name>
# (label tsan) with sizes that keep the stage near a minute on 2 cores; each of them checks
# that ax_stats mallocs grew, which proves the route. Done at the end of the top-level
# directory, when tests/ has defined the targets. TSAN_OPTIONS: any report fails the test,
# but the double-free seek's reads of other threads' batches (tests/common/tsan.supp says why).
#   t_fork ... 0: no thread in the fork child; TSan cannot start threads after a
#                 multithreaded fork ("dup thread with used id", even with die_after_fork=0)
#   t_mt_threads ... 0: no RSS checks; TSan's shadow memory is most of the RSS
# The -static test programs cannot be built with TSan: scripts/sanitize.sh builds the target
# ax_tsan_tests (these programs and the library) instead of all.
set(AX_TSAN_RUNS
  "t_mt_storm|4,100000"
  "t_mt_prodcons|1000000"
  "t_mt_threads|2000,0"
  "t_mt_pool|1000,2"
  "t_fork|20,20,0"
  "t_atomic|200000"
  "t_atomic.xfree|xfree"
  "t_stress|8,4,30")
set(AX_TSAN_OPTIONS
    "halt_on_error=1:second_deadlock_stack=1:suppressions=${PROJECT_SOURCE_DIR}/tests/common/tsan.supp")
function(axi_tsan_tests)
  foreach(run IN LISTS AX_TSAN_RUNS)
    string(REGEX MATCH "^(([^.|]+)[^|]*)\\|(.*)$" _ "${run}")
    set(name ${CMAKE_MATCH_1})
    set(target ${CMAKE_MATCH_2})
    string(REPLACE "," ";" args "${CMAKE_MATCH_3}")
    if(NOT TARGET ${target})
      continue()
    endif()
    if(NOT target IN_LIST routed)
      # SHELL: keeps the pair together (CMake de-duplicates options one word at a time)
      target_compile_options(${target} PRIVATE
                             "SHELL:-include ${PROJECT_SOURCE_DIR}/tests/common/tsan_route.h")
      list(APPEND routed ${target})
    endif()
    add_test(NAME tsan.${name} COMMAND ${target} ${args})
    set_tests_properties(tsan.${name} PROPERTIES LABELS tsan TIMEOUT 300
      ENVIRONMENT "TSAN_OPTIONS=${AX_TSAN_OPTIONS}")
  endforeach()
  add_custom_target(ax_tsan_tests DEPENDS ${routed}) # what scripts/sanitize.sh builds
endfunction()
if(AX_SANITIZE STREQUAL "thread")
  cmake_language(DEFER CALL axi_tsan_tests)
endif()

if(AX_ATOMICS_BUILTIN)
  # Every target: tests (t_atomic) compile the arch header themselves.
  add_compile_definitions(AX_ATOMICS_BUILTIN)
endif()
if(NOT AX_SANITIZE STREQUAL "")
  message(STATUS "axmalloc: sanitizer ${AX_SANITIZE}, builtin atomics ${AX_ATOMICS_BUILTIN}")
endif()
