# SPDX-License-Identifier: MIT
# Threads: many at once, remote frees, fork, cancellation, signals; races made deterministic
# with the hooks library; long stress and memory pressure. (Sizes: common/functions.cmake.)

# ---- multithreaded -------------------------------------------------------------------------
ax_test(t_mt_storm SOURCES t_mt_storm.c ARGS 4 ${AX_SYS_STORM_ITERS})
ax_test(t_mt_prodcons SOURCES t_mt_prodcons.c ARGS ${AX_SYS_PRODCONS_BLOCKS})
ax_test(t_mt_threads SOURCES t_mt_threads.c ARGS ${AX_SYS_THREADS} ${AX_SYS_THREADS_RSS_MIB})
ax_test(t_fork SOURCES t_fork.c
        ARGS ${AX_SYS_FORKS} ${AX_SYS_FORK_TIMEOUT} ${AX_SYS_FORK_CHILD_THREAD})
ax_test(t_mt_pool SOURCES t_mt_pool.c ARGS ${AX_SYS_POOL_THREADS} 3)
set_tests_properties(t_mt_storm t_mt_prodcons t_mt_threads t_mt_pool t_fork
  PROPERTIES TIMEOUT ${AX_SYS_TIMEOUT} LABELS system)
ax_test(t_remote_batch SOURCES t_remote_batch.c) # remote frees published alone or in chains
ax_test(t_fork_kind SOURCES t_fork_kind.c) # a fork child knows whether remote frees can wait
# an idle thread's batches of remote frees sent by others: another's trim, a sweep
ax_test(t_idle_holder SOURCES t_idle_holder.c ARGS trim)
add_test(NAME t_idle_holder.sweep COMMAND t_idle_holder sweep)
set_tests_properties(t_idle_holder t_idle_holder.sweep PROPERTIES SKIP_RETURN_CODE 77)

# ---- races and signals ----------------------------------------------------------------------
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
  ax_sources(T_SOURCES)
  add_executable(${name} ${T_SOURCES})
  target_include_directories(${name} PRIVATE ${AX_TESTS_COMMON})
  target_compile_options(${name} PRIVATE -fno-builtin -Wall -Wextra -Wno-unused-parameter
                         -DAX_TEST_HOOKS=1)
  target_link_libraries(${name} PRIVATE axmalloc_hooks Threads::Threads)
  add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
  set_tests_properties(${name} PROPERTIES LABELS race TIMEOUT 120)
endfunction()

ax_hook_test(t_race_remote SOURCES t_race_remote.c)
ax_hook_test(t_race_remap SOURCES t_race_remap.c)
# (these two read the layout of segments, pages and heaps from src/common/types.h)
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

# The fork child model (docs/design/10-lifecycle.md): the parent's threads stopped at each point, the child
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
add_test(NAME t_cancel_points COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/t_cancel_points.sh
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
# (2,048 until issue 43: the allocator's own frames looked up in its .eh_frame_hdr, a walk's
# first lookups, took 80 bytes more, 1,951 on x86-64, and an UBSan build passed 2,048)
add_test(NAME t_stack.prof COMMAND t_stack 2176 1024)
# guarded sampling (on by default) at every 4 KiB: a sampled malloc walks its stack as the
# profiler's does (2,079 bytes on x86-64); the others measure malloc and free, and the
# profiler's samples, without it
add_test(NAME t_stack.guard COMMAND t_stack 2304 1024)
set_tests_properties(t_stack.guard PROPERTIES ENVIRONMENT "AXMALLOC_GUARD=4096")
add_test(NAME t_stack.libgcc COMMAND t_stack 8192 1024)
set(prof_env AXMALLOC_PROF=1 AXMALLOC_PROF_SAMPLE=4096 AXMALLOC_PROF_SIGNAL=USR1
    AXMALLOC_PROF_FILE=${CMAKE_CURRENT_BINARY_DIR}/t_stack)
set_tests_properties(t_stack.prof PROPERTIES ENVIRONMENT "${prof_env};AXMALLOC_GUARD=0")
set_tests_properties(t_stack.libgcc PROPERTIES ENVIRONMENT
                     "${prof_env};AXMALLOC_PROF_UNWIND=libgcc;AXMALLOC_GUARD=0")
set_property(TEST t_stack APPEND PROPERTY ENVIRONMENT AXMALLOC_GUARD=0)
set_tests_properties(t_stack t_stack.prof t_stack.libgcc t_stack.guard PROPERTIES LABELS race
                     TIMEOUT 300)
# Checked mode holds a freed block back before it reaches its page: the stop t_race_remote
# waits for never comes in an AX_CHECKED=ON build.
if(AX_CHECKED)
  set_tests_properties(t_race_remote PROPERTIES DISABLED TRUE)
endif()

# The programs the `atomics` and `race` tests run (platform/platform.cmake and this file): all the
# fixed-atomics aarch64 builds of scripts/test.sh build, instead of the whole tree
set(ax_race_programs axmalloc axmalloc_static axmalloc_hooks t_atomic t_race_remote t_race_remap
    t_race_seek t_race_reuse t_lock_sleep t_sigfork t_prof_cancel t_tsd_late t_cancel t_stack)
if(TARGET t_fork_model)
  list(APPEND ax_race_programs t_fork_model)
endif()
add_custom_target(ax_race_tests DEPENDS ${ax_race_programs})

# ---- long stress and memory pressure ---------------------------------------------------------
# Long stress and memory pressure (issue 6).
#
#   t_stress, t_stress.32   8 and 32 threads in rounds: threads destroyed and recreated (heaps
#                           abandoned and reclaimed), blocks handed between threads, every
#                           block's contents verified (t_stress.c)
#   t_oom.huge              requests no machine can satisfy: NULL + ENOMEM (no limit)
#   t_oom.limit, .threads   under RLIMIT_AS: failures are NULL + ENOMEM, nothing crashes, live
#                           blocks stay intact, the same allocations succeed after freeing
#   t_oom.refused           requests no address space holds: no system call at all
#   t_oom.refused_limit     under RLIMIT_AS, a refused request costs the next malloc(16) no mmap
#   t_oom_cxx, _static      operator new under RLIMIT_AS: bad_alloc, nothrow, new-handlers,
#                           aligned new, std::vector growth; shared and -static
#
# Long runs: scripts/stress.sh [seconds] [threads] (or AX_STRESS_SECONDS=<s> t_stress ...).
#
# qemu-user ignores a guest's setrlimit(RLIMIT_AS) (it would limit qemu itself: getrlimit
# then still says unlimited and mmap goes on succeeding; checked with qemu 7.2). So in the
# cross build t_oom.limit, t_oom.threads and t_oom_cxx* find no enforced limit, print why and
# exit 77, which ctest reports as skipped. -DAX_QEMU_OOM=ON runs them instead with qemu in
# `sh -c "ulimit -v ..."`, which limits qemu and its guest together, so that the guest's mmap
# fails with ENOMEM as natively. That is not the default because qemu's own allocations
# (its page bookkeeping for every guest mapping, in g_malloc0) then fail too: with one glibc
# arena (MALLOC_ARENA_MAX=1) qemu spun in g_malloc0 until the 900 s timeout; with the default
# arenas t_oom.limit and t_oom_cxx passed, but qemu's 64 MiB arena per guest thread left
# t_oom.threads 14 MiB of 174 MiB. Under that option recovery is checked at 90%
# (AX_OOM_RECOVERY_PCT, see oom_limit.h), since qemu's own memory grows under the same limit.
#
# t_oom.huge always runs under qemu in such a shell, to protect the machine: a guest
# mapping that succeeds makes qemu allocate page bookkeeping for all of it (a 1 TiB guest
# mapping got qemu OOM-killed at 21 GiB RSS).
option(AX_QEMU_OOM "cross build: run the RLIMIT_AS tests with qemu under ulimit -v" OFF)

# ---- sizes: qemu-user is 10-30x slower ---------------------------------------------------
if(CMAKE_CROSSCOMPILING)
  set(AX_STRESS_ROUNDS 6)
  set(AX_STRESS_SCALE_8 30)  # t_stress [threads] [rounds] [scale]: ops = scale*100*(1+i%4)
  set(AX_STRESS_SCALE_32 8)
  set(AX_OOM_MIB 128)        # headroom the t_oom tests get under the limit
  set(AX_OOM_QEMU_VMEM_KIB 524288) # ulimit -v for qemu: its own ~250 MiB + the headroom
  set(AX_OOM_RECOVERY_PCT 90) # qemu's own memory grows under the same limit (oom_limit.h)
  set(AX_STRESS_TIMEOUT 900)
else()
  set(AX_STRESS_ROUNDS 10)
  set(AX_STRESS_SCALE_8 50)
  set(AX_STRESS_SCALE_32 15)
  set(AX_OOM_MIB 256)
  set(AX_OOM_RECOVERY_PCT 100)
  set(AX_STRESS_TIMEOUT 300)
endif()

# ---- long stress -------------------------------------------------------------------------
# A caller's AX_STRESS_SECONDS must not turn a CI run into a long one.
ax_test(t_stress SOURCES t_stress.c ARGS 8 ${AX_STRESS_ROUNDS} ${AX_STRESS_SCALE_8})
add_test(NAME t_stress.32 COMMAND t_stress 32 ${AX_STRESS_ROUNDS} ${AX_STRESS_SCALE_32})
set_tests_properties(t_stress t_stress.32 PROPERTIES TIMEOUT ${AX_STRESS_TIMEOUT}
                     LABELS stress ENVIRONMENT_MODIFICATION "AX_STRESS_SECONDS=unset:")

# ---- memory pressure ---------------------------------------------------------------------
# ax_oom_test(<name> <target> [QEMU_ULIMIT] [args...]): natively the target itself; in the
# cross build with QEMU_ULIMIT, qemu in a shell that limits its address space first (ctest
# prepends no emulator to `sh`), otherwise the target under the emulator as usual.
function(ax_oom_test name target)
  cmake_parse_arguments(O "QEMU_ULIMIT" "" "" ${ARGN})
  if(CMAKE_CROSSCOMPILING AND O_QEMU_ULIMIT)
    string(JOIN " " emu ${CMAKE_CROSSCOMPILING_EMULATOR})
    add_test(NAME ${name}
      COMMAND sh -c "ulimit -v ${AX_OOM_QEMU_VMEM_KIB} && exec ${emu} \"$0\" \"$@\""
              $<TARGET_FILE:${target}> ${O_UNPARSED_ARGUMENTS})
  else()
    add_test(NAME ${name} COMMAND ${target} ${O_UNPARSED_ARGUMENTS})
  endif()
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT ${AX_STRESS_TIMEOUT}
                       LABELS "stress;oom" ENVIRONMENT "AX_OOM_RECOVERY_PCT=${AX_OOM_RECOVERY_PCT}")
endfunction()
set(limit_opt "")
if(AX_QEMU_OOM)
  set(limit_opt QEMU_ULIMIT)
endif()

add_executable(t_oom ${CMAKE_CURRENT_LIST_DIR}/t_oom.c)
target_include_directories(t_oom PRIVATE ${AX_TESTS_COMMON})
target_compile_options(t_oom PRIVATE -fno-builtin -Wall -Wextra -Wno-unused-parameter)
target_link_libraries(t_oom PRIVATE axmalloc Threads::Threads)
ax_oom_test(t_oom.huge t_oom QEMU_ULIMIT huge)
ax_oom_test(t_oom.limit t_oom ${limit_opt} limit ${AX_OOM_MIB})
ax_oom_test(t_oom.threads t_oom ${limit_opt} threads ${AX_OOM_MIB} 4)
ax_oom_test(t_oom.refused t_oom refused)
ax_oom_test(t_oom.refused_limit t_oom ${limit_opt} refused_limit ${AX_OOM_MIB})

add_executable(t_oom_cxx ${CMAKE_CURRENT_LIST_DIR}/t_oom_cxx.cc)
target_include_directories(t_oom_cxx PRIVATE ${AX_TESTS_COMMON})
target_compile_options(t_oom_cxx PRIVATE -Wall -Wextra -Wno-unused-parameter)
target_link_libraries(t_oom_cxx PRIVATE axmalloc Threads::Threads)
set_target_properties(t_oom_cxx PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
ax_oom_test(t_oom_cxx t_oom_cxx ${limit_opt} ${AX_OOM_MIB})

# -static with libaxmalloc.a. libstdc++.a's std::bad_alloc is only linked in when something
# asks for it: the -u flags make sure a failing `new` inside the allocator can throw.
add_executable(t_oom_cxx_static ${CMAKE_CURRENT_LIST_DIR}/t_oom_cxx.cc)
target_include_directories(t_oom_cxx_static PRIVATE ${AX_TESTS_COMMON})
target_compile_options(t_oom_cxx_static PRIVATE -Wall -Wextra -Wno-unused-parameter)
target_link_libraries(t_oom_cxx_static PRIVATE axmalloc_static Threads::Threads)
target_link_options(t_oom_cxx_static PRIVATE -static
  -Wl,-u,_ZTISt9bad_alloc,-u,__cxa_throw,-u,__cxa_allocate_exception)
set_target_properties(t_oom_cxx_static PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
ax_oom_test(t_oom_cxx_static t_oom_cxx_static ${limit_opt} ${AX_OOM_MIB})
