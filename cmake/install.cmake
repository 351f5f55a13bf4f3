# SPDX-License-Identifier: MIT
# cmake --install: the header, both libraries, the relocatable axmalloc.o, a CMake package,
# a pkg-config file and the axmalloc launcher. Included from the top CMakeLists.txt once the
# targets exist.                                                              component:
#
#   <prefix>/bin/axmalloc                                                     runtime
#   <prefix>/include/axmalloc.h                                               dev
#   <prefix>/<libdir>/libaxmalloc.so.0 -> libaxmalloc.so.0.1                  runtime
#   <prefix>/<libdir>/libaxmalloc.so -> libaxmalloc.so.0                      dev
#   <prefix>/<libdir>/libaxmalloc.a                                           dev
#   <prefix>/<libdir>/axmalloc.o                                              dev
#   <prefix>/<libdir>/cmake/axmalloc/axmalloc-config.cmake, ...-version.cmake dev
#   <prefix>/<libdir>/pkgconfig/axmalloc.pc                                   dev
#   <prefix>/share/man/man1/axmalloc.1.gz (the launcher)                      runtime
#   <prefix>/share/man/man3/axmalloc.3.gz (the API and the options)           dev
#
# <libdir> comes from GNUInstallDirs: "lib" for most prefixes, lib/<multiarch> (for example
# lib/x86_64-linux-gnu) on Debian when the prefix is /usr.
#
# The components are cmake/package.cmake's Debian packages: runtime is libaxmalloc0 (what a
# preloaded or dynamically linked program needs at run time), dev is libaxmalloc-dev (what
# building against axmalloc needs). One alone: cmake --install <build> --component runtime.
#
# The targets' include directories are build-tree paths, so install(EXPORT) cannot export
# them; axmalloc-config.cmake creates the imported targets itself, with every path derived
# from its own location, so the installed tree can be moved as a whole.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# SONAME libaxmalloc.so.<major>: an ABI break bumps the project's major version.
set_target_properties(axmalloc PROPERTIES
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})

# Link options for static consumers, used by the CMake package and the .pc:
# - -u,malloc pulls the allocator out of libaxmalloc.a even when the program never calls
#   malloc itself (otherwise such a program silently keeps glibc's malloc);
# - AX_CXX_STATIC_LINK_FLAGS (top CMakeLists.txt) make a static C++ program link
#   libstdc++'s bad_alloc typeinfo and throw machinery, which new_delete.cc references
#   only weakly so that C programs need no libstdc++. C++ links only: -u turns those weak
#   references into strong ones, and a C program that links new_delete.cc's code
#   (axmalloc.o, or the archive under --whole-archive) then fails with undefined
#   __cxa_throw. From the plain archive a C program never takes new_delete.cc.o, which
#   is why the .pc file, which cannot tell C from C++, may carry them.
if(NOT DEFINED AX_CXX_STATIC_LINK_FLAGS)
  set(AX_CXX_STATIC_LINK_FLAGS
    "-Wl,-u,_ZTISt9bad_alloc,-u,__cxa_throw,-u,__cxa_allocate_exception")
endif()
set(AX_PC_STATIC_FLAGS "-Wl,-u,malloc ${AX_CXX_STATIC_LINK_FLAGS}")

install(FILES ${PROJECT_SOURCE_DIR}/include/axmalloc.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
# The real file and the SONAME link are run time; the libaxmalloc.so link is for linkers.
install(TARGETS axmalloc
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev)
install(TARGETS axmalloc_static ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(FILES ${AX_RELOC_OBJECT} DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)

# ---- CMake package -------------------------------------------------------------------
set(AX_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/axmalloc)
# Names of the installed files, for the imported targets.
set(AX_SHARED_NAME
  ${CMAKE_SHARED_LIBRARY_PREFIX}axmalloc${CMAKE_SHARED_LIBRARY_SUFFIX}.${PROJECT_VERSION})
set(AX_SONAME
  ${CMAKE_SHARED_LIBRARY_PREFIX}axmalloc${CMAKE_SHARED_LIBRARY_SUFFIX}.${PROJECT_VERSION_MAJOR})
set(AX_STATIC_NAME ${CMAKE_STATIC_LIBRARY_PREFIX}axmalloc${CMAKE_STATIC_LIBRARY_SUFFIX})
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/axmalloc-config.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/axmalloc-config.cmake
  INSTALL_DESTINATION ${AX_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
# Same SONAME, same ABI: a 0.x consumer accepts any 0.y >= x.
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/axmalloc-config-version.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/axmalloc-config.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/axmalloc-config-version.cmake
        DESTINATION ${AX_CMAKE_DIR} COMPONENT dev)

# ---- pkg-config ------------------------------------------------------------------------
# The prefix is only known at install time (cmake --install --prefix <p> overrides the
# configured one), so the .pc file is written then, with absolute paths like every .pc
# file of the distribution. It is written into a directory named after the prefix so
# that two installs of this build tree at once cannot mix their files.
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(AX_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(AX_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(AX_PC_DEST "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
else()
  set(AX_PC_DEST "\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig")
endif()
install(CODE "
  set(AX_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(AX_PC_LIBDIR [=[${AX_PC_LIBDIR}]=])
  set(AX_PC_INCLUDEDIR [=[${AX_PC_INCLUDEDIR}]=])
  set(AX_PC_VERSION \"${PROJECT_VERSION}\")
  set(AX_PC_STATIC_FLAGS \"${AX_PC_STATIC_FLAGS}\")
  string(SHA1 ax_pc_key \"\${CMAKE_INSTALL_PREFIX}\")
  set(ax_pc_dir \"${CMAKE_CURRENT_BINARY_DIR}/ax-pkgconfig/\${ax_pc_key}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/cmake/axmalloc.pc.in\" \"\${ax_pc_dir}/axmalloc.pc\"
                 @ONLY)
  file(INSTALL DESTINATION \"${AX_PC_DEST}\"
       TYPE FILE FILES \"\${ax_pc_dir}/axmalloc.pc\")
" COMPONENT dev)

# ---- the axmalloc launcher ----------------------------------------------------------------
# src/launcher/axmalloc.in: a shell script that sets LD_PRELOAD to the library by the full
# path of its SONAME, <prefix>/<libdir>/libaxmalloc.so.0, and execs the program. Like the .pc
# file it is configured at install time, so that the path names the prefix the tree is
# installed into (cmake --install --prefix <p>, CPack's /usr), not the configured one.
#
# The build tree's copy, <build>/axmalloc, preloads the build tree's libaxmalloc.so.0 (the
# tests run it: tests/integration/t_launcher.sh). AXMALLOC_LIB=<path> overrides the library of either.
set(AX_LAUNCHER_IN ${PROJECT_SOURCE_DIR}/src/launcher/axmalloc.in)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(AX_LAUNCHER_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  set(AX_LAUNCHER_LIBDIR "\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_BINDIR}")
  set(AX_LAUNCHER_DEST "${CMAKE_INSTALL_BINDIR}")
else()
  set(AX_LAUNCHER_DEST "\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}")
endif()
install(CODE "
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  set(AX_LAUNCHER_LIB \"${AX_LAUNCHER_LIBDIR}/${AX_SONAME}\")
  string(SHA1 ax_launcher_key \"\${CMAKE_INSTALL_PREFIX}\")
  set(ax_launcher_dir \"${CMAKE_CURRENT_BINARY_DIR}/ax-launcher/\${ax_launcher_key}\")
  configure_file(\"${AX_LAUNCHER_IN}\" \"\${ax_launcher_dir}/axmalloc\" @ONLY)
  file(INSTALL DESTINATION \"${AX_LAUNCHER_DEST}\"
       TYPE PROGRAM FILES \"\${ax_launcher_dir}/axmalloc\")
" COMPONENT runtime)

# The build tree's copy: the library's path is a generator expression, so the template is
# configured (version) and then generated (path).
set(AX_LAUNCHER_LIB "$<TARGET_SONAME_FILE:axmalloc>")
configure_file(${AX_LAUNCHER_IN} ${CMAKE_CURRENT_BINARY_DIR}/ax-launcher/axmalloc.build @ONLY)
get_property(ax_multi_config GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
if(ax_multi_config)
  set(AX_LAUNCHER_BUILD "${CMAKE_BINARY_DIR}/$<CONFIG>/axmalloc")
else()
  set(AX_LAUNCHER_BUILD "${CMAKE_BINARY_DIR}/axmalloc")
endif()
file(GENERATE OUTPUT ${AX_LAUNCHER_BUILD}
  INPUT ${CMAKE_CURRENT_BINARY_DIR}/ax-launcher/axmalloc.build
  FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                   WORLD_READ WORLD_EXECUTE)
unset(AX_LAUNCHER_LIB)

# ---- manual pages -----------------------------------------------------------------------
# man/axmalloc.1 and man/axmalloc.3, compressed as Debian installs manual pages: gzip -9n,
# which leaves the name and the time out of the header, so that the same page always gives
# the same bytes (lintian: package-contains-timestamped-gzip). man reads them compressed.
find_program(AX_GZIP gzip REQUIRED)
set(ax_man_pages "")
foreach(page axmalloc.1 axmalloc.3)
  set(gz ${CMAKE_CURRENT_BINARY_DIR}/ax-man/${page}.gz)
  add_custom_command(OUTPUT ${gz}
    COMMAND ${CMAKE_COMMAND} -E copy ${PROJECT_SOURCE_DIR}/man/${page}
            ${CMAKE_CURRENT_BINARY_DIR}/ax-man/${page}
    COMMAND ${AX_GZIP} -9nf ${CMAKE_CURRENT_BINARY_DIR}/ax-man/${page}
    DEPENDS ${PROJECT_SOURCE_DIR}/man/${page}
    COMMENT "gzip -9n man/${page}" VERBATIM)
  list(APPEND ax_man_pages ${gz})
endforeach()
add_custom_target(axmalloc_man ALL DEPENDS ${ax_man_pages})
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ax-man/axmalloc.1.gz
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT runtime)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ax-man/axmalloc.3.gz
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man3 COMPONENT dev)
