# SPDX-License-Identifier: MIT
# ax_allocator_variant(<target> [DEFINITIONS <defs...>] [OPTIONS <opts...>] [SOURCES <files...>])
#
# A second copy of the allocator's objects: an OBJECT library with the sources, compile
# options, definitions and include directories of axmalloc_objects, plus the given extras.
# For builds that must differ from the released library without changing it: the fuzzer's
# coverage-instrumented allocator (fuzz/), the tests' stop points (AX_TEST_HOOKS, tests/).
# Per-file ISA flags are source properties, which belong to the directory that sets them:
# the function sets them again in the caller's directory.
function(ax_allocator_variant name)
  cmake_parse_arguments(V "" "" "DEFINITIONS;OPTIONS;SOURCES" ${ARGN})
  get_target_property(sources axmalloc_objects SOURCES)
  set(abs_sources)
  foreach(src IN LISTS sources)
    if(IS_ABSOLUTE "${src}" OR src MATCHES "^\\$<")
      list(APPEND abs_sources "${src}")
    else() # add_library() in the top directory keeps paths relative to it
      list(APPEND abs_sources "${PROJECT_SOURCE_DIR}/${src}")
    endif()
  endforeach()
  ax_bulk_kernel_properties()
  add_library(${name} OBJECT ${abs_sources} ${V_SOURCES})
  foreach(prop COMPILE_OPTIONS COMPILE_DEFINITIONS INCLUDE_DIRECTORIES C_VISIBILITY_PRESET
               CXX_VISIBILITY_PRESET CXX_STANDARD POSITION_INDEPENDENT_CODE)
    get_target_property(value axmalloc_objects ${prop})
    if(value)
      set_property(TARGET ${name} PROPERTY ${prop} "${value}")
    endif()
  endforeach()
  if(V_DEFINITIONS)
    target_compile_definitions(${name} PRIVATE ${V_DEFINITIONS})
  endif()
  if(V_OPTIONS)
    target_compile_options(${name} PRIVATE ${V_OPTIONS})
  endif()
endfunction()
