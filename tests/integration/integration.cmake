# SPDX-License-Identifier: MIT
# How programs get axmalloc, and what ships: -static links and link order, LD_PRELOAD into
# real programs, the C++ operators, cmake --install and its consumers, the launcher, the
# Debian packages, the man pages, the SPDX lines.

# ---- static linking --------------------------------------------------------------------
# Every program here is linked -static against glibc's libc.a (ax_sys_static,
# common/functions.cmake).
#
# A test that runs the program with AXMALLOC_STATS=1 (driver: stats.cmake) and checks
# axmalloc's statistics reach stderr with a non-zero mallocs count.
function(ax_sys_stats_test name target)
  add_test(NAME ${name}
    COMMAND ${CMAKE_COMMAND} "-DAX_EMU=${AX_EMU_ARG}" "-DAX_PROG=$<TARGET_FILE:${target}>"
            -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/stats.cmake)
  set_tests_properties(${name} PROPERTIES TIMEOUT ${AX_SYS_TIMEOUT} LABELS "system;static")
endfunction()

# C program calling the malloc family itself, linked with libaxmalloc.a.
ax_sys_static(t_static_c SOURCES t_static_c.c LIBS axmalloc_static)
add_test(NAME t_static_c COMMAND t_static_c)
set_tests_properties(t_static_c PROPERTIES LABELS "system;static")
ax_sys_stats_test(t_static_c_stats t_static_c)

# C++: std::string/std::vector churn, aligned new, exceptions, std::thread.
ax_sys_static(t_static_cxx SOURCES t_static_cxx.cc LIBS axmalloc_static)
set_target_properties(t_static_cxx PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
add_test(NAME t_static_cxx COMMAND t_static_cxx)
set_tests_properties(t_static_cxx PROPERTIES LABELS "system;static")
ax_sys_stats_test(t_static_cxx_stats t_static_cxx)
# ... and the same program linked with the relocatable axmalloc.o (README's C++ recipe).
ax_sys_static(t_static_cxx_o SOURCES t_static_cxx.cc LIBS ${AX_RELOC_OBJECT}
              DEPENDS axmalloc_reloc)
set_target_properties(t_static_cxx_o PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON
                      LINK_DEPENDS ${AX_RELOC_OBJECT})
add_test(NAME t_static_cxx_o COMMAND t_static_cxx_o)
set_tests_properties(t_static_cxx_o PROPERTIES LABELS "system;static")

# A program that never calls malloc itself, three ways of linking axmalloc in:
# 1. the relocatable axmalloc.o (the shipped answer to this case),
ax_sys_static(t_static_nomalloc SOURCES t_static_nomalloc.c LIBS ${AX_RELOC_OBJECT}
              DEPENDS axmalloc_reloc)
set_target_properties(t_static_nomalloc PROPERTIES LINK_DEPENDS ${AX_RELOC_OBJECT})
ax_sys_stats_test(t_static_nomalloc t_static_nomalloc)
# 2. libaxmalloc.a under -Wl,--whole-archive ... -Wl,--no-whole-archive,
ax_sys_static(t_static_nomalloc_wa SOURCES t_static_nomalloc.c DEFS AX_SELF_CHECK
              LIBS "$<LINK_LIBRARY:WHOLE_ARCHIVE,axmalloc_static>")
ax_sys_stats_test(t_static_nomalloc_wa t_static_nomalloc_wa)
# 3. libaxmalloc.a with -Wl,-u,malloc (the documented one-flag alternative).
ax_sys_static(t_static_nomalloc_u SOURCES t_static_nomalloc.c LIBS axmalloc_static
              OPTIONS -Wl,-u,malloc)
ax_sys_stats_test(t_static_nomalloc_u t_static_nomalloc_u)

# -static-pie: a position-independent static program (axmalloc's objects are PIC).
ax_sys_static(t_static_pie_c SOURCES t_static_c.c LIBS axmalloc_static PIE)
add_test(NAME t_static_pie_c COMMAND t_static_pie_c)
ax_sys_static(t_static_pie_cxx SOURCES t_static_cxx.cc LIBS axmalloc_static PIE
              OPTIONS ${AX_CXX_STATIC_LINK_FLAGS})
set_target_properties(t_static_pie_cxx PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
add_test(NAME t_static_pie_cxx COMMAND t_static_pie_cxx)
ax_sys_stats_test(t_static_pie_cxx_stats t_static_pie_cxx)
# ... and its binaries are really static PIE (ET_DYN without an interpreter).
add_test(NAME t_static_pie_kind
  COMMAND sh -c "f=$1; readelf -h \"$f\" | grep -q 'DYN' && ! readelf -l \"$f\" | grep -q INTERP && echo static-pie: ok"
          sh $<TARGET_FILE:t_static_pie_cxx>)
set_tests_properties(t_static_pie_c t_static_pie_cxx t_static_pie_kind PROPERTIES
  LABELS "system;static" )
set_tests_properties(t_static_pie_kind PROPERTIES PASS_REGULAR_EXPRESSION "static-pie: ok")

# Link order: libc before axmalloc must not link (a duplicate malloc), never mix.
add_test(NAME t_linkorder
  COMMAND ${CMAKE_COMMAND} -DAX_CC=${CMAKE_C_COMPILER} -DAX_INCLUDE=${PROJECT_SOURCE_DIR}/include
          "-DAX_EMU=${AX_EMU_ARG}"
          -DAX_LIB=$<TARGET_FILE:axmalloc_static> -DAX_OBJ=${AX_RELOC_OBJECT}
          -DAX_SRC=${CMAKE_CURRENT_LIST_DIR}/t_linkorder.c
          -DAX_WORK=${CMAKE_CURRENT_BINARY_DIR}/t_linkorder.d
          -P ${CMAKE_CURRENT_LIST_DIR}/t_linkorder.cmake)
set_tests_properties(t_linkorder PROPERTIES LABELS "system;static")

# ---- LD_PRELOAD into real host programs (host binaries: native builds only) ----------
if(NOT CMAKE_CROSSCOMPILING)
  add_test(NAME t_preload
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/t_preload.sh $<TARGET_FILE:axmalloc>)
  set_tests_properties(t_preload PROPERTIES TIMEOUT 600 LABELS system)
endif()

# ---- C++ operators new/delete ------------------------------------------------------------
# C++ operators new/delete (src/common/new_delete.cc), from the shared library and linked
# -static, natively and under qemu-aarch64.

# Dynamic: libaxmalloc.so's operators win over libstdc++'s (dladdr proves it).
ax_test(t_cxx_new SOURCES t_cxx_new.cc LIBS ${CMAKE_DL_LIBS})
set_target_properties(t_cxx_new PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
ax_expect_fail(t_cxx_new.baddelete t_cxx_new ARGS baddelete
               REGEX "axmalloc: operator delete\\(\\): invalid pointer 0x[0-9a-f]+")
# sized delete with another class's size: `delete` of a `new char[4096]`, a type's wrong size
# (the block holds its class's 16 bytes, or in an AX_CHECKED=ON build the 1 asked for)
ax_expect_fail(t_cxx_new.delarray t_cxx_new ARGS delarray
               REGEX "axmalloc: operator delete\\(\\): size mismatch 0x[0-9a-f]+ \\(freed as 1 byte, the block holds 4096\\)")
ax_expect_fail(t_cxx_new.deltype t_cxx_new ARGS deltype
               REGEX "axmalloc: operator delete\\(\\): size mismatch 0x[0-9a-f]+ \\(freed as 72 bytes, the block holds (16|1)\\)")

# checked mode knows new[]'s blocks: delete[] of a `new char` aborts
ax_expect_fail(t_cxx_new.arraydelete t_cxx_new ARGS arraydelete ENV AXMALLOC_CHECK=1
               REGEX "axmalloc: operator delete\\[\\]\\(\\): mismatched deallocation of 0x[0-9a-f]+ \\(allocated by malloc or operator new\\)")

# -static against libaxmalloc.a, with the flags the CMake package and axmalloc.pc add.
ax_sys_static(t_cxx_new_static SOURCES t_cxx_new.cc DEFS AX_STATIC LIBS axmalloc_static
              OPTIONS ${AX_CXX_STATIC_LINK_FLAGS})
set_target_properties(t_cxx_new_static PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
add_test(NAME t_cxx_new_static COMMAND t_cxx_new_static)
ax_expect_fail(t_cxx_new_static.baddelete t_cxx_new_static ARGS baddelete
               REGEX "axmalloc: operator delete\\(\\): invalid pointer 0x[0-9a-f]+")
# sized delete with another class's size: `delete` of a `new char[4096]`, a type's wrong size
# (the block holds its class's 16 bytes, or in an AX_CHECKED=ON build the 1 asked for)
ax_expect_fail(t_cxx_new_static.delarray t_cxx_new_static ARGS delarray
               REGEX "axmalloc: operator delete\\(\\): size mismatch 0x[0-9a-f]+ \\(freed as 1 byte, the block holds 4096\\)")
ax_expect_fail(t_cxx_new_static.deltype t_cxx_new_static ARGS deltype
               REGEX "axmalloc: operator delete\\(\\): size mismatch 0x[0-9a-f]+ \\(freed as 72 bytes, the block holds (16|1)\\)")

# A program that never names std::bad_alloc: dynamically and with the -u flags, a failed
# new is a catchable exception; -static without them, axmalloc's message says what to add.
ax_test(t_cxx_nobadalloc SOURCES t_cxx_nobadalloc.cc)
set_tests_properties(t_cxx_nobadalloc PROPERTIES PASS_REGULAR_EXPRESSION "caught")
ax_sys_static(t_cxx_nobadalloc_u SOURCES t_cxx_nobadalloc.cc LIBS axmalloc_static
              OPTIONS ${AX_CXX_STATIC_LINK_FLAGS})
add_test(NAME t_cxx_nobadalloc_u COMMAND t_cxx_nobadalloc_u)
set_tests_properties(t_cxx_nobadalloc_u PROPERTIES PASS_REGULAR_EXPRESSION "caught")
ax_sys_static(t_cxx_nobadalloc_static SOURCES t_cxx_nobadalloc.cc LIBS axmalloc_static)
ax_expect_fail(t_cxx_nobadalloc_static t_cxx_nobadalloc_static
  REGEX "axmalloc: operator new\\([0-9]+\\): out of memory, and std::bad_alloc is not linked in \\(static link: add -Wl,-u,_ZTISt9bad_alloc")

# A program that replaces only new(size_t) and delete(void *): every other form must go
# through them (dynamic: the executable's win; static: ours are weak).
ax_test(t_cxx_replaced SOURCES t_cxx_replaced.cc)
set_target_properties(t_cxx_replaced PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
target_compile_options(t_cxx_replaced PRIVATE -Wno-sized-deallocation)
ax_sys_static(t_cxx_replaced_static SOURCES t_cxx_replaced.cc LIBS axmalloc_static
              OPTIONS ${AX_CXX_STATIC_LINK_FLAGS})
set_target_properties(t_cxx_replaced_static PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
target_compile_options(t_cxx_replaced_static PRIVATE -Wno-sized-deallocation)
add_test(NAME t_cxx_replaced_static COMMAND t_cxx_replaced_static)

# The operators' object asks nothing of the C++ runtime but weakly, so that C programs
# link it (axmalloc.o, --whole-archive) without libstdc++.
add_test(NAME t_cxx_weakrefs
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/t_cxx_weakrefs.sh ${CMAKE_NM} ${AX_RELOC_OBJECT})
set_tests_properties(t_cxx_replaced t_cxx_replaced_static t_cxx_new t_cxx_new_static t_cxx_nobadalloc t_cxx_nobadalloc_u
  t_cxx_nobadalloc_static t_cxx_weakrefs t_cxx_new.baddelete t_cxx_new_static.baddelete
  t_cxx_new.delarray t_cxx_new_static.delarray t_cxx_new.deltype t_cxx_new_static.deltype
  t_cxx_new.arraydelete
  PROPERTIES LABELS cxx)

# ---- real programs under LD_PRELOAD -------------------------------------------------------
# Real programs under LD_PRELOAD (issue 6): CPython's regression tests, sqlite3, lua5.4,
# perl, gcc, git and stress-ng, each run plainly and with libaxmalloc.so preloaded; outputs
# and exit status must match and axmalloc's stats must show it served the preloaded run
# (t_progs.sh). These are host binaries, so the test exists in native builds only.
# The programs are Debian packages that scripts/deps.sh installs; a missing one fails.
if(NOT CMAKE_CROSSCOMPILING)
  add_test(NAME t_progs
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/t_progs.sh $<TARGET_FILE:axmalloc>)
  # COST: the longest test (2-3 minutes) starts first, so the rest runs beside it
  set_tests_properties(t_progs PROPERTIES TIMEOUT 900 LABELS system COST 10000)
endif()

# ---- the documents' commands (docs.cmake: t_docs, t_pprof_svg) --------------------------
include(${CMAKE_CURRENT_LIST_DIR}/docs.cmake)

# ---- cmake --install (last two sections: each returns early) ------------------------------
# cmake --install and the installed packages: t_install.sh installs this build tree
# into a private temporary prefix, checks the files, builds consumer/ through
# find_package(axmalloc) and plain compiler lines through pkg-config (Debian package
# pkgconf), and runs every program: natively, or under CMAKE_CROSSCOMPILING_EMULATOR with
# the consumer configured with the same toolchain file in a cross build.
#
# Not in sanitizer builds: their library needs the sanitizer runtime at every link, which
# is no installable product.
if(NOT AX_SANITIZE STREQUAL "")
  return()
endif()
find_program(AX_BASH bash REQUIRED)
# cmake -DCMAKE_TOOLCHAIN_FILE=<relative> is taken relative to the build directory, then
# the source directory: hand the consumer an absolute path.
set(ax_install_toolchain "${CMAKE_TOOLCHAIN_FILE}")
if(ax_install_toolchain AND NOT IS_ABSOLUTE "${ax_install_toolchain}")
  foreach(base ${CMAKE_BINARY_DIR} ${PROJECT_SOURCE_DIR})
    if(EXISTS "${base}/${ax_install_toolchain}")
      set(ax_install_toolchain "${base}/${ax_install_toolchain}")
      break()
    endif()
  endforeach()
endif()
if(CMAKE_CROSSCOMPILING)
  set(ax_install_cross 1)
else()
  set(ax_install_cross 0)
endif()
add_test(NAME t_install
  COMMAND ${AX_BASH} ${CMAKE_CURRENT_LIST_DIR}/t_install.sh
    "build=${CMAKE_BINARY_DIR}" "consumer=${CMAKE_CURRENT_LIST_DIR}/consumer"
    "cmake=${CMAKE_COMMAND}" "generator=${CMAKE_GENERATOR}"
    "cc=${CMAKE_C_COMPILER}" "cxx=${CMAKE_CXX_COMPILER}"
    "libdir=${CMAKE_INSTALL_LIBDIR}" "includedir=${CMAKE_INSTALL_INCLUDEDIR}"
    "version=${PROJECT_VERSION}" "cross=${ax_install_cross}"
    "toolchain=${ax_install_toolchain}" "emulator=${AX_EMU_ARG}")
# Configures a small CMake project (two compilers detected), builds 16 programs and runs
# them: 15-20 s alone, about a minute under qemu next to a parallel ctest.
set_tests_properties(t_install PROPERTIES TIMEOUT 600 LABELS install)

# ---- the launcher, the packages, the man pages, the SPDX lines ----------------------------
# The axmalloc launcher and the Debian packages (src/launcher/axmalloc.in,
# cmake/package.cmake):
#
#   t_launcher  the build tree's launcher, <build>/axmalloc: --help, --version, the exit codes
#               (2, 125, 126, 127), the variable each option sets, LD_PRELOAD kept, and real
#               programs through it (ls, sort, python3). No root; about a second.
#   t_package   cpack -G DEB (from a /usr-prefixed packaging build of the same sources when
#               this one has another prefix), then installs libaxmalloc0 and libaxmalloc-dev
#               on this machine, builds and runs a pkg-config consumer and consumer/
#               against /usr, runs programs through /usr/bin/axmalloc, and purges both
#               packages again. Root only: skipped (exit 77) otherwise, and when the packages
#               or files of theirs are already on the machine, which it must not touch.
#   t_lintian   lintian --pedantic on both packages: no E: and no W: line; their copyright
#               (LICENSE's text, DEP-5) and changelog.gz. No root; skipped (exit 77) without
#               lintian. Packages from the same packaging build as t_package's.
#   t_man       man/axmalloc.1 and man/axmalloc.3 render with man -l and groff -ww without a
#               warning, and say what the sources say: every launcher option and variable
#               of --help, every AXMALLOC_* variable the library reads, every ax_* function
#               of axmalloc.h. No root, no build; about a second; skipped (77) without man.
#
# Native builds only: host programs run through the launcher, and the packages get installed
# on this machine. Not in sanitizer builds: their library needs the sanitizer runtime
# loaded first, which no preload of a plain program does, and is no product to package.
if(CMAKE_CROSSCOMPILING OR NOT AX_SANITIZE STREQUAL "")
  return()
endif()
find_program(AX_BASH bash REQUIRED)

add_test(NAME t_launcher
  COMMAND ${AX_BASH} ${CMAKE_CURRENT_LIST_DIR}/t_launcher.sh
    "launcher=${AX_LAUNCHER_BUILD}" "lib=$<TARGET_SONAME_FILE:axmalloc>"
    "version=${PROJECT_VERSION}")
set_tests_properties(t_launcher PROPERTIES TIMEOUT 120 LABELS launcher)

add_test(NAME t_package
  COMMAND ${AX_BASH} ${CMAKE_CURRENT_LIST_DIR}/t_package.sh
    "build=${CMAKE_BINARY_DIR}" "source=${PROJECT_SOURCE_DIR}"
    "consumer=${CMAKE_CURRENT_LIST_DIR}/consumer"
    "cmake=${CMAKE_COMMAND}" "cpack=${CMAKE_CPACK_COMMAND}" "generator=${CMAKE_GENERATOR}"
    "cc=${CMAKE_C_COMPILER}" "cxx=${CMAKE_CXX_COMPILER}" "version=${PROJECT_VERSION}")
# Installs system-wide: never two at once (t_package.sh also takes a lock file, against
# another build's ctest). A packaging build, 10 programs built and run: about 30 s.
set_tests_properties(t_package PROPERTIES TIMEOUT 600 LABELS install SKIP_RETURN_CODE 77
  RESOURCE_LOCK "ax_system_packages;ax_pkgbuild")

add_test(NAME t_lintian
  COMMAND ${AX_BASH} ${CMAKE_CURRENT_LIST_DIR}/t_lintian.sh
    "build=${CMAKE_BINARY_DIR}" "source=${PROJECT_SOURCE_DIR}"
    "cmake=${CMAKE_COMMAND}" "cpack=${CMAKE_CPACK_COMMAND}" "generator=${CMAKE_GENERATOR}"
    "cc=${CMAKE_C_COMPILER}" "cxx=${CMAKE_CXX_COMPILER}" "version=${PROJECT_VERSION}")
# cpack and lintian: about 5 s once the packaging build is there (t_package's, or the first
# of the two to run builds it)
set_tests_properties(t_lintian PROPERTIES TIMEOUT 600 LABELS install SKIP_RETURN_CODE 77
  RESOURCE_LOCK ax_pkgbuild)

add_test(NAME t_man
  COMMAND ${AX_BASH} ${CMAKE_CURRENT_LIST_DIR}/t_man.sh
    "source=${PROJECT_SOURCE_DIR}" "launcher=${AX_LAUNCHER_BUILD}" "version=${PROJECT_VERSION}")
set_tests_properties(t_man PROPERTIES TIMEOUT 60 LABELS launcher SKIP_RETURN_CODE 77)

# Every source file names its license (LICENSE: MIT) in an SPDX line.
add_test(NAME t_spdx COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/t_spdx.sh)
set_tests_properties(t_spdx PROPERTIES SKIP_RETURN_CODE 77)

# ---- the benchmark report --------------------------------------------------------------
# bench/report.py's logic on synthetic runs (medians, ranges, disturbed runs, "within the
# noise") and bench/runlib.sh's disturbed verdict; nothing is timed. Host only.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_FOUND AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME t_bench_report
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/t_bench_report.py
                   ${PROJECT_SOURCE_DIR})
endif()
