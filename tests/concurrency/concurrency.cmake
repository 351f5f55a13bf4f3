# SPDX-License-Identifier: MIT
# Races and async-signal safety, made deterministic (issue 10).
#
# axmalloc_hooks is the allocator compiled again with AX_TEST_HOOKS=1: at named points of
# its concurrent code (src/common/hooks.h) it calls a function the test registers, which can
# stop the thread there while another one runs. The released libraries have no such calls.
#
#   t_race_remote      a remote free stopped after its CAS while the owner unmaps the segment
#   t_race_remap       a huge realloc stopped after its move while another thread maps the
#                      old range
#   t_race_seek        the double-free seek stopped at a block of another thread's inbox
#                      while that block's owner unmaps its segment: the unmap waits
#   t_race_reuse.*     a batch keyed by a heap that a new thread took over, sent there with
#                      a block of a third thread's page: the second trim (or sweep) after it
#                      gives the block to its page (the new thread never allocates again)
#   t_lock_sleep[.prof] a thread stopped inside each global lock while 16 threads confined to
#                      one CPU want it: they sleep (state S, stats.sleeps), never spin on
#   t_sigfork.*        fork() from a signal handler inside every global lock (single- and
#                      multithreaded), and glibc's tst-mallocfork2 pattern
#   t_cancel.*         reports and fatal errors with a cancellation pending; threads
#                      cancelled in the middle of a remote-free storm (no hooks needed)
ax_allocator_variant(axmalloc_hooks_objects DEFINITIONS AX_TEST_HOOKS=1
                     SOURCES ${PROJECT_SOURCE_DIR}/src/common/hooks.c
                             ${PROJECT_SOURCE_DIR}/src/common/validate.c)
add_library(axmalloc_hooks SHARED $<TARGET_OBJECTS:axmalloc_hooks_objects>)
set_target_properties(axmalloc_hooks PROPERTIES LINKER_LANGUAGE C)
target_include_directories(axmalloc_hooks PUBLIC ${PROJECT_SOURCE_DIR}/include
                           ${PROJECT_SOURCE_DIR}/src/common ${PROJECT_SOURCE_DIR}/src/arch/${AX_ARCH})
target_link_libraries(axmalloc_hooks PRIVATE Threads::Threads)

# ax_hook_test(<name> SOURCES <files...> [ARGS <args...>]): a test linked with axmalloc_hooks
function(ax_hook_test name)
  cmake_parse_arguments(T "" "" "SOURCES;ARGS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE -fno-builtin -Wall -Wextra -Wno-unused-parameter
                         -DAX_TEST_HOOKS=1)
  target_link_libraries(${name} PRIVATE axmalloc_hooks Threads::Threads)
  add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
  set_tests_properties(${name} PROPERTIES LABELS race TIMEOUT 120)
endfunction()

ax_hook_test(t_race_remote SOURCES t_race_remote.c)
ax_hook_test(t_race_remap SOURCES t_race_remap.c)
# (these two read the layout of segments, pages and heaps from src/common/internal.h)
ax_hook_test(t_race_seek SOURCES t_race_seek.c)
ax_hook_test(t_race_reuse SOURCES t_race_reuse.c ARGS trim)
add_test(NAME t_race_reuse.sweep COMMAND t_race_reuse sweep)
set_tests_properties(t_race_seek t_race_reuse t_race_reuse.sweep PROPERTIES SKIP_RETURN_CODE 77)
set_tests_properties(t_race_reuse.sweep PROPERTIES LABELS race TIMEOUT 120)
# (paths.cmake: a sampled block has a place of its own, in no class's page)
set_property(TEST t_race_seek t_race_reuse t_race_reuse.sweep APPEND PROPERTY LABELS noprof)
ax_hook_test(t_lock_sleep SOURCES t_lock_sleep.c)
add_test(NAME t_lock_sleep.prof COMMAND t_lock_sleep)
set_tests_properties(t_lock_sleep.prof PROPERTIES LABELS race TIMEOUT 120
                     ENVIRONMENT "AXMALLOC_PROF=1;AXMALLOC_PROF_SAMPLE=4096")
ax_hook_test(t_sigfork SOURCES t_sigfork.c ARGS locked 0)
if(CMAKE_CROSSCOMPILING) # about 20 s under qemu, 30+ on a loaded machine: alarm later
  set_tests_properties(t_sigfork PROPERTIES ENVIRONMENT "AX_HANG_SECONDS=200" TIMEOUT 300)
endif()
# qemu-user 7.2 hangs when a guest forks from a signal handler in a loop, with glibc's malloc
# too (a 10-line program: 2 of 3 runs hang): the multithreaded and storm variants run natively.
if(NOT CMAKE_CROSSCOMPILING)
  add_test(NAME t_sigfork.mt COMMAND t_sigfork locked 2)
  add_test(NAME t_sigfork.storm COMMAND t_sigfork storm 500)
  set_tests_properties(t_sigfork.mt t_sigfork.storm PROPERTIES LABELS race TIMEOUT 120)
endif()

# The fork child model (docs/design.md): the parent's threads stopped at each point, the child
# consistent (ax_test_validate) with nothing pinned. Natively only: under qemu-user 7.2 a fork
# child of a multithreaded process cannot create threads (see t_fork.c).
if(NOT CMAKE_CROSSCOMPILING)
  ax_hook_test(t_fork_model SOURCES t_fork_model.c ARGS quiescent 10)
  foreach(s refill chain release trim slot dump)
    add_test(NAME t_fork_model.${s} COMMAND t_fork_model ${s} 10)
    set_tests_properties(t_fork_model.${s} PROPERTIES LABELS race TIMEOUT 120 SKIP_RETURN_CODE 77)
  endforeach()
  set_tests_properties(t_fork_model.slot t_fork_model.dump PROPERTIES
    ENVIRONMENT "AXMALLOC_PROF=1;AXMALLOC_PROF_SAMPLE=4096;AXMALLOC_PROF_FILE=${CMAKE_CURRENT_BINARY_DIR}/t_fork_model.prof")
endif()

# No cancellation point in the allocator (the library's undefined symbols), and threads
# cancelled inside every API that takes a lock, the heap profiler's dump included
add_test(NAME t_cancel_points COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/t_cancel_points.sh
         ${CMAKE_NM} $<TARGET_FILE:axmalloc> $<TARGET_FILE:axmalloc_static>)
ax_test(t_prof_cancel SOURCES t_prof_cancel.c ARGS pending)
add_test(NAME t_prof_cancel.storm COMMAND t_prof_cancel storm 100)
set_tests_properties(t_cancel_points t_prof_cancel t_prof_cancel.storm PROPERTIES LABELS race
  TIMEOUT 300 SKIP_RETURN_CODE 77)
set_tests_properties(t_prof_cancel t_prof_cancel.storm PROPERTIES ENVIRONMENT
  "AXMALLOC_PROF=1;AXMALLOC_PROF_SAMPLE=4096;AXMALLOC_PROF_FILE=${CMAKE_CURRENT_BINARY_DIR}/t_prof_cancel;TMPDIR=${CMAKE_CURRENT_BINARY_DIR}")
if(CMAKE_CROSSCOMPILING)
  set_property(TEST t_prof_cancel t_prof_cancel.storm APPEND PROPERTY ENVIRONMENT AX_HANG_SECONDS=250)
endif()

# A thread that allocates in its last TSD destructors leaves a heap with an id no thread has
ax_hook_test(t_tsd_late SOURCES t_tsd_late.c)

foreach(mode stats print fatal)
  add_test(NAME t_cancel.${mode} COMMAND t_cancel ${mode})
endforeach()
ax_test(t_cancel SOURCES t_cancel.c ARGS storm 200)
set_tests_properties(t_cancel t_cancel.stats t_cancel.print t_cancel.fatal PROPERTIES
  LABELS race TIMEOUT 120 ENVIRONMENT_MODIFICATION "AXMALLOC_STATS=unset:")

# The stack a small thread, a signal handler and a minimal sigaltstack need (t_stack.c):
# malloc and free 1 KiB, 2 KiB when sampled (the stack walk from the unwind table rules),
# 8 KiB with libgcc's walk (3.4 KiB on x86-64, 7.5 on AArch64: its context holds the vector
# registers); a dump 1 KiB
ax_test(t_stack SOURCES t_stack.c ARGS 1024 1024)
add_test(NAME t_stack.prof COMMAND t_stack 2048 1024)
add_test(NAME t_stack.libgcc COMMAND t_stack 8192 1024)
set(prof_env AXMALLOC_PROF=1 AXMALLOC_PROF_SAMPLE=4096 AXMALLOC_PROF_SIGNAL=USR1
    AXMALLOC_PROF_FILE=${CMAKE_CURRENT_BINARY_DIR}/t_stack)
set_tests_properties(t_stack.prof PROPERTIES ENVIRONMENT "${prof_env}")
set_tests_properties(t_stack.libgcc PROPERTIES ENVIRONMENT "${prof_env};AXMALLOC_PROF_UNWIND=libgcc")
set_tests_properties(t_stack t_stack.prof t_stack.libgcc PROPERTIES LABELS race TIMEOUT 300)
# Checked mode holds a freed block back before it reaches its page: the stop t_race_remote
# waits for never comes in an AX_CHECKED=ON build.
if(AX_CHECKED)
  set_tests_properties(t_race_remote PROPERTIES DISABLED TRUE)
endif()

# The programs the `atomics` and `race` tests run (tests/atomics.cmake and this file): all the
# fixed-atomics aarch64 builds of scripts/test.sh build, instead of the whole tree
set(ax_race_programs axmalloc axmalloc_static axmalloc_hooks t_atomic t_race_remote t_race_remap
    t_race_seek t_race_reuse t_lock_sleep t_sigfork t_prof_cancel t_tsd_late t_cancel t_stack)
if(TARGET t_fork_model)
  list(APPEND ax_race_programs t_fork_model)
endif()
add_custom_target(ax_race_tests DEPENDS ${ax_race_programs})
