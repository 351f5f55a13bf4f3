# SPDX-License-Identifier: MIT
# The axmalloc launcher and the Debian packages (src/launcher/axmalloc.in,
# cmake/package.cmake):
#
#   t_launcher  the build tree's launcher, <build>/axmalloc: --help, --version, the exit codes
#               (2, 125, 126, 127), the variable each option sets, LD_PRELOAD kept, and real
#               programs through it (ls, sort, python3). No root; about a second.
#   t_package   cpack -G DEB (from a /usr-prefixed packaging build of the same sources when
#               this one has another prefix), then installs libaxmalloc0 and libaxmalloc-dev
#               on this machine, builds and runs a pkg-config consumer and tests/consumer
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
  COMMAND ${AX_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/t_launcher.sh
    "launcher=${AX_LAUNCHER_BUILD}" "lib=$<TARGET_SONAME_FILE:axmalloc>"
    "version=${PROJECT_VERSION}")
set_tests_properties(t_launcher PROPERTIES TIMEOUT 120 LABELS launcher)

add_test(NAME t_package
  COMMAND ${AX_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/t_package.sh
    "build=${CMAKE_BINARY_DIR}" "source=${PROJECT_SOURCE_DIR}"
    "consumer=${CMAKE_CURRENT_SOURCE_DIR}/consumer"
    "cmake=${CMAKE_COMMAND}" "cpack=${CMAKE_CPACK_COMMAND}" "generator=${CMAKE_GENERATOR}"
    "cc=${CMAKE_C_COMPILER}" "cxx=${CMAKE_CXX_COMPILER}" "version=${PROJECT_VERSION}")
# Installs system-wide: never two at once (t_package.sh also takes a lock file, against
# another build's ctest). A packaging build, 10 programs built and run: about 30 s.
set_tests_properties(t_package PROPERTIES TIMEOUT 600 LABELS install SKIP_RETURN_CODE 77
  RESOURCE_LOCK "ax_system_packages;ax_pkgbuild")

add_test(NAME t_lintian
  COMMAND ${AX_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/t_lintian.sh
    "build=${CMAKE_BINARY_DIR}" "source=${PROJECT_SOURCE_DIR}"
    "cmake=${CMAKE_COMMAND}" "cpack=${CMAKE_CPACK_COMMAND}" "generator=${CMAKE_GENERATOR}"
    "cc=${CMAKE_C_COMPILER}" "cxx=${CMAKE_CXX_COMPILER}" "version=${PROJECT_VERSION}")
# cpack and lintian: about 5 s once the packaging build is there (t_package's, or the first
# of the two to run builds it)
set_tests_properties(t_lintian PROPERTIES TIMEOUT 600 LABELS install SKIP_RETURN_CODE 77
  RESOURCE_LOCK ax_pkgbuild)

add_test(NAME t_man
  COMMAND ${AX_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/t_man.sh
    "source=${PROJECT_SOURCE_DIR}" "launcher=${AX_LAUNCHER_BUILD}" "version=${PROJECT_VERSION}")
set_tests_properties(t_man PROPERTIES TIMEOUT 60 LABELS launcher SKIP_RETURN_CODE 77)

# Every source file names its license (LICENSE: MIT) in an SPDX line.
add_test(NAME t_spdx COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/t_spdx.sh)
set_tests_properties(t_spdx PROPERTIES SKIP_RETURN_CODE 77)
