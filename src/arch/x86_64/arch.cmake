# SPDX-License-Identifier: MIT
# The x86-64 backend's build: included by the top-level CMakeLists.txt after the target
# axmalloc_objects exists.

# ---- bulk kernels (arch_bulk.h, bulk_*.c; docs/bulk.md) -----------------------------------
# One file per ISA, each compiled with its own flags: never -mavx2 for the whole library,
# which would let the compiler put AVX2 into code that runs on any x86-64.
# (SIMDe: see AX_SIMDE_INCLUDE in the top-level CMakeLists.txt.)

set(AX_BULK_DIR ${CMAKE_CURRENT_LIST_DIR})
# The kernels of arch_bulk.h's list, and the detection/plan they are chosen by.
set(AX_BULK_SOURCES
  ${AX_BULK_DIR}/bulk_sse2.c
  ${AX_BULK_DIR}/bulk_avx2.c
  ${AX_BULK_DIR}/bulk_avx512.c
  ${AX_BULK_DIR}/bulk_erms.c
  ${AX_BULK_DIR}/bulk_detect.c)

# Per-file ISA flags. Source file properties belong to the directory that sets them, so
# tests/ and bench/, which compile these files into their own programs, call this too.
function(ax_bulk_kernel_properties)
  set_source_files_properties(${AX_BULK_DIR}/bulk_avx2.c PROPERTIES COMPILE_OPTIONS "-mavx2")
  set_source_files_properties(${AX_BULK_DIR}/bulk_avx512.c PROPERTIES
    COMPILE_OPTIONS "-mavx512f;-mavx512bw;-mavx512vl")
endfunction()

ax_bulk_kernel_properties()
target_sources(axmalloc_objects PRIVATE ${AX_BULK_SOURCES})
target_include_directories(axmalloc_objects SYSTEM PRIVATE ${AX_SIMDE_INCLUDE})
