# SPDX-License-Identifier: MIT
# Debian packages with CPack, one per install component of cmake/install.cmake:
#
#   libaxmalloc0     (runtime)  libaxmalloc.so.0, libaxmalloc.so.0.1, /usr/bin/axmalloc,
#                               axmalloc(1)
#   libaxmalloc-dev  (dev)      axmalloc.h, libaxmalloc.a, axmalloc.o, libaxmalloc.so, the
#                               CMake package, the pkg-config file, axmalloc(3); Depends on
#                               libaxmalloc0 (= <version>)
#
# and in both /usr/share/doc/<package>/copyright (packaging/copyright: LICENSE in Debian's
# machine-readable format) and changelog.gz (packaging/changelog, gzip -9n).
#
# Build them from a tree configured with the prefix the packages install into, /usr:
#
#   cmake -S . -B build-deb -DCMAKE_INSTALL_PREFIX=/usr -DAX_BUILD_TESTS=OFF -DAX_BUILD_BENCH=OFF
#   cmake --build build-deb -j2
#   (cd build-deb && cpack -G DEB)      # or: cmake --build build-deb --target package
#   # -> build-deb/libaxmalloc0_0.1_amd64.deb, build-deb/libaxmalloc-dev_0.1_amd64.deb
#
# GNUInstallDirs picks the library directory from the configured prefix: lib/<multiarch>
# (lib/x86_64-linux-gnu) for /usr, plain lib for the default /usr/local. Packages from a
# /usr/local tree would put the library in /usr/lib, outside Debian's multiarch layout, so
# cpack -G DEB refuses such a tree and says how to configure one (CPackProjectConfig below).
# In a cross build GNUInstallDirs never picks lib/<multiarch>: name it, for arm64 packages
#
#   cmake -S . -B build-deb-arm64 -DCMAKE_TOOLCHAIN_FILE=toolchain/aarch64-linux-gnu.cmake \
#     -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_LIBDIR=lib/aarch64-linux-gnu \
#     -DAX_BUILD_TESTS=OFF -DAX_BUILD_BENCH=OFF
#
# tests/integration/t_package.sh builds, installs and removes the packages (native builds);
# tests/integration/t_lintian.sh runs lintian on them, which must report no error and no warning.
#
# Included from the top CMakeLists.txt after cmake/install.cmake. Files are installed by
# `cmake --install` under DESTDIR with the prefix /usr (CPACK_SET_DESTDIR), as a Debian
# package build does: the .pc file and the launcher, written at install time, then name
# /usr and not CPack's staging directory.

# The project's identity, the same as packaging/copyright's Upstream-Contact and the
# signature of packaging/changelog (t_package checks the first). lintian (bogus-mail-host)
# wants the address's host to be a domain name, with at least two labels. Whoever builds
# packages to publish names themselves here (-DAX_DEB_MAINTAINER=...).
set(ax_deb_maintainer_default "axmalloc developers <axmalloc@users.noreply.github.com>")
set(AX_DEB_MAINTAINER "${ax_deb_maintainer_default}" CACHE STRING
  "Maintainer field of the Debian packages (cmake/package.cmake)")
# A tree configured before keeps an earlier default in its cache: those are replaced.
if(AX_DEB_MAINTAINER MATCHES "^(axmalloc developers <dev@axmalloc>|Seed 14fc48fb maintainers <.*>)$")
  set(AX_DEB_MAINTAINER "${ax_deb_maintainer_default}" CACHE STRING
    "Maintainer field of the Debian packages (cmake/package.cmake)" FORCE)
endif()

set(CPACK_PACKAGE_NAME axmalloc)
set(CPACK_PACKAGE_VENDOR axmalloc)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${AX_DEB_MAINTAINER}")
if(NOT CPACK_GENERATOR)
  set(CPACK_GENERATOR DEB)
endif()
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Strips libaxmalloc.so (install(TARGETS)' strip rule; static archives are left alone) as
# Debian's packages are; the archive and axmalloc.o keep their symbol tables, which linking
# needs.
set(CPACK_STRIP_FILES ON)

# ---- components -> packages ---------------------------------------------------------
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # <package>_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${AX_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
if(PROJECT_HOMEPAGE_URL)
  set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${PROJECT_HOMEPAGE_URL}")
endif()

# Debian's architecture name: dpkg's own natively, the target's in a cross build.
set(ax_deb_arch_map "x86_64=amd64" "AMD64=amd64" "amd64=amd64" "aarch64=arm64" "arm64=arm64"
  "ARM64=arm64")
set(AX_DEB_ARCH "")
if(NOT CMAKE_CROSSCOMPILING)
  find_program(AX_DPKG dpkg)
  if(AX_DPKG)
    execute_process(COMMAND ${AX_DPKG} --print-architecture
      OUTPUT_VARIABLE AX_DEB_ARCH OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
endif()
if(AX_DEB_ARCH STREQUAL "")
  foreach(pair ${ax_deb_arch_map})
    if(pair MATCHES "^([^=]+)=(.+)$" AND CMAKE_SYSTEM_PROCESSOR STREQUAL CMAKE_MATCH_1)
      set(AX_DEB_ARCH ${CMAKE_MATCH_2})
    endif()
  endforeach()
endif()
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE ${AX_DEB_ARCH})

# libaxmalloc0
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libaxmalloc0)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
"fast multithreaded malloc replacement - shared library and launcher
axmalloc is a C11 malloc replacement for Linux on x86-64 and AArch64, built
for multithreaded programs that allocate in some threads and free in others:
per-thread heaps, lock-free remote frees, 4 MiB segments, and SIMD kernels for
calloc and realloc.

This package contains the shared library, which replaces the whole malloc
family and C++ operator new/delete of the programs that link or preload it,
and the axmalloc launcher: `axmalloc [--stats] [--prof FILE] -- prog args`
runs a program with the library preloaded.")
# ldconfig's cache learns the library through dpkg's ldconfig trigger (the control file
# triggers: "activate-noawait ldconfig"), as debhelper's packages do, and the package has no
# maintainer scripts, as Debian's libraries have none for ldconfig. CPack would write a
# postinst and a postrm calling ldconfig (lintian: maintscript-calls-ldconfig) for every
# shared object under /usr/lib it detects, and it detects them whenever it is to work out
# Depends (SHLIBDEPS) or shlibs (GENERATE_SHLIBS) itself; naming postinst and postrm files
# that do not exist in CONTROL_EXTRA stops that, with a "missing file" warning for each. So
# CPack does neither here:
#   shlibs    "libaxmalloc 0 libaxmalloc0 (>= <version>)", written below, so that
#             dpkg-shlibdeps gives a program linked with -laxmalloc the right Depends (the
#             SONAME changes with the ABI);
#   Depends   dpkg-shlibdeps -O on the built library when cpack runs (libc6, and libgcc-s1
#             for the heap profiler's unwinder: ax-deb/depends.cmake, read by the
#             CPackProjectConfig below). In a cross build it cannot read the target's
#             libraries (not installed for the target architecture): what the native package
#             gets is given instead.
set(ax_deb_control ${CMAKE_CURRENT_BINARY_DIR}/ax-deb/runtime)
file(MAKE_DIRECTORY ${ax_deb_control})
file(WRITE ${ax_deb_control}/triggers "activate-noawait ldconfig\n")
file(WRITE ${ax_deb_control}/shlibs
  "libaxmalloc ${PROJECT_VERSION_MAJOR} libaxmalloc${PROJECT_VERSION_MAJOR} (>= ${PROJECT_VERSION})\n")
file(REMOVE ${ax_deb_control}/postinst ${ax_deb_control}/postrm) # (a tree configured before)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${ax_deb_control}/triggers ${ax_deb_control}/shlibs)
if(CMAKE_CROSSCOMPILING)
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "libc6 (>= 2.34), libgcc-s1 (>= 3.3)")
  file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/ax-deb/depends.cmake CONTENT "")
else()
  find_program(AX_DPKG_SHLIBDEPS dpkg-shlibdeps)
  file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/ax-deb/depends.cmake CONTENT "\
# Generated by cmake/package.cmake: libaxmalloc0's Depends, as dpkg-shlibdeps finds them
# in the library (it wants a debian/control where it runs, which may be empty).
set(ax_dir \"${CMAKE_CURRENT_BINARY_DIR}/ax-deb/shlibdeps\")
file(MAKE_DIRECTORY \"\${ax_dir}/debian\")
file(TOUCH \"\${ax_dir}/debian/control\")
execute_process(COMMAND \"${AX_DPKG_SHLIBDEPS}\" -O \"$<TARGET_FILE:axmalloc>\"
  WORKING_DIRECTORY \"\${ax_dir}\" OUTPUT_VARIABLE ax_out ERROR_VARIABLE ax_err
  RESULT_VARIABLE ax_rc)
if(NOT ax_rc EQUAL 0 OR NOT ax_out MATCHES \"shlibs:Depends=([^\\n]+)\")
  message(FATAL_ERROR \"axmalloc: dpkg-shlibdeps -O $<TARGET_FILE:axmalloc> failed \"
    \"(\${ax_rc}): \${ax_out}\${ax_err} (dpkg-dev: scripts/deps.sh)\")
endif()
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS \"\${CMAKE_MATCH_1}\")
")
endif()

# libaxmalloc-dev
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libaxmalloc-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libaxmalloc0 (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_DEV_DESCRIPTION
"fast multithreaded malloc replacement - development files
axmalloc is a C11 malloc replacement for Linux on x86-64 and AArch64, built
for multithreaded programs that allocate in some threads and free in others.

This package contains what building against axmalloc needs: the header
axmalloc.h, the static library libaxmalloc.a and the relocatable axmalloc.o
for static programs, the link for -laxmalloc, the CMake package
(find_package(axmalloc): axmalloc::axmalloc, axmalloc::static,
axmalloc::object) and the pkg-config file axmalloc.pc.")

# ---- copyright and changelog ----------------------------------------------------------
# Debian wants both in /usr/share/doc/<package>/ of every package. The package is native (its
# version, 0.1, has no Debian revision), so lintian wants the changelog as changelog.gz, not
# changelog.Debian.gz (wrong-name-for-changelog-of-native-package); gzip -9n as the manual
# pages. They name the packages, so an install puts them only where the packages would: into
# the prefix /usr (CPack's, or cmake --install --prefix /usr), not into /opt/axmalloc.
set(ax_changelog_gz ${CMAKE_CURRENT_BINARY_DIR}/ax-deb/changelog.gz)
add_custom_command(OUTPUT ${ax_changelog_gz}
  COMMAND ${CMAKE_COMMAND} -E copy ${PROJECT_SOURCE_DIR}/packaging/changelog
          ${CMAKE_CURRENT_BINARY_DIR}/ax-deb/changelog
  COMMAND ${AX_GZIP} -9nf ${CMAKE_CURRENT_BINARY_DIR}/ax-deb/changelog
  DEPENDS ${PROJECT_SOURCE_DIR}/packaging/changelog
  COMMENT "gzip -9n packaging/changelog" VERBATIM)
add_custom_target(axmalloc_deb_changelog ALL DEPENDS ${ax_changelog_gz})
foreach(pair "runtime=libaxmalloc0" "dev=libaxmalloc-dev")
  string(REGEX MATCH "^([^=]+)=(.+)$" ax_m "${pair}")
  install(CODE "
    if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
      file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/share/doc/${CMAKE_MATCH_2}\"
           TYPE FILE FILES \"${PROJECT_SOURCE_DIR}/packaging/copyright\" \"${ax_changelog_gz}\")
    endif()
  " COMPONENT ${CMAKE_MATCH_1})
endforeach()
# The version of the changelog's latest entry, which cpack -G DEB wants to be this one's.
file(STRINGS ${PROJECT_SOURCE_DIR}/packaging/changelog ax_changelog_top LIMIT_COUNT 1)
string(REGEX REPLACE "^axmalloc \\(([^)]*)\\) .*" "\\1" ax_changelog_version "${ax_changelog_top}")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/packaging/changelog)

# ---- refuse packages whose paths would be wrong --------------------------------------
# Read by cpack for each generator (CPACK_PROJECT_CONFIG_FILE).
set(ax_cpack_config ${CMAKE_CURRENT_BINARY_DIR}/ax-deb/CPackProjectConfig.cmake)
file(WRITE ${ax_cpack_config} "\
# Generated by cmake/package.cmake.
if(CPACK_GENERATOR STREQUAL \"DEB\")
  if(NOT \"${CMAKE_INSTALL_PREFIX}\" STREQUAL \"/usr\")
    message(FATAL_ERROR \"axmalloc: Debian packages install into /usr, but this tree was \"
      \"configured with CMAKE_INSTALL_PREFIX=${CMAKE_INSTALL_PREFIX}, so its library \"
      \"directory is '${CMAKE_INSTALL_LIBDIR}' and not /usr's lib/<multiarch>. Configure \"
      \"one for the packages: cmake -S ${PROJECT_SOURCE_DIR} -B <dir> \"
      \"-DCMAKE_INSTALL_PREFIX=/usr -DAX_BUILD_TESTS=OFF -DAX_BUILD_BENCH=OFF, build it \"
      \"and run cpack -G DEB there (cmake/package.cmake).\")
  endif()
  if(NOT \"${CMAKE_LIBRARY_ARCHITECTURE}\" STREQUAL \"\" AND
     NOT \"${CMAKE_INSTALL_LIBDIR}\" STREQUAL \"lib/${CMAKE_LIBRARY_ARCHITECTURE}\")
    message(FATAL_ERROR \"axmalloc: Debian packages put libraries in \"
      \"/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}, but this tree's CMAKE_INSTALL_LIBDIR is \"
      \"'${CMAKE_INSTALL_LIBDIR}' (a cross build?): configure it with \"
      \"-DCMAKE_INSTALL_LIBDIR=lib/${CMAKE_LIBRARY_ARCHITECTURE} (cmake/package.cmake).\")
  endif()
  if(\"${AX_DEB_ARCH}\" STREQUAL \"\")
    message(FATAL_ERROR \"axmalloc: no Debian architecture for ${CMAKE_SYSTEM_PROCESSOR}\")
  endif()
  if(NOT \"${ax_changelog_version}\" STREQUAL \"${PROJECT_VERSION}\")
    message(FATAL_ERROR \"axmalloc: packaging/changelog's latest entry is for version \"
      \"'${ax_changelog_version}', not ${PROJECT_VERSION}: add an entry for \"
      \"${PROJECT_VERSION} (its first line 'axmalloc (${PROJECT_VERSION}) unstable; \"
      \"urgency=medium', as the one there) and configure again\")
  endif()
  if(NOT \"${AX_SANITIZE}\" STREQUAL \"\")
    message(FATAL_ERROR \"axmalloc: no packages from a sanitizer build (AX_SANITIZE=${AX_SANITIZE})\")
  endif()
  include(\"${CMAKE_CURRENT_BINARY_DIR}/ax-deb/depends.cmake\")
endif()
")
set(CPACK_PROJECT_CONFIG_FILE ${ax_cpack_config})

include(CPack)
