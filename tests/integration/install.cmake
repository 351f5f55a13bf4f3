# SPDX-License-Identifier: MIT
# cmake --install and the installed packages: tests/t_install.sh installs this build tree
# into a private temporary prefix, checks the files, builds tests/consumer through
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
  COMMAND ${AX_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/t_install.sh
    "build=${CMAKE_BINARY_DIR}" "consumer=${CMAKE_CURRENT_SOURCE_DIR}/consumer"
    "cmake=${CMAKE_COMMAND}" "generator=${CMAKE_GENERATOR}"
    "cc=${CMAKE_C_COMPILER}" "cxx=${CMAKE_CXX_COMPILER}"
    "libdir=${CMAKE_INSTALL_LIBDIR}" "includedir=${CMAKE_INSTALL_INCLUDEDIR}"
    "version=${PROJECT_VERSION}" "cross=${ax_install_cross}"
    "toolchain=${ax_install_toolchain}" "emulator=${AX_EMU_ARG}")
# Configures a small CMake project (two compilers detected), builds 16 programs and runs
# them: 15-20 s alone, about a minute under qemu next to a parallel ctest.
set_tests_properties(t_install PROPERTIES TIMEOUT 600 LABELS install)
