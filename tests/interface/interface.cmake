# SPDX-License-Identifier: MIT
# The entry points: their semantics, edge cases and bad input, stats, ax_ctl, the AXMALLOC_*
# options and their parser, and the contract against glibc. Each program asserts and exits
# non-zero on failure; AX_TEST_SCALE=<0..1> in the environment shrinks the loops (qemu).

# ---- the plain programs: one test per t_*.c of this folder (ax_test_each) -----------------
#   t_api          size classes, usable sizes, malloc(0), free(NULL), huge
#   t_calloc       zeroed memory: fresh, reused, huge (cached mappings)
#   t_realloc      contents kept across classes, huge, mremap growth
#   t_align        aligned_alloc/posix_memalign/memalign/valloc/pvalloc
#   t_errno        free keeps errno; overflow and > PTRDIFF_MAX -> ENOMEM
#   t_badfree      invalid/double free abort with the exact message
#   t_churn        1e5 random blocks: no overlap, patterns intact
#   t_full_pages   a free into a full page swaps it to the front
#   t_cache        the heap's cache of freed mid-size blocks
#   t_free_filter  free()'s double-free filter: who takes the full check
#   t_stats        ax_stats_get counters
#   t_trim         malloc_trim(0) makes RSS fall
#   t_options      stats printer; a quiet process prints nothing (its variants below)
#   t_zero         malloc(0): unique, inaccessible, freeable, one segment-aligned
#                  reservation, the fallback
#   t_extras       glibc extras: malloc_trim, mallinfo2/mallinfo, malloc_stats, malloc_info,
#                  mallopt, reallocarray, cfree, free_sized, free_aligned_sized
#   t_df_model     the double-free model (below)
ax_test_each(EXCEPT t_ctl t_optparse t_optsignal t_optfuzz t_contract t_ctl_names t_stats_write
             t_conf)

# ax_ctl: each figure against known sizes, each control, the options
ax_test(t_ctl SOURCES t_ctl.c ENV AXMALLOC_PURGE_DELAY_MS=25 AXMALLOC_THP=never)
add_test(NAME t_ctl.prof COMMAND t_ctl prof) # prof.active pauses and resumes sampling
set_tests_properties(t_ctl.prof PROPERTIES ENVIRONMENT "AXMALLOC_PROF=1;AXMALLOC_PROF_SAMPLE=4096"
                     SKIP_RETURN_CODE 77)

# ax_ctl's names listed, the per-class figures, the writable options, stats.dump (issue 42)
ax_test(t_ctl_names SOURCES t_ctl_names.c ENV AXMALLOC_THP=never
        AXMALLOC_THP_SYSFS=${PROJECT_SOURCE_DIR}/tests/platform/thp/madvise_2m)
add_test(NAME t_ctl_names.stats COMMAND t_ctl_names stats)
set_tests_properties(t_ctl_names.stats PROPERTIES
  ENVIRONMENT_MODIFICATION "AXMALLOC_STATS=unset:;AXMALLOC_VERBOSE=unset:"
  PASS_REGULAR_EXPRESSION "t_ctl_names stats: OK\n(.*\n)?axmalloc stats \\(pid [0-9]+\\):"
  FAIL_REGULAR_EXPRESSION "CHECK failed")

# ax_stats_write: the text forms checked in the program; the JSON by t_stats_write.py
# (json.tool, then its fields), with a profile prefix the JSON must escape (a quote, a
# backslash, a tab)
ax_test(t_stats_write SOURCES t_stats_write.c)
find_program(AX_PYTHON3 python3)
if(AX_PYTHON3)
  add_test(NAME t_stats_write.json
    COMMAND ${AX_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/t_stats_write.py
            $<TARGET_FILE:t_stats_write> "${AX_EMU_ARG}")
  set_tests_properties(t_stats_write.json PROPERTIES ENVIRONMENT
    "AXMALLOC_PURGE_DELAY_MS=25;AXMALLOC_THP=never;AXMALLOC_PROF_FILE=pre\"fix\\x\ty")
endif()

# axmalloc_conf, a program's compiled-in defaults: taken (dynamic and -static), overridden by
# the environment, its mistakes said in the environment's words
ax_test(t_conf SOURCES t_conf.c ARGS conf)
add_test(NAME t_conf.env COMMAND t_conf env)
ax_sys_static(t_conf_static SOURCES t_conf.c LIBS axmalloc_static)
add_test(NAME t_conf_static COMMAND t_conf_static conf)
add_test(NAME t_conf_static.env COMMAND t_conf_static env)
set_tests_properties(t_conf.env t_conf_static.env PROPERTIES
                     ENVIRONMENT "AXMALLOC_PURGE_DELAY_MS=30;AXMALLOC_THP=always")
set_tests_properties(t_conf t_conf_static PROPERTIES
                     ENVIRONMENT_MODIFICATION "AXMALLOC_PURGE_DELAY_MS=unset:;AXMALLOC_THP=unset:")
# AXMALLOC_VERBOSE names the conf as a value's source
add_test(NAME t_conf.verbose COMMAND t_conf conf)
set_tests_properties(t_conf.verbose PROPERTIES ENVIRONMENT "AXMALLOC_VERBOSE=1"
  ENVIRONMENT_MODIFICATION "AXMALLOC_PURGE_DELAY_MS=unset:;AXMALLOC_THP=unset:"
  PASS_REGULAR_EXPRESSION "option AXMALLOC_PURGE_DELAY_MS +50 +\\(axmalloc_conf\\)")
ax_test(t_conf_bad SOURCES t_conf.c)
target_compile_definitions(t_conf_bad PRIVATE CONF_BAD)
set_tests_properties(t_conf_bad PROPERTIES
  ENVIRONMENT_MODIFICATION "AXMALLOC_PURGE_DELAY_MS=unset:;AXMALLOC_THP=unset:;AXMALLOC_PROF_SAMPLE=unset:"
  PASS_REGULAR_EXPRESSION
  "axmalloc: AXMALLOC_STAT=1: no such option \\(did you mean AXMALLOC_STATS\\?\\)\naxmalloc: AXMALLOC_PROF_SAMPLE=abc is not a size \\(digits with an optional k, m or g suffix\\): the default 512k is used\naxmalloc: axmalloc_conf: nonsense is not name:value\naxmalloc: AXMALLOC_ZZZZZ=1: no such option \\(axmalloc\\(3\\) lists them\\)\n(.*\n)*t_conf_bad: OK"
  FAIL_REGULAR_EXPRESSION "CHECK failed")

# The figures above count the blocks in their classes' pages: a block the profiler sampled is
# not there (the profiler's pass leaves these out), and checked mode lays blocks out its own way
set_property(TEST t_ctl_names t_stats_write.json APPEND PROPERTY LABELS noprof)
if(AX_CHECKED)
  set_tests_properties(t_ctl_names t_stats_write.json PROPERTIES DISABLED TRUE)
endif()
# The conf tests and the JSON's options check what they set: a variant pass's options are not
# theirs (the environment would override the conf, as it should)
set_property(TEST t_conf t_conf.env t_conf.verbose t_conf_static t_conf_static.env t_conf_bad t_stats_write.json
             APPEND PROPERTY ENVIRONMENT_MODIFICATION
             "AXMALLOC_PROF=unset:;AXMALLOC_PROF_SAMPLE=unset:;AXMALLOC_LEAKS_EXITCODE=unset:;AXMALLOC_STATS=unset:")

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


# The default mode's internals (skip_when_tagging, tests/common/testutil.h): skipped while
# memory tagging is on (the qemu pass with AXMALLOC_MTE=1).
set_tests_properties(t_badfree t_full_pages t_cache t_free_filter PROPERTIES SKIP_RETURN_CODE 77)
# t_badfree also corrupts segment headers and page descriptors: it reads their layout from
# src/common/types.h; t_full_pages, t_cache and t_free_filter read page descriptors the
# same way.
foreach(t t_badfree t_full_pages t_cache t_free_filter)
  target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/src/common
                             ${PROJECT_SOURCE_DIR}/src/arch/${AX_ARCH})
endforeach()

# ---- the double-free model (t_df_model.c) -------------------------------------------------
# Every place a freed block can wait (batches, inboxes, thread_free, the cache, the page
# lists, abandoned segments, huge and zero-size blocks), freed again by the owner, the first
# freer, a third thread and a thread without a heap, each cell in a forked child whose every
# malloc is checked against a shadow set of the live blocks; it reads the places through
# types.h and list.h. The default mode's: it skips itself (77) in checked mode and while tagging; the
# profiler's passes leave it out (noprof, common/paths.cmake) and t_df_model.prof runs the places the
# profiler adds (the block aside, a sampled block's slot), sampling paused or every byte.
target_include_directories(t_df_model PRIVATE ${PROJECT_SOURCE_DIR}/src/common
                           ${PROJECT_SOURCE_DIR}/src/arch/${AX_ARCH})
# the owner mallocs right after the second free, before the others send what they hold
add_test(NAME t_df_model.owner_first COMMAND t_df_model -owner-first)
add_test(NAME t_df_model.prof COMMAND t_df_model prof)
set_tests_properties(t_df_model.prof PROPERTIES ENVIRONMENT
  "AXMALLOC_PROF=1;AXMALLOC_PROF_SAMPLE=1;AXMALLOC_PROF_FILE=${CMAKE_CURRENT_BINARY_DIR}/t_df_model")
set_tests_properties(t_df_model t_df_model.owner_first t_df_model.prof PROPERTIES
                     SKIP_RETURN_CODE 77)

# ---- the AXMALLOC_* options -------------------------------------------------------------
# The AXMALLOC_* options' parser (src/common/options.c): t_optparse.sh sets options and
# checks what the library took (t_optparse.c prints it; AXMALLOC_VERBOSE=1 lists every
# option) and the one line each mistake gets, word for word. One test per rule:
#
#   t_optparse.sizes    k/m/g suffixes in 1024s (AXMALLOC_PROF_SAMPLE, AXMALLOC_PAGE_SIZE)
#   t_optparse.garbage  abc, -1, 0, " 65536", 1e6, 64kb, overflows, out of range, bad words:
#                       one line each, the default used
#   t_optparse.bools    1/0/yes/no/true/false/on/off in mixed case, on every bool option;
#                       the control bytes 0x11 and 0x10 are not 1 and 0
#   t_optparse.signals  AXMALLOC_PROF_SIGNAL: USR1, USR2, RTMIN to RTMAX by name and number;
#                       every other signal refused, by name and number alike
#   t_optparse.unknown  a misspelt name gets the nearest one; AXMALLOC_LIB, _THP_SYSFS silent
#   t_optparse.verbose  AXMALLOC_VERBOSE=1's listing: every option, aligned, environment or
#                       default
#   t_optparse.prefix   AXMALLOC_PROF_FILE made absolute at start-up; a missing or unwritable
#                       directory said at start-up (as root: as user 65534, through setpriv)
#
# The script runs the program under the emulator in a cross build (qemu-aarch64). And:
#
#   t_optsignal[.*]     AXMALLOC_PROF_SIGNAL end to end (t_optsignal.c)
#   t_optfuzz           the parser against a model of the documented grammar (t_optfuzz.c)
#
# None of these runs in a variant pass of scripts/test.sh (VARIANT_EXCLUDE): t_optparse.sh
# unsets every AXMALLOC_* variable, t_optsignal sets its own, t_optfuzz calls the parser.
find_program(AX_BASH_OPTS bash REQUIRED)
ax_test(t_optparse_prog SOURCES t_optparse.c) # (alone: the defaults, no line from the library)
set_tests_properties(t_optparse_prog PROPERTIES FAIL_REGULAR_EXPRESSION "(^|\n)axmalloc")
foreach(rule sizes garbage bools signals unknown verbose prefix)
  add_test(NAME t_optparse.${rule}
    COMMAND ${AX_BASH_OPTS} ${CMAKE_CURRENT_LIST_DIR}/t_optparse.sh ${rule}
            $<TARGET_FILE:t_optparse_prog> "${AX_EMU_ARG}")
  set_tests_properties(t_optparse.${rule} PROPERTIES LABELS options SKIP_RETURN_CODE 77
                       TIMEOUT 300)
endforeach()

# AXMALLOC_PROF_SIGNAL end to end (issue 38): a signal whose meaning a dump handler would take
# away is refused in one line and keeps its default action, and a child dies of it (the
# issue's SIGSEGV by number, SIGBUS by number where its name was refused, SIGTERM by name);
# a real-time one writes a profile.
ax_test(t_optsignal SOURCES t_optsignal.c ARGS refused 11)
add_test(NAME t_optsignal.bus COMMAND t_optsignal refused 7)
add_test(NAME t_optsignal.term COMMAND t_optsignal refused 15)
foreach(c "t_optsignal|11|11" "t_optsignal.bus|7|7" "t_optsignal.term|SIGTERM|15")
  string(REPLACE "|" ";" c "${c}")
  list(GET c 0 test)
  list(GET c 1 given)
  list(GET c 2 number)
  set_tests_properties(${test} PROPERTIES LABELS options
    ENVIRONMENT "AXMALLOC_PROF=1;AXMALLOC_PROF_SIGNAL=${given}" PASS_REGULAR_EXPRESSION
    "axmalloc: AXMALLOC_PROF_SIGNAL=${given} is not a signal for profiles \\(USR1, USR2, RTMIN to RTMAX: [0-9]+, [0-9]+, [0-9]+ to [0-9]+\\): the default none is used\n(.*\n)*t_optsignal refused ${number}: OK")
endforeach()
add_test(NAME t_optsignal.rt COMMAND t_optsignal dump RTMIN+2)
set_tests_properties(t_optsignal.rt PROPERTIES LABELS options SKIP_RETURN_CODE 77 ENVIRONMENT
  "AXMALLOC_PROF=1;AXMALLOC_PROF_SIGNAL=SIGRTMIN+2;AXMALLOC_PROF_FILE=${CMAKE_CURRENT_BINARY_DIR}/t_optsignal")

# The parser against a model of its documented grammar (t_optfuzz.c): every option, its
# edges and 1,500 random byte strings from a fixed seed, and every signal by number and name,
# in process (ax_test_option: axmalloc_hooks, concurrency/concurrency.cmake); 0.1 s natively, 0.5 s under
# qemu.
add_executable(t_optfuzz ${CMAKE_CURRENT_LIST_DIR}/t_optfuzz.c)
target_include_directories(t_optfuzz PRIVATE ${AX_TESTS_COMMON})
target_compile_options(t_optfuzz PRIVATE -fno-builtin -Wall -Wextra -Wno-unused-parameter
                       -DAX_TEST_HOOKS=1)
target_link_libraries(t_optfuzz PRIVATE axmalloc_hooks Threads::Threads)
add_test(NAME t_optfuzz COMMAND t_optfuzz)
set_tests_properties(t_optfuzz PROPERTIES LABELS options SKIP_RETURN_CODE 77)

# No option silently does nothing (issue 42; t_optneeds.sh, on t_optparse_prog):
#   t_optneeds.needs    every option the library lists against the script's list of what
#                       each needs: alone, one line naming the option to set; with it, none
#   t_optneeds.unknown  a name that is no option gets the nearest one only when it is near
#   t_optneeds.verbose  AXMALLOC_VERBOSE=1: the version line first, the bulk plan once
#   t_optneeds.signals  AXMALLOC_PROF_SIGNAL=KILL, STOP: "cannot be caught"
foreach(rule needs unknown verbose signals)
  add_test(NAME t_optneeds.${rule}
    COMMAND ${AX_BASH_OPTS} ${CMAKE_CURRENT_LIST_DIR}/t_optneeds.sh ${rule}
            $<TARGET_FILE:t_optparse_prog> "${AX_EMU_ARG}")
  set_tests_properties(t_optneeds.${rule} PROPERTIES LABELS options TIMEOUT 300)
endforeach()

# ---- the contract against glibc (driver: contract.cmake) ----------------------------------
# The program must not link axmalloc: it runs on glibc's malloc unless the driver preloads
# libaxmalloc.so. Under qemu the small address-space model, inside ulimit -v: qemu's own
# ~240 MiB plus 640 MiB for the guest (the program checks it can map 512 MiB and not 768).
add_executable(t_contract ${CMAKE_CURRENT_LIST_DIR}/t_contract.c
                          ${CMAKE_CURRENT_LIST_DIR}/t_contract_cxx.cc)
target_include_directories(t_contract PRIVATE ${AX_TESTS_COMMON}
                           ${PROJECT_SOURCE_DIR}/include)
target_compile_options(t_contract PRIVATE -fno-builtin -Wall -Wextra -Wno-unused-parameter)
set_target_properties(t_contract PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
target_link_libraries(t_contract PRIVATE ${CMAKE_DL_LIBS})
add_dependencies(t_contract axmalloc)
if(CMAKE_CROSSCOMPILING)
  set(AX_CONTRACT_MODEL small)
  set(AX_CONTRACT_VMEM_KIB 901120)
else()
  set(AX_CONTRACT_MODEL large)
  set(AX_CONTRACT_VMEM_KIB 0)
endif()
add_test(NAME t_contract
  COMMAND ${CMAKE_COMMAND} "-DAX_EMU=${AX_EMU_ARG}" "-DAX_PROG=$<TARGET_FILE:t_contract>"
          "-DAX_LIB=$<TARGET_FILE:axmalloc>"
          "-DAX_EXPECTED=${CMAKE_CURRENT_LIST_DIR}/contract_expected.txt"
          "-DAX_WORK=${CMAKE_CURRENT_BINARY_DIR}/t_contract.d" "-DAX_MODEL=${AX_CONTRACT_MODEL}"
          "-DAX_VMEM_KIB=${AX_CONTRACT_VMEM_KIB}"
          -P ${CMAKE_CURRENT_LIST_DIR}/contract.cmake)
set_tests_properties(t_contract PROPERTIES LABELS "api;contract" TIMEOUT 300)
