# SPDX-License-Identifier: MIT
# Build-time features of the allocator (included right after target axmalloc_objects).
#
#   AX_VALGRIND=ON  compile valgrind memcheck client requests in (src/common/track.h), so
#                   that memcheck run with --soname-synonyms=somalloc=nomatch checks programs
#                   running on axmalloc itself. Needs Debian's valgrind headers
#                   (<valgrind/memcheck.h>). OFF: the hooks compile to nothing.
#   AX_CHECKED=ON   checked mode always on (as AXMALLOC_CHECK=1 at run time): canaries,
#                   free patterns, validated free lists, every double free (src/common/modes/check.c).
option(AX_VALGRIND "Valgrind memcheck client requests (track.h)" OFF)
option(AX_CHECKED "Checked mode always on (check.c), as AXMALLOC_CHECK=1" OFF)

target_sources(axmalloc_objects PRIVATE ${PROJECT_SOURCE_DIR}/src/common/modes/check.c)

if(AX_VALGRIND)
  # the headers cover both architectures
  ax_host_headers(AX_VALGRIND_INCLUDE valgrind memcheck.h valgrind)
  target_include_directories(axmalloc_objects PRIVATE ${AX_VALGRIND_INCLUDE})
  target_compile_definitions(axmalloc_objects PRIVATE AX_VALGRIND=1)
  message(STATUS "axmalloc: valgrind client requests on (AX_VALGRIND)")
endif()
if(AX_CHECKED)
  target_compile_definitions(axmalloc_objects PRIVATE AX_CHECKED=1)
  message(STATUS "axmalloc: checked mode always on (AX_CHECKED)")
endif()
