# SPDX-License-Identifier: MIT
# The AXMALLOC_* options' parser (src/common/options.c): tests/t_optparse.sh sets options and
# checks what the library took (tests/t_optparse.c prints it; AXMALLOC_VERBOSE=1 lists every
# option) and the one line each mistake gets, word for word. One test per rule:
#
#   t_optparse.sizes    k/m/g suffixes in 1024s (AXMALLOC_PROF_SAMPLE, AXMALLOC_PAGE_SIZE)
#   t_optparse.garbage  abc, -1, 0, " 65536", 1e6, 64kb, overflows, out of range, bad words and
#                       signals: one line each, the default used
#   t_optparse.bools    1/0/yes/no/true/false/on/off in mixed case, on every bool option;
#                       the control bytes 0x11 and 0x10 are not 1 and 0
#   t_optparse.unknown  a misspelt name gets the nearest one; AXMALLOC_LIB, _THP_SYSFS silent
#   t_optparse.verbose  AXMALLOC_VERBOSE=1's listing: every option, aligned, environment or
#                       default
#   t_optparse.prefix   AXMALLOC_PROF_FILE made absolute at start-up; a missing or unwritable
#                       directory said at start-up (as root: as user 65534, through setpriv)
#
# The script runs the program under the emulator in a cross build (qemu-aarch64).
find_program(AX_BASH_OPTS bash REQUIRED)
ax_test(t_optparse_prog SOURCES t_optparse.c) # (alone: the defaults, no line from the library)
set_tests_properties(t_optparse_prog PROPERTIES FAIL_REGULAR_EXPRESSION "(^|\n)axmalloc")
foreach(rule sizes garbage bools unknown verbose prefix)
  add_test(NAME t_optparse.${rule}
    COMMAND ${AX_BASH_OPTS} ${CMAKE_CURRENT_SOURCE_DIR}/t_optparse.sh ${rule}
            $<TARGET_FILE:t_optparse_prog> "${AX_EMU_ARG}")
  set_tests_properties(t_optparse.${rule} PROPERTIES LABELS options SKIP_RETURN_CODE 77
                       TIMEOUT 300)
endforeach()
