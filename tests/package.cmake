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
  RESOURCE_LOCK ax_system_packages)
