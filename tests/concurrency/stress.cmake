# SPDX-License-Identifier: MIT
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

add_executable(t_oom t_oom.c)
target_include_directories(t_oom PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_options(t_oom PRIVATE -fno-builtin -Wall -Wextra -Wno-unused-parameter)
target_link_libraries(t_oom PRIVATE axmalloc Threads::Threads)
ax_oom_test(t_oom.huge t_oom QEMU_ULIMIT huge)
ax_oom_test(t_oom.limit t_oom ${limit_opt} limit ${AX_OOM_MIB})
ax_oom_test(t_oom.threads t_oom ${limit_opt} threads ${AX_OOM_MIB} 4)
ax_oom_test(t_oom.refused t_oom refused)
ax_oom_test(t_oom.refused_limit t_oom ${limit_opt} refused_limit ${AX_OOM_MIB})

add_executable(t_oom_cxx t_oom_cxx.cc)
target_include_directories(t_oom_cxx PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_options(t_oom_cxx PRIVATE -Wall -Wextra -Wno-unused-parameter)
target_link_libraries(t_oom_cxx PRIVATE axmalloc Threads::Threads)
set_target_properties(t_oom_cxx PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
ax_oom_test(t_oom_cxx t_oom_cxx ${limit_opt} ${AX_OOM_MIB})

# -static with libaxmalloc.a. libstdc++.a's std::bad_alloc is only linked in when something
# asks for it: the -u flags make sure a failing `new` inside the allocator can throw.
add_executable(t_oom_cxx_static t_oom_cxx.cc)
target_include_directories(t_oom_cxx_static PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_options(t_oom_cxx_static PRIVATE -Wall -Wextra -Wno-unused-parameter)
target_link_libraries(t_oom_cxx_static PRIVATE axmalloc_static Threads::Threads)
target_link_options(t_oom_cxx_static PRIVATE -static
  -Wl,-u,_ZTISt9bad_alloc,-u,__cxa_throw,-u,__cxa_allocate_exception)
set_target_properties(t_oom_cxx_static PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
ax_oom_test(t_oom_cxx_static t_oom_cxx_static ${limit_opt} ${AX_OOM_MIB})
