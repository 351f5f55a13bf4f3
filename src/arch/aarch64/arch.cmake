# SPDX-License-Identifier: MIT
# The AArch64 backend's build: included by the top-level CMakeLists.txt after the target
# axmalloc_objects exists.

# Debian's aarch64 gcc emits calls to libgcc outline-atomic helpers by default: never.
target_compile_options(axmalloc_objects PRIVATE -mno-outline-atomics)

# ---- atomics (issue 3 item 2; owner of this section: the atomics work) ---------------------
# AX_AARCH64_ATOMICS picks the instructions behind ax_arch_<op>_<order> (arch_atomic.h):
#   runtime  LSE and LL/SC both compiled in, chosen per operation from HWCAP_ATOMICS (default:
#            runs on every ARMv8 core, LSE where the core has it)
#   lse      LSE only, -march=armv8.1-a: dies with SIGILL on ARMv8.0 cores (A53/A57/A72)
#   llsc     LDAXR/STLXR loops only
set(AX_AARCH64_ATOMICS runtime CACHE STRING "AArch64 atomics: runtime, lse or llsc")
set_property(CACHE AX_AARCH64_ATOMICS PROPERTY STRINGS runtime lse llsc)
if(NOT AX_AARCH64_ATOMICS MATCHES "^(runtime|lse|llsc)$")
  message(FATAL_ERROR "AX_AARCH64_ATOMICS=${AX_AARCH64_ATOMICS}: expected runtime, lse or llsc")
endif()
# AX_ATOMICS_BUILTIN (cmake/sanitize.cmake; defined for every target there): __atomic
# builtins instead of the asm (src/arch/generic/atomic_builtin.h). They cannot choose at run
# time without libgcc's outline helpers, so `runtime` becomes `llsc` (correct on every core).
set(ax_atomics ${AX_AARCH64_ATOMICS})
if(AX_ATOMICS_BUILTIN AND ax_atomics STREQUAL "runtime")
  set(ax_atomics llsc)
endif()
string(TOUPPER "${ax_atomics}" ax_mode)
# Exported to tests/platform/platform.cmake, which compiles t_atomic with the same definitions.
set(AX_ATOMICS_MODE ${ax_atomics})
set(AX_ATOMICS_DEFINITIONS AX_AARCH64_ATOMICS_${ax_mode})
set(AX_ATOMICS_OPTIONS "")
if(ax_atomics STREQUAL "lse")
  set(AX_ATOMICS_OPTIONS -march=armv8.1-a)
endif()
target_compile_definitions(axmalloc_objects PRIVATE ${AX_ATOMICS_DEFINITIONS})
target_compile_options(axmalloc_objects PRIVATE ${AX_ATOMICS_OPTIONS})
if(AX_ATOMICS_BUILTIN)
  message(STATUS "axmalloc: AArch64 atomics ${ax_atomics} (__atomic builtins)")
else()
  message(STATUS "axmalloc: AArch64 atomics ${ax_atomics}")
endif()

# ---- bulk kernels (issue 3 item 5; owner of this section: the bulk work) -------------------
# arch_bulk.h, bulk_*.c; docs/bulk.md. One file per ISA with its own flags (NEON is the
# AArch64 baseline and DC ZVA needs none, so today no file has extra flags).
#
# (SIMDe: see AX_SIMDE_INCLUDE in the top-level CMakeLists.txt.)

set(AX_BULK_DIR ${CMAKE_CURRENT_LIST_DIR})
# The kernels of arch_bulk.h's list, and the detection/plan they are chosen by.
set(AX_BULK_SOURCES
  ${AX_BULK_DIR}/bulk_neon.c
  ${AX_BULK_DIR}/bulk_dczva.c
  ${AX_BULK_DIR}/bulk_detect.c)

# Per-file ISA flags (none needed yet). Source file properties belong to the directory that
# sets them, so tests/ and bench/, which compile these files into their own programs, call
# this too.
function(ax_bulk_kernel_properties)
endfunction()

ax_bulk_kernel_properties()
target_sources(axmalloc_objects PRIVATE ${AX_BULK_SOURCES})
target_include_directories(axmalloc_objects SYSTEM PRIVATE ${AX_SIMDE_INCLUDE})
