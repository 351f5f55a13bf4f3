# SPDX-License-Identifier: MIT
# The sampling heap profiler (AXMALLOC_PROF): tests/t_prof.c allocates known amounts from
# known functions, tests/t_prof.sh reads its profiles with google-pprof and checks the numbers,
# the leak report and the dump on a signal. Linked with libaxmalloc.so and, statically, with
# libaxmalloc.a (the stack walk and the section bounds of a static program); in a cross
# build both run under the emulator and pprof symbolizes with the target's binutils.
find_program(AX_BASH_PROF bash REQUIRED)
set(ax_prof_tools "")
if(CMAKE_CROSSCOMPILING AND AX_CROSS_TRIPLE)
  # pprof's --tools takes a path prefix: /usr/bin/aarch64-linux-gnu- (binutils-aarch64-linux-gnu)
  find_program(AX_CROSS_NM ${AX_CROSS_TRIPLE}-nm)
  if(AX_CROSS_NM)
    get_filename_component(ax_nm_dir ${AX_CROSS_NM} DIRECTORY)
    set(ax_prof_tools "${ax_nm_dir}/${AX_CROSS_TRIPLE}-")
  endif()
endif()

ax_test(t_prof_prog SOURCES t_prof.c)
set_tests_properties(t_prof_prog PROPERTIES WILL_FAIL ON) # (the program alone: usage, exit 2)
ax_sys_static(t_prof_static SOURCES t_prof.c LIBS axmalloc_static)
target_compile_options(t_prof_static PRIVATE -fno-builtin)

foreach(prog t_prof_prog t_prof_static)
  string(REPLACE "_prog" "" name ${prog})
  add_test(NAME ${name}
    COMMAND ${AX_BASH_PROF} ${CMAKE_CURRENT_SOURCE_DIR}/t_prof.sh $<TARGET_FILE:${prog}>
            "${AX_EMU_ARG}" "${ax_prof_tools}")
  set_tests_properties(${name} PROPERTIES LABELS "prof" SKIP_RETURN_CODE 77 TIMEOUT 600)
endforeach()

# A JIT's unwind tables registered, walked and deregistered under every mode that walks stacks
# at malloc or free (tests/t_jit_frames.c): a hang is the failure (TIMEOUT)
ax_test(t_jit_frames SOURCES t_jit_frames.c)
foreach(mode "check|AXMALLOC_CHECK=1;AXMALLOC_PROF=1" "leaks|AXMALLOC_LEAKS=1"
             "prof|AXMALLOC_PROF=1;AXMALLOC_PROF_SAMPLE=1;AXMALLOC_PROF_FILE=${CMAKE_CURRENT_BINARY_DIR}/t_jit_frames")
  string(REGEX MATCH "^([^|]*)\\|(.*)$" _ "${mode}")
  add_test(NAME t_jit_frames.${CMAKE_MATCH_1} COMMAND t_jit_frames)
  set_tests_properties(t_jit_frames.${CMAKE_MATCH_1} PROPERTIES ENVIRONMENT "${CMAKE_MATCH_2}"
                       TIMEOUT 120 SKIP_RETURN_CODE 77 LABELS noprof)
endforeach()
set_tests_properties(t_jit_frames PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
