# SPDX-License-Identifier: MIT
# The architecture backend's atomics (src/arch/<arch>/arch_atomic.h).
#
# t_atomic compiles the arch header itself (and cpu_<arch>.c, whose symbols are hidden in
# the library) with the library's atomics definitions, and also links libaxmalloc to check
# ax_info(). AArch64 builds add the instruction-level checks: the objdump scan of the
# library, and the SIGILL guard (an lse build dies on an ARMv8.0 CPU, a runtime build runs).
# AX_ATOMICS_MODE, AX_ATOMICS_DEFINITIONS and AX_ATOMICS_OPTIONS come from
# src/arch/aarch64/arch.cmake (empty on x86-64).

if(CMAKE_CROSSCOMPILING)
  set(AX_ATOMIC_ITERS 20000) # per thread and family; qemu-user is 10-30x slower
else()
  set(AX_ATOMIC_ITERS 200000)
endif()

ax_test(t_atomic SOURCES t_atomic.c ${PROJECT_SOURCE_DIR}/src/arch/${AX_ARCH}/cpu_${AX_ARCH}.c
        ARGS ${AX_ATOMIC_ITERS})
target_include_directories(t_atomic PRIVATE ${PROJECT_SOURCE_DIR}/src/arch/${AX_ARCH}
                           ${PROJECT_SOURCE_DIR}/src/common)
target_compile_definitions(t_atomic PRIVATE ${AX_ATOMICS_DEFINITIONS})
target_compile_options(t_atomic PRIVATE ${AX_ATOMICS_OPTIONS})
set_tests_properties(t_atomic PROPERTIES LABELS atomics TIMEOUT 300)

if(AX_ARCH STREQUAL "x86_64")
  set_tests_properties(t_atomic PROPERTIES ENVIRONMENT "AX_EXPECT_ATOMICS=x86-lock")
elseif(AX_ARCH STREQUAL "aarch64")
  target_compile_options(t_atomic PRIVATE -mno-outline-atomics)
  # The mode each variant must prove it used (t_atomic checks AX_EXPECT_ATOMICS against
  # the build mode and HWCAP_ATOMICS, then ax_arch_atomics_name() and ax_info()).
  if(AX_ATOMICS_MODE STREQUAL "runtime")
    # plain t_atomic follows the outer QEMU_CPU; these two pin both sides
    add_test(NAME t_atomic.lse COMMAND t_atomic ${AX_ATOMIC_ITERS})
    set_tests_properties(t_atomic.lse PROPERTIES
      ENVIRONMENT "QEMU_CPU=max;AX_EXPECT_ATOMICS=lse" LABELS atomics TIMEOUT 300)
    add_test(NAME t_atomic.llsc COMMAND t_atomic ${AX_ATOMIC_ITERS})
    set_tests_properties(t_atomic.llsc PROPERTIES
      ENVIRONMENT "QEMU_CPU=cortex-a57;AX_EXPECT_ATOMICS=llsc" LABELS atomics TIMEOUT 300)
  else()
    set_tests_properties(t_atomic PROPERTIES ENVIRONMENT "AX_EXPECT_ATOMICS=${AX_ATOMICS_MODE}")
  endif()

  # Cross-thread malloc/free through the library only (t_atomic xfree), on a core without
  # LSE. An lse build must die there with SIGILL (128 + 4 = 132 from sh; WILL_FAIL cannot
  # expect a signal). `sh -c` is not a target name, so the emulator is passed explicitly;
  # ulimit -c 0 stops qemu from writing the guest's core file into the build tree.
  if(AX_ATOMICS_MODE STREQUAL "lse")
    set(ax_sigill_sh
        "ulimit -c 0; \"$@\"; rc=$?; echo \"exit status $rc (want 132: SIGILL)\"; test $rc -eq 132")
    add_test(NAME t_atomic.sigill
      COMMAND sh -c "${ax_sigill_sh}" sh
              ${CMAKE_CROSSCOMPILING_EMULATOR} $<TARGET_FILE:t_atomic> xfree)
    set_tests_properties(t_atomic.sigill PROPERTIES
      ENVIRONMENT "QEMU_CPU=cortex-a57" LABELS atomics TIMEOUT 120)
    # the same program on an LSE core: the SIGILL above is the CPU's, not a bug
    add_test(NAME t_atomic.xfree COMMAND t_atomic xfree)
    set_tests_properties(t_atomic.xfree PROPERTIES
      ENVIRONMENT "QEMU_CPU=max;AX_EXPECT_ATOMICS=lse" LABELS atomics TIMEOUT 120)
  else()
    add_test(NAME t_atomic.xfree.a57 COMMAND t_atomic xfree)
    set_tests_properties(t_atomic.xfree.a57 PROPERTIES
      ENVIRONMENT "QEMU_CPU=cortex-a57;AX_EXPECT_ATOMICS=llsc" LABELS atomics TIMEOUT 120)
  endif()

  # Host-side disassembly of libaxmalloc.so: inline LSE and/or LL/SC, no outline helpers.
  set(ax_objdump "${CMAKE_OBJDUMP}")
  if(NOT ax_objdump OR NOT ax_objdump MATCHES "aarch64")
    find_program(ax_objdump_aarch64 aarch64-linux-gnu-objdump)
    if(ax_objdump_aarch64)
      set(ax_objdump "${ax_objdump_aarch64}")
    endif()
  endif()
  add_test(NAME t_objdump_atomics
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/t_objdump_atomics.sh $<TARGET_FILE:axmalloc>
            ${AX_ATOMICS_MODE} ${ax_objdump})
  set_tests_properties(t_objdump_atomics PROPERTIES LABELS atomics TIMEOUT 120)
endif()
