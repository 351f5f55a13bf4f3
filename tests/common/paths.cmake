# SPDX-License-Identifier: MIT
# Labels for the variant passes of scripts/test.sh: which tests go down the path a pass forces.
#
#   kernel   results that pass through the bulk kernels (calloc's zeroing, realloc's copy,
#            huge blocks, purging, tagging): the AXMALLOC_FORCE_ISA passes (native sse2, avx2,
#            avx512, erms; aarch64 neon, dczva) run these only (the fixed-atomics aarch64
#            builds run the `atomics` and `race` tests)
#   threads  threads from the start to the end: a process already multi-threaded takes the
#            atomic paths, so the AXMALLOC_FORCE_MT=1 passes leave these out
#   thp      results that depend on how huge blocks and segments are mapped (transparent huge
#            pages: advice, alignment, rounding, purges in whole huge pages): the AXMALLOC_THP
#            =never and =always passes, natively and under qemu, on each page size, run these
#   noprof   tests that pin down what the heap profiler changes by design, which the passes with
#            it on (AXMALLOC_PROF=1 AXMALLOC_PROF_SAMPLE=4096) leave out: a sampled block has a
#            place of its own, not in its class's pages (t_full_pages, t_cache, t_free_filter,
#            t_remote_batch, t_badfree: page layout, the cache, chains; t_stats, t_extras,
#            t_cxx_new: class_live
#            counts the thread's blocks in its pages; t_ctl: ax_ctl's byte counts leave the
#            sampled blocks out, as documented; t_race_remote, t_fork_model.release: a stop
#            in a page that a sampled block never reaches), and a 64 KiB slot of address space
#            (the t_oom* tests under RLIMIT_AS); the instruction budgets are the default
#            configuration's (t_budget, t_arm_budget); t_stack's budget is without sampling
#            (t_stack.prof and t_stack.libgcc set their own)
#
# Every test keeps running in the default pass natively and on the first aarch64 pass.
# Tests that do not exist in this build (native-only, aarch64-only) are skipped here. A label set here reaches only
# tests of this directory: fuzz/CMakeLists.txt labels fuzz_replay, fuzz_replay.checked and
# fuzz_replay.purge0 `kernel`, and bench/workloads/CMakeLists.txt the workloads' smoke tests.
set(AX_KERNEL_TESTS
  t_api t_calloc t_calloc.checked t_realloc t_align t_contract t_churn t_churn.checked t_stress
  t_bulk t_bulk.libc t_mte t_trim t_extras)
set(AX_THP_TESTS
  t_thp t_thp.never t_thp.always t_realloc t_calloc t_api t_align t_trim t_extras t_contract
  t_pagesize t_pagesize.16384 t_pagesize.65536 t_oom.huge t_stats t_cache t_huge_resv
  t_huge_resv.never t_huge_resv.16384 t_huge_resv.65536)
set(AX_THREADS_TESTS
  t_mt_storm t_mt_storm.checked t_mt_prodcons t_mt_prodcons.checked t_mt_threads t_mt_pool
  t_stress t_stress.32 t_oom.threads t_sigfork.mt)
set(AX_NOPROF_TESTS
  t_full_pages t_cache t_free_filter t_remote_batch t_stats t_extras t_race_remote
  t_fork_model.release t_oom.huge t_oom.limit t_oom.threads t_oom.refused t_oom.refused_limit
  t_oom_cxx t_oom_cxx_static t_budget t_arm_budget t_stack t_cxx_new t_cxx_new_static t_badfree
  t_ctl t_df_model t_df_model.owner_first t_df_model.prof t_idle_holder t_idle_holder.sweep
  t_huge_resv t_huge_resv.never t_huge_resv.16384 t_huge_resv.65536)
get_property(all_tests DIRECTORY PROPERTY TESTS)
foreach(t ${all_tests})
  if(t MATCHES "^t_thp[.]fake[.]")
    list(APPEND AX_THP_TESTS ${t})
  endif()
endforeach()
foreach(label kernel threads noprof thp)
  string(TOUPPER ${label} up)
  foreach(t ${AX_${up}_TESTS})
    if(TEST ${t})
      set_property(TEST ${t} APPEND PROPERTY LABELS ${label})
    endif()
  endforeach()
endforeach()
