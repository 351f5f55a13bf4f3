# Long stress and memory pressure (issue 6).
#
#   t_stress, t_stress.32   8 and 32 threads in rounds: threads destroyed and recreated (heaps
#                           abandoned and reclaimed), blocks handed between threads, every
#                           block's contents verified (t_stress.c)
#   t_oom.huge              requests no machine can satisfy: NULL + ENOMEM (no limit)
#   t_oom.limit, .threads   under RLIMIT_AS: failures are NULL + ENOMEM, nothing crashes, live
#                           blocks stay intact, the same allocations succeed after freeing
#   t_oom_cxx, _static      operator new under RLIMIT_AS: bad_alloc, nothrow, new-handlers,
#                           aligned new, std::vector growth; shared and -static
#
# Long runs: scripts/stress.sh [seconds] [threads] (or AX_STRESS_SECONDS=<s> t_stress ...).
#
# qemu-user ignores a guest's setrlimit(RLIMIT_AS) (it would limit qemu itself: getrlimit
# then still says unlimited and mmap goes on succeeding; checked with qemu 7.2). So in the
# cross build the t_oom tests run qemu under `sh -c "ulimit -v ..."`: the limit then holds
# for qemu and the guest together, and the guest's mmap fails with ENOMEM as natively
# (qemu needs about 250 MiB of address space of its own; MALLOC_ARENA_MAX=1 keeps qemu's
# glibc from reserving a 64 MiB arena per guest thread, which left t_oom.threads 14 MiB of
# 174 MiB). The guest's allocations compete with qemu's own under that limit, so recovery
# is checked at 90% there (AX_OOM_RECOVERY_PCT, see oom_limit.h). The same wrapper protects the
# machine in t_oom.huge: a guest mapping that succeeds makes qemu allocate its page
# bookkeeping for all of it (a 1 TiB guest mapping got qemu OOM-killed at 21 GiB RSS).
# A test that finds no enforced limit exits 77 and ctest reports it skipped.

# ---- sizes: qemu-user is 10-30x slower ---------------------------------------------------
if(CMAKE_CROSSCOMPILING)
  set(AX_STRESS_ROUNDS 4)
  set(AX_STRESS_SCALE_8 10)  # t_stress [threads] [rounds] [scale]: ops = scale*100*(1+i%4)
  set(AX_STRESS_SCALE_32 3)
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
# ax_oom_test(<name> <target> [args...]): natively the target itself; under qemu, qemu in a
# shell that limits its address space first (ctest prepends no emulator to `sh`).
function(ax_oom_test name target)
  if(CMAKE_CROSSCOMPILING)
    string(JOIN " " emu ${CMAKE_CROSSCOMPILING_EMULATOR})
    add_test(NAME ${name}
      COMMAND sh -c "ulimit -v ${AX_OOM_QEMU_VMEM_KIB} && MALLOC_ARENA_MAX=1 exec ${emu} \"$0\" \"$@\""
              $<TARGET_FILE:${target}> ${ARGN})
  else()
    add_test(NAME ${name} COMMAND ${target} ${ARGN})
  endif()
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT ${AX_STRESS_TIMEOUT}
                       LABELS "stress;oom" ENVIRONMENT "AX_OOM_RECOVERY_PCT=${AX_OOM_RECOVERY_PCT}")
endfunction()

add_executable(t_oom t_oom.c)
target_include_directories(t_oom PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_options(t_oom PRIVATE -fno-builtin -Wall -Wextra -Wno-unused-parameter)
target_link_libraries(t_oom PRIVATE axmalloc Threads::Threads)
ax_oom_test(t_oom.huge t_oom huge)
ax_oom_test(t_oom.limit t_oom limit ${AX_OOM_MIB})
ax_oom_test(t_oom.threads t_oom threads ${AX_OOM_MIB} 4)

add_executable(t_oom_cxx t_oom_cxx.cc)
target_include_directories(t_oom_cxx PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_options(t_oom_cxx PRIVATE -Wall -Wextra -Wno-unused-parameter)
target_link_libraries(t_oom_cxx PRIVATE axmalloc Threads::Threads)
set_target_properties(t_oom_cxx PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
ax_oom_test(t_oom_cxx t_oom_cxx ${AX_OOM_MIB})

# -static with libaxmalloc.a. libstdc++.a's std::bad_alloc is only linked in when something
# asks for it: the -u flags make sure a failing `new` inside the allocator can throw.
add_executable(t_oom_cxx_static t_oom_cxx.cc)
target_include_directories(t_oom_cxx_static PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_options(t_oom_cxx_static PRIVATE -Wall -Wextra -Wno-unused-parameter)
target_link_libraries(t_oom_cxx_static PRIVATE axmalloc_static Threads::Threads)
target_link_options(t_oom_cxx_static PRIVATE -static
  -Wl,-u,_ZTISt9bad_alloc,-u,__cxa_throw,-u,__cxa_allocate_exception)
set_target_properties(t_oom_cxx_static PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
ax_oom_test(t_oom_cxx_static t_oom_cxx_static ${AX_OOM_MIB})
