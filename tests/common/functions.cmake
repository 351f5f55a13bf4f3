# SPDX-License-Identifier: MIT
# What every folder's <area>.cmake may use (tests/CMakeLists.txt includes this file first):
# the registration functions and the sizes that shrink under qemu. A folder's own tests and
# files sit beside its <area>.cmake; relative SOURCES are taken from there.
#
#   ax_test(<name> SOURCES <files...> [LIBS <libs...>] [ENV <VAR=value...>] [ARGS <args...>])
#       a test program linked with libaxmalloc.so (so malloc & co. resolve to axmalloc) and
#       the threads library; add_test uses the target name, so a cross build runs it under
#       CMAKE_CROSSCOMPILING_EMULATOR (qemu-aarch64) automatically
#   ax_test_each(EXCEPT <names...>)
#       one ax_test per t_*.c of the calling folder, named after the file, with no ENV, ARGS
#       or LIBS: a new plain test is a new file; the names in EXCEPT are registered by hand
#   ax_expect_fail(<name> <target> REGEX <regex> [ARGS <args...>] [ENV <VAR=value...>])
#       passes when <target> fails (non-zero exit or a signal) with output matching <regex>
#       (driver: common/expect_fail.cmake; the emulator is prepended in a cross build)
#   ax_sys_static(<name> SOURCES .. [LIBS ..] [DEFS ..] [OPTIONS <link options>] [DEPENDS ..]
#                 [PIE])
#       a -static program (-static-pie with PIE), no test: the caller adds it
set(AX_TESTS_COMMON ${CMAKE_CURRENT_LIST_DIR})

# ax_sources(<var>): the relative paths in <var> made absolute, from the calling file's folder
macro(ax_sources var)
  list(TRANSFORM ${var} PREPEND "${CMAKE_CURRENT_LIST_DIR}/" REGEX "^[^/$]")
endmacro()

function(ax_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;ENV;ARGS" ${ARGN})
  ax_sources(T_SOURCES)
  add_executable(${name} ${T_SOURCES})
  target_include_directories(${name} PRIVATE ${AX_TESTS_COMMON})
  target_compile_options(${name} PRIVATE -fno-builtin -Wall -Wextra -Wno-unused-parameter)
  target_link_libraries(${name} PRIVATE axmalloc Threads::Threads ${T_LIBS})
  add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
  if(T_ENV)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${T_ENV}")
  endif()
endfunction()

function(ax_test_each)
  cmake_parse_arguments(E "" "" "EXCEPT" ${ARGN})
  file(GLOB files RELATIVE ${CMAKE_CURRENT_LIST_DIR} CONFIGURE_DEPENDS
       ${CMAKE_CURRENT_LIST_DIR}/t_*.c)
  foreach(f IN LISTS files)
    get_filename_component(name ${f} NAME_WE)
    if(NOT name IN_LIST E_EXCEPT)
      ax_test(${name} SOURCES ${f})
    endif()
  endforeach()
endfunction()

function(ax_expect_fail name target)
  cmake_parse_arguments(F "" "REGEX" "ARGS;ENV" ${ARGN})
  string(REPLACE ";" "|" args "${F_ARGS}")
  add_test(NAME ${name}
    COMMAND ${CMAKE_COMMAND} "-DAX_EMU=${AX_EMU_ARG}" "-DAX_PROG=$<TARGET_FILE:${target}>"
            "-DAX_ARGS=${args}" "-DAX_EXPECT=${F_REGEX}"
            -P ${AX_TESTS_COMMON}/expect_fail.cmake)
  if(F_ENV)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${F_ENV}")
  endif()
endfunction()

# Every program linked by ax_sys_static is linked -static against glibc's libc.a: any symbol of
# the malloc family that axmalloc does not define pulls libc.a(malloc.o) in, and the link fails
# with a duplicate definition.
function(ax_sys_static name)
  cmake_parse_arguments(S "PIE" "" "SOURCES;LIBS;DEFS;OPTIONS;DEPENDS" ${ARGN})
  ax_sources(S_SOURCES)
  add_executable(${name} ${S_SOURCES})
  target_include_directories(${name} PRIVATE ${AX_TESTS_COMMON}
                             ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(${name} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  target_compile_definitions(${name} PRIVATE ${S_DEFS})
  target_link_libraries(${name} PRIVATE ${S_LIBS} Threads::Threads)
  if(S_PIE)
    set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    target_link_options(${name} PRIVATE -static-pie ${S_OPTIONS})
  else()
    target_link_options(${name} PRIVATE -static ${S_OPTIONS})
  endif()
  if(S_DEPENDS)
    add_dependencies(${name} ${S_DEPENDS})
  endif()
endfunction()

# ---- sizes of the threaded tests (concurrency/, and their checked runs in modes/):
# smaller under qemu-user (10-30x slower) ---------------------------------------------------
if(CMAKE_CROSSCOMPILING)
  set(AX_SYS_STORM_ITERS 50000)
  set(AX_SYS_PRODCONS_BLOCKS 600000)
  set(AX_SYS_THREADS 2000)
  set(AX_SYS_POOL_THREADS 300)
  # /proc/self/statm under qemu-user is qemu's RSS, which grows ~270 KiB per guest thread
  # (qemu 7.2, glibc malloc too): skip the RSS checks, keep the ax_stats ones.
  set(AX_SYS_THREADS_RSS_MIB 0)
  set(AX_SYS_FORKS 20)
  set(AX_SYS_FORK_TIMEOUT 60)
  # qemu-user 7.2 aborts in pthread_create in the child of a multithreaded process
  # ("cpu_exec: assertion failed: (cpu == current_cpu)"), with any malloc.
  set(AX_SYS_FORK_CHILD_THREAD 0)
  set(AX_SYS_TIMEOUT_SCALE 4)
else()
  set(AX_SYS_STORM_ITERS 300000)
  set(AX_SYS_PRODCONS_BLOCKS 3000000)
  set(AX_SYS_THREADS 10000)
  set(AX_SYS_POOL_THREADS 1000)
  set(AX_SYS_THREADS_RSS_MIB 200)
  set(AX_SYS_FORKS 20)
  set(AX_SYS_FORK_TIMEOUT 20)
  set(AX_SYS_FORK_CHILD_THREAD 1)
  set(AX_SYS_TIMEOUT_SCALE 1)
endif()
math(EXPR AX_SYS_TIMEOUT "300 * ${AX_SYS_TIMEOUT_SCALE}")
