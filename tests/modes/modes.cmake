# SPDX-License-Identifier: MIT
# placeholder: filled in by issue 5/6 work

# ---- checked mode (src/common/check.c) ------------------------------------------------
# t_check: every detection (overflow, double free, use after free, corrupted free list)
# for small/medium/large/huge blocks and cross-thread frees, each in a forked child that
# must die of SIGABRT with the exact message (t_check.c checks both). In an AX_CHECKED=ON
# build checked mode is always on; otherwise AXMALLOC_CHECK=1 switches it on.
ax_test(t_check SOURCES t_check.c ENV AXMALLOC_CHECK=1)
set_tests_properties(t_check PROPERTIES LABELS checked)
# ... with AXMALLOC_PROF=1: each report also names the stacks that found the error,
# allocated the block and freed it (the profiler's unwinder, check.c)
add_test(NAME t_check.stacks COMMAND t_check)
set_tests_properties(t_check.stacks PROPERTIES LABELS checked
                     ENVIRONMENT "AXMALLOC_CHECK=1;AXMALLOC_PROF=1")

# Correct programs raise no false alarm in checked mode: the same tests again. (t_api,
# t_realloc and t_stats are left out: they assert malloc_usable_size() == the class size
# and per-class counts, which checked mode changes by design: usable size = requested.)
set(AX_CHECKED_RUNS
  "t_churn" "t_calloc" "t_align" "t_errno" "t_trim"
  "t_mt_storm|4|${AX_SYS_STORM_ITERS}"
  "t_mt_prodcons|${AX_SYS_PRODCONS_BLOCKS}"
  "t_fork|${AX_SYS_FORKS}|${AX_SYS_FORK_TIMEOUT}|${AX_SYS_FORK_CHILD_THREAD}")
# Under qemu-aarch64 -cpu max checked mode tags memory (MTE), and glibc's memset clears with
# DC ZVA, which qemu 7.2 faults (SEGV_MAPERR) on a tagged pointer: these programs memset
# what they allocate, so they get glibc's A64FX memset (SVE, no DC ZVA) there. Elsewhere the
# tunable names a CPU that is not there and changes nothing.
set(AX_CHECKED_ENV "AXMALLOC_CHECK=1")
if(CMAKE_CROSSCOMPILING AND CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64")
  list(APPEND AX_CHECKED_ENV "GLIBC_TUNABLES=glibc.cpu.name=a64fx")
endif()
foreach(run ${AX_CHECKED_RUNS})
  string(REPLACE "|" ";" run "${run}")
  list(POP_FRONT run t)
  add_test(NAME ${t}.checked COMMAND ${t} ${run})
  set_tests_properties(${t}.checked PROPERTIES ENVIRONMENT "${AX_CHECKED_ENV}" LABELS checked
                       TIMEOUT ${AX_SYS_TIMEOUT})
endforeach()

# ---- the default build's cheap checks (tests/t_badfree.c) ------------------------------
# t_badfree (registered in api.cmake) also corrupts segment headers and page descriptors:
# it reads their layout from src/common/internal.h.
target_include_directories(t_badfree PRIVATE ${PROJECT_SOURCE_DIR}/src/common
                           ${PROJECT_SOURCE_DIR}/src/arch/${AX_ARCH})
# t_full_pages, t_cache and t_free_filter read page descriptors the same way
foreach(t t_full_pages t_cache t_free_filter)
  target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/src/common
                             ${PROJECT_SOURCE_DIR}/src/arch/${AX_ARCH})
endforeach()

# ---- the double-free model (tests/t_df_model.c) ----------------------------------------------
# Every place a freed block can wait (batches, inboxes, thread_free, the cache, the page
# lists, abandoned segments, huge and zero-size blocks), freed again by the owner, the first
# freer, a third thread and a thread without a heap, each cell in a forked child whose every
# malloc is checked against a shadow set of the live blocks; it reads the places through
# internal.h. The default mode's: it skips itself (77) in checked mode and while tagging; the
# profiler's passes leave it out (noprof, paths.cmake) and t_df_model.prof runs the places the
# profiler adds (the block aside, a sampled block's slot), sampling paused or every byte.
ax_test(t_df_model SOURCES t_df_model.c)
target_include_directories(t_df_model PRIVATE ${PROJECT_SOURCE_DIR}/src/common
                           ${PROJECT_SOURCE_DIR}/src/arch/${AX_ARCH})
# the owner mallocs right after the second free, before the others send what they hold
add_test(NAME t_df_model.owner_first COMMAND t_df_model -owner-first)
add_test(NAME t_df_model.prof COMMAND t_df_model prof)
set_tests_properties(t_df_model.prof PROPERTIES ENVIRONMENT
  "AXMALLOC_PROF=1;AXMALLOC_PROF_SAMPLE=1;AXMALLOC_PROF_FILE=${CMAKE_CURRENT_BINARY_DIR}/t_df_model")
set_tests_properties(t_df_model t_df_model.owner_first t_df_model.prof PROPERTIES
                     SKIP_RETURN_CODE 77)

# An AX_CHECKED=ON build runs every test in checked mode. Those that pin down the default
# mode's block layout (malloc_usable_size == the class size, per-class counts, ax_ctl's byte
# counts, instruction budgets), tagging or the profiler (off in checked mode: t_mte,
# t_ctl.prof; the leak checker's tests: leaks.cmake), or a free that reaches its page at once
# (t_race_remote, race.cmake) cannot hold there by design; everything else must pass.
if(AX_CHECKED)
  foreach(t t_budget t_api t_realloc t_stats t_full_pages t_cache t_free_filter t_cxx_new
            t_cxx_new_static t_remote_batch t_ctl t_ctl.prof t_mte t_df_model t_df_model.owner_first
            t_df_model.prof)
    if(TEST ${t})
      set_tests_properties(${t} PROPERTIES DISABLED TRUE)
    endif()
  endforeach()
endif()

# ---- heap misuse probes (tests/t_misuse.c, t_misuse_cxx.cc, t_misuse.sh) ----------------------
# mimalloc-bench's security groups, each probe in a process of its own under glibc, axmalloc
# and checked mode; tests/misuse_expected.txt says which each must catch. The programs do not
# link axmalloc (the driver preloads it) and are built without optimization, so that no misuse
# is optimized away.
add_executable(t_misuse t_misuse.c)
add_executable(t_misuse_cxx t_misuse_cxx.cc)
set_target_properties(t_misuse_cxx PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
target_compile_options(t_misuse PRIVATE -O0 -fno-builtin)
target_compile_options(t_misuse_cxx PRIVATE -O0 -fno-builtin -fsized-deallocation)
add_dependencies(t_misuse axmalloc)
add_test(NAME t_misuse
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/t_misuse.sh $<TARGET_FILE:t_misuse>
          $<TARGET_FILE:t_misuse_cxx> $<TARGET_FILE:axmalloc>
          ${CMAKE_CURRENT_SOURCE_DIR}/misuse_expected.txt "${AX_EMU_ARG}")
set_tests_properties(t_misuse PROPERTIES LABELS "checked;misuse" TIMEOUT 900)
if(AX_CHECKED) # (its "default" column would be checked mode too)
  set_tests_properties(t_misuse PROPERTIES DISABLED TRUE)
endif()
