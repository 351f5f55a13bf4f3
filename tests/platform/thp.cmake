# SPDX-License-Identifier: MIT
# Transparent huge pages (thp.c): the option and the kernel's mode and size, read at run time.
# The real kernel with each AXMALLOC_THP value, then fake sysfs directories (tests/thp/) for the
# kernels this machine is not: 2 MiB pages in `always` mode, `never`, none at all, and the
# AArch64 16 and 64 KiB page kernels' 32 and 512 MiB huge pages.
set(thp_smaps "")
if(NOT CMAKE_CROSSCOMPILING) # (under qemu-user /proc/self/smaps is the emulator's)
  set(thp_smaps smaps)
endif()
# (env: the option the environment gives, auto when none: a variant pass may set one)
ax_test(t_thp SOURCES t_thp.c ARGS env real real purge ${thp_smaps})
add_test(NAME t_thp.never COMMAND t_thp never real real purge ${thp_smaps})
add_test(NAME t_thp.always COMMAND t_thp always real real purge ${thp_smaps})
set_tests_properties(t_thp.never PROPERTIES ENVIRONMENT "AXMALLOC_THP=never")
set_tests_properties(t_thp.always PROPERTIES ENVIRONMENT "AXMALLOC_THP=always")
set(thp_dir ${CMAKE_CURRENT_SOURCE_DIR}/thp)
# name  option  fake directory  kernel  size  [more arguments]
foreach(c
    "madvise_2m|auto|madvise_2m|madvise|2097152|purge"
    "madvise_2m.always|always|madvise_2m|madvise|2097152|purge"
    "madvise_2m.never|never|madvise_2m|madvise|2097152"
    "always_2m|auto|always_2m|always|2097152|purge"
    "always_2m.never|never|always_2m|always|2097152"
    "always_2m.always|always|always_2m|always|2097152|purge"
    "never|auto|never|never|0"
    "never.always|always|never|never|0|purge"
    "absent|auto|absent|absent|0"
    "absent.always|always|absent|absent|0"
    "badsize|always|badsize|absent|0"
    "madvise_32m|auto|madvise_32m|madvise|33554432"
    "madvise_32m.always|always|madvise_32m|madvise|33554432|purge"
    "madvise_512m|auto|madvise_512m|madvise|536870912")
  string(REPLACE "|" ";" f "${c}")
  list(GET f 0 name)
  list(GET f 1 opt)
  list(GET f 2 dir)
  list(GET f 3 kernel)
  list(GET f 4 size)
  set(more "")
  list(LENGTH f n)
  if(n GREATER 5)
    list(SUBLIST f 5 -1 more)
  endif()
  add_test(NAME t_thp.fake.${name} COMMAND t_thp ${opt} ${kernel} ${size} ${more})
  set_tests_properties(t_thp.fake.${name} PROPERTIES ENVIRONMENT
    "AXMALLOC_THP=${opt};AXMALLOC_THP_SYSFS=${thp_dir}/${dir};AXMALLOC_VERBOSE=1"
    PASS_REGULAR_EXPRESSION "transparent huge pages ${opt} \\(kernel: ${kernel}, huge page [0-9]+ KiB\\)(.*\n)*t_thp ${opt} ${kernel} ${size}: OK")
endforeach()
# a value that is none of the three: said, and auto used
add_test(NAME t_thp.bad_option COMMAND t_thp auto madvise 2097152)
set_tests_properties(t_thp.bad_option PROPERTIES ENVIRONMENT
  "AXMALLOC_THP=sometimes;AXMALLOC_THP_SYSFS=${thp_dir}/madvise_2m"
  PASS_REGULAR_EXPRESSION "AXMALLOC_THP=sometimes is not auto, never or always: the default auto is used(.*\n)*t_thp auto madvise 2097152: OK")
