# Sanitizer builds of the whole tree (scripts/sanitize.sh). Included by the top-level
# CMakeLists.txt before any target exists, so the flags below reach every target: the
# library, the tests and the workloads.
#
#   -DAX_SANITIZE=undefined  UBSan (-fsanitize=undefined -fno-sanitize-recover=all): any
#                            finding aborts the program, so the ctest suite fails on it.
#   -DAX_SANITIZE=thread     TSan, native builds only. Forces AX_ATOMICS_BUILTIN=ON.
#   -DAX_ATOMICS_BUILTIN=ON  the ax_arch_* atomics as __atomic builtins
#                            (src/arch/atomic_builtin.h) instead of inline asm, which TSan
#                            cannot see (it would report the data they order as races).

set(AX_SANITIZE "" CACHE STRING "Sanitizer build of the whole tree: undefined, thread or empty")
set_property(CACHE AX_SANITIZE PROPERTY STRINGS "" undefined thread)
option(AX_ATOMICS_BUILTIN "ax_arch_* atomics as __atomic builtins, no inline asm" OFF)

if(AX_SANITIZE STREQUAL "")
elseif(AX_SANITIZE STREQUAL "undefined")
  add_compile_options(-fsanitize=undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=undefined)
  # -static works: gcc links libubsan.a then. But libubsan.a's vptr checker
  # (ubsan_type_hash_itanium.o) needs __dynamic_cast and a typeinfo from libstdc++, and gcc
  # puts -lubsan after -lstdc++, so a -static C++ link misses them: ask for both up front
  # (harmless in a dynamic link, where libstdc++.so has them anyway).
  add_link_options("$<$<LINK_LANGUAGE:CXX>:-Wl,-u,__dynamic_cast>"
                   "$<$<LINK_LANGUAGE:CXX>:-Wl,-u,_ZTIN10__cxxabiv121__vmi_class_type_infoE>")
  # pointer-overflow keeps the store of std::exception's vtable in new_delete.cc's inlined
  # `throw std::bad_alloc()` alive: a strong reference to _ZTVSt9exception, which a C
  # program linking axmalloc.o -static cannot resolve. Until new_delete.cc takes that symbol
  # weakly like the rest of its C++ runtime, that one file goes without that one check.
  set_source_files_properties(${PROJECT_SOURCE_DIR}/src/common/new_delete.cc PROPERTIES
                              COMPILE_OPTIONS -fno-sanitize=pointer-overflow)
elseif(AX_SANITIZE STREQUAL "thread")
  if(CMAKE_CROSSCOMPILING)
    message(FATAL_ERROR "AX_SANITIZE=thread: native builds only (TSan does not run under qemu)")
  endif()
  set(AX_ATOMICS_BUILTIN ON CACHE BOOL "ax_arch_* atomics as __atomic builtins" FORCE)
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
else()
  message(FATAL_ERROR "AX_SANITIZE=${AX_SANITIZE}: expected undefined, thread or nothing")
endif()

# ---- TSan: the threaded tests, with malloc & co. routed to ax_* --------------------------
# TSan's runtime defines malloc itself and is linked first, so these tests are compiled with
# tests/tsan_route.h force-included (malloc -> ax_malloc, ...). Runs at the end of the
# top-level directory, when tests/ has defined the targets. The targets that link -static
# cannot be built with TSan at all: build the ones listed here (scripts/sanitize.sh).
set(AX_TSAN_TESTS t_mt_storm t_mt_prodcons t_mt_threads t_fork t_atomic t_stress)
function(axi_tsan_route)
  foreach(t IN LISTS AX_TSAN_TESTS)
    if(TARGET ${t})
      target_compile_options(${t} PRIVATE -include ${PROJECT_SOURCE_DIR}/tests/tsan_route.h)
    endif()
  endforeach()
endfunction()
if(AX_SANITIZE STREQUAL "thread")
  cmake_language(DEFER CALL axi_tsan_route)
endif()

if(AX_ATOMICS_BUILTIN)
  # Every target: tests (t_atomic) compile the arch header themselves.
  add_compile_definitions(AX_ATOMICS_BUILTIN)
endif()
if(NOT AX_SANITIZE STREQUAL "")
  message(STATUS "axmalloc: sanitizer ${AX_SANITIZE}, builtin atomics ${AX_ATOMICS_BUILTIN}")
endif()
