# SPDX-License-Identifier: MIT
# API semantics, edge cases and bad input (tests/t_*.c). Each program asserts and exits
# non-zero on failure; AX_TEST_SCALE=<0..1> in the environment shrinks the loops (qemu).
ax_test(t_api SOURCES t_api.c)         # size classes, usable sizes, malloc(0), free(NULL), huge
ax_test(t_calloc SOURCES t_calloc.c)   # zeroed memory: fresh, reused, huge (cached mappings)
ax_test(t_realloc SOURCES t_realloc.c) # contents kept across classes, huge, mremap growth
ax_test(t_align SOURCES t_align.c)     # aligned_alloc/posix_memalign/memalign/valloc/pvalloc
ax_test(t_errno SOURCES t_errno.c)     # free keeps errno; overflow and > PTRDIFF_MAX -> ENOMEM
ax_test(t_badfree SOURCES t_badfree.c) # invalid/double free abort with the exact message
ax_test(t_churn SOURCES t_churn.c)     # 1e5 random blocks: no overlap, patterns intact
ax_test(t_full_pages SOURCES t_full_pages.c) # a free into a full page swaps it to the front
ax_test(t_cache SOURCES t_cache.c)     # the heap's cache of freed mid-size blocks
ax_test(t_free_filter SOURCES t_free_filter.c) # free()'s double-free filter: who takes the full check
ax_test(t_stats SOURCES t_stats.c)     # ax_stats_get counters
ax_test(t_remote_batch SOURCES t_remote_batch.c) # remote frees published alone or in chains
ax_test(t_fork_kind SOURCES t_fork_kind.c) # a fork child knows whether remote frees can wait
ax_test(t_mte SOURCES t_mte.c ENV AXMALLOC_MTE=1) # memory tagging: hardware-caught misuse (AArch64 MTE)
ax_test(t_trim SOURCES t_trim.c)       # malloc_trim(0) makes RSS fall
# an idle thread's batches of remote frees sent by others: another's trim, a sweep
ax_test(t_idle_holder SOURCES t_idle_holder.c ARGS trim)
add_test(NAME t_idle_holder.sweep COMMAND t_idle_holder sweep)
set_tests_properties(t_idle_holder t_idle_holder.sweep PROPERTIES SKIP_RETURN_CODE 77)
ax_test(t_options SOURCES t_options.c) # stats printer; a quiet process prints nothing
ax_test(t_zero SOURCES t_zero.c) # malloc(0): unique, inaccessible, freeable, one segment-aligned reservation, the fallback
ax_test(t_ctl SOURCES t_ctl.c ENV AXMALLOC_PURGE_DELAY_MS=25 AXMALLOC_THP=never) # ax_ctl: each figure against known sizes, each control, the options
add_test(NAME t_ctl.prof COMMAND t_ctl prof) # prof.active pauses and resumes sampling
set_tests_properties(t_ctl.prof PROPERTIES ENVIRONMENT "AXMALLOC_PROF=1;AXMALLOC_PROF_SAMPLE=4096"
                     SKIP_RETURN_CODE 77)

# Options are read once at start-up, so each gets its own run. Variants use the target name
# as COMMAND so that a cross build prepends the emulator.
set_tests_properties(t_options PROPERTIES
  ENVIRONMENT_MODIFICATION "AXMALLOC_STATS=unset:;AXMALLOC_VERBOSE=unset:"
  FAIL_REGULAR_EXPRESSION "(^|\n)axmalloc")
add_test(NAME t_options.stats COMMAND t_options stats)
set_tests_properties(t_options.stats PROPERTIES
  ENVIRONMENT "AXMALLOC_STATS=1" ENVIRONMENT_MODIFICATION "AXMALLOC_VERBOSE=unset:"
  # this process's own at-exit report, after main returned
  PASS_REGULAR_EXPRESSION "t_options stats: OK\n(.*\n)?axmalloc stats \\(pid [0-9]+\\):"
  FAIL_REGULAR_EXPRESSION "CHECK failed")
add_test(NAME t_options.verbose COMMAND t_options verbose)
set_tests_properties(t_options.verbose PROPERTIES
  ENVIRONMENT "AXMALLOC_VERBOSE=1" ENVIRONMENT_MODIFICATION "AXMALLOC_STATS=unset:"
  # PASS_REGULAR_EXPRESSION ignores the exit code: require the final OK line after a line
  # starting with "axmalloc:", and fail on any CHECK message
  PASS_REGULAR_EXPRESSION "(^|\n)axmalloc:[^\n]*\n(.*\n)?t_options: verbose OK"
  FAIL_REGULAR_EXPRESSION "CHECK failed")

# The page size is read at run time; AXMALLOC_PAGE_SIZE pretends a 16 or 64 KiB kernel.
ax_test(t_pagesize SOURCES t_pagesize.c)
foreach(ps 16384 65536)
  add_test(NAME t_pagesize.${ps} COMMAND t_pagesize)
  set_tests_properties(t_pagesize.${ps} PROPERTIES ENVIRONMENT "AXMALLOC_PAGE_SIZE=${ps}")
endforeach()

# glibc extras: malloc_trim, mallinfo2/mallinfo, malloc_stats, malloc_info, mallopt,
# reallocarray, cfree, free_sized, free_aligned_sized
ax_test(t_extras SOURCES t_extras.c)

# The default mode's internals (skip_when_tagging, tests/testutil.h): skipped while memory
# tagging is on (the qemu pass with AXMALLOC_MTE=1).
set_tests_properties(t_badfree t_full_pages t_cache t_free_filter PROPERTIES SKIP_RETURN_CODE 77)
