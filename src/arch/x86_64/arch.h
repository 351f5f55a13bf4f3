/* SPDX-License-Identifier: MIT */
/* The x86-64 backend: everything src/common needs from the architecture.
 * Contract of each hook at its declaration; src/common includes only this header. */
#ifndef AX_ARCH_H
#define AX_ARCH_H

#include <stdint.h>

#include "arch_atomic.h"
#include "arch_mte.h"

#define AX_ARCH_NAME "x86_64"

/* A word unique to the calling thread while it lives: the TCB self pointer at %fs:0.
 * pre: none (valid before TLS init, in signal handlers). post: never 0. */
static inline uintptr_t ax_arch_thread_id(void) {
  /* the compiler sees a load from %fs:0 and folds it into the compare that uses it (free's
   * owner test: one instruction instead of two). Not a __seg_fs load of address 0: UBSan
   * takes that for a null dereference, and its report deadlocked inside our first malloc */
  return (uintptr_t)__builtin_thread_pointer();
}

/* Spin-wait hint. */
static inline void ax_arch_pause(void) { __builtin_ia32_pause(); }

/* CPU features, decoded once (ax_arch_cpu(), arch_cpu.h). pre: may run before
 * constructors; allocates nothing, uses no stdio, leaves errno alone; called before a second
 * thread exists. post: ax_arch_cpu_features() describes what was found. */
void ax_arch_cpu_detect(void);
const char *ax_arch_cpu_features(void);

/* DWARF register numbers for the heap profiler's stack walk (modes/stacks/unwind.c): the stack
 * pointer (rsp), the frame pointer (rbp) and the return address (the return address column). */
#define AX_DWARF_SP 7
#define AX_DWARF_FP 6
#define AX_DWARF_RA 16

/* Is pc the signal return trampoline (mov $15, %rax; syscall), which libgcc's unwinder walks
 * through without an FDE (its MD_FALLBACK_FRAME_STATE_FOR)? pre: pc is a return address the
 * stack walk found and libgcc would read the same bytes. */
static inline int ax_arch_sigreturn_at(uintptr_t pc) {
  static const unsigned char code[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
  const volatile unsigned char *p = (const unsigned char *)pc;
  for (unsigned i = 0; i < sizeof code; i++)
    if (p[i] != code[i])
      return 0;
  return 1;
}

#endif
