# Labels for the variant passes of scripts/test.sh: which tests go down the path a pass forces.
#
#   kernel   results that pass through the bulk kernels (calloc's zeroing, realloc's copy,
#            huge blocks, purging, tagging): the AXMALLOC_FORCE_ISA passes (native sse2, avx2,
#            avx512, erms; aarch64 neon, dczva) run these only (the fixed-atomics aarch64
#            builds run the `atomics` and `race` tests)
#   threads  threads from the start to the end: a process already multi-threaded takes the
#            atomic paths, so the AXMALLOC_FORCE_MT=1 passes leave these out
#
# Every test keeps running in the default pass natively and on the first aarch64 pass.
# Tests that do not exist in this build (native-only, aarch64-only) are skipped here. A label set here reaches only
# tests of this directory: fuzz/CMakeLists.txt labels fuzz_replay, fuzz_replay.checked and
# fuzz_replay.purge0 `kernel`, and bench/workloads/CMakeLists.txt the workloads' smoke tests.
set(AX_KERNEL_TESTS
  t_api t_calloc t_calloc.checked t_realloc t_align t_contract t_churn t_churn.checked t_stress
  t_bulk t_bulk.libc t_mte t_trim t_extras)
set(AX_THREADS_TESTS
  t_mt_storm t_mt_storm.checked t_mt_prodcons t_mt_prodcons.checked t_mt_threads t_stress
  t_stress.32 t_oom.threads t_sigfork.mt)
foreach(label kernel threads)
  string(TOUPPER ${label} up)
  foreach(t ${AX_${up}_TESTS})
    if(TEST ${t})
      set_property(TEST ${t} APPEND PROPERTY LABELS ${label})
    endif()
  endforeach()
endforeach()
