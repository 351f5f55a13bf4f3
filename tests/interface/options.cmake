# SPDX-License-Identifier: MIT
# The AXMALLOC_* options' parser (src/common/options.c): tests/t_optparse.sh sets options and
# checks what the library took (tests/t_optparse.c prints it; AXMALLOC_VERBOSE=1 lists every
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
    COMMAND ${AX_BASH_OPTS} ${CMAKE_CURRENT_SOURCE_DIR}/t_optparse.sh ${rule}
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
# in process (ax_test_option: axmalloc_hooks, tests/race.cmake); 0.1 s natively, 0.5 s under
# qemu.
add_executable(t_optfuzz t_optfuzz.c)
target_include_directories(t_optfuzz PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_options(t_optfuzz PRIVATE -fno-builtin -Wall -Wextra -Wno-unused-parameter
                       -DAX_TEST_HOOKS=1)
target_link_libraries(t_optfuzz PRIVATE axmalloc_hooks Threads::Threads)
add_test(NAME t_optfuzz COMMAND t_optfuzz)
set_tests_properties(t_optfuzz PROPERTIES LABELS options SKIP_RETURN_CODE 77)
