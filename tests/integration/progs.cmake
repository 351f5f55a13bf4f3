# SPDX-License-Identifier: MIT
# Real programs under LD_PRELOAD (issue 6): CPython's regression tests, sqlite3, lua5.4,
# perl, gcc, git and stress-ng, each run plainly and with libaxmalloc.so preloaded; outputs
# and exit status must match and axmalloc's stats must show it served the preloaded run
# (tests/t_progs.sh). These are host binaries, so the test exists in native builds only.
# The programs are Debian packages that scripts/deps.sh installs; a missing one fails.
if(NOT CMAKE_CROSSCOMPILING)
  add_test(NAME t_progs
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/t_progs.sh $<TARGET_FILE:axmalloc>)
  # COST: the longest test (2-3 minutes) starts first, so the rest runs beside it
  set_tests_properties(t_progs PROPERTIES TIMEOUT 900 LABELS system COST 10000)
endif()
