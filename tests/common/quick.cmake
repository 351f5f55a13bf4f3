# SPDX-License-Identifier: MIT
# The `quick` label (`ctest -L quick`, or `ctest --preset quick`): the edit-compile-test loop.
# API semantics, bad input, checked mode, tagging, the races at the dangerous points, fork
# and signals, static linking: well under a minute natively, and no CPython, compiler, git
# or valgrind run (t_progs, t_preload, t_install, t_linkorder, t_budget are left out).
set(AX_QUICK_TESTS
  t_api t_calloc t_realloc t_align t_errno t_badfree t_churn t_full_pages t_cache
  t_free_filter t_stats t_remote_batch t_fork_kind t_mte t_trim t_options t_check t_atomic
  t_contract t_extras t_race_remote t_race_remap t_fork t_sigfork t_cancel t_static_c
  t_static_cxx t_cxx_new t_bulk.libc t_df_model t_idle_holder t_idle_holder.sweep t_race_seek
  t_race_reuse t_race_reuse.sweep t_optfuzz t_tsd_late)
foreach(t ${AX_QUICK_TESTS})
  if(TEST ${t})
    set_property(TEST ${t} APPEND PROPERTY LABELS quick)
  endif()
endforeach()
