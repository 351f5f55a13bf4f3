/* SPDX-License-Identifier: MIT */
/* The AArch64 backend: everything src/common needs from the architecture.
 * Contract of each hook at its declaration; src/common includes only this header. */
#ifndef AX_ARCH_H
#define AX_ARCH_H

#include <stddef.h>
#include <stdint.h>

#include "arch_atomic.h"
#include "arch_mte.h"

#define AX_ARCH_NAME "aarch64"

/* A word unique to the calling thread while it lives: the thread pointer register.
 * pre: none (valid before TLS init, in signal handlers). post: never 0. */
static inline uintptr_t ax_arch_thread_id(void) {
  uintptr_t tid;
  __asm__("mrs %0, tpidr_el0" : "=r"(tid)); /* reads a system register; no clobbers */
  return tid;
}

/* Spin-wait hint. */
static inline void ax_arch_pause(void) { __asm__ __volatile__("yield" ::: "memory"); }

/* CPU features, decoded once (ax_arch_cpu(), arch_cpu.h). pre: may run before
 * constructors; allocates nothing, uses no stdio, leaves errno alone; called before a
 * second thread exists.
 * post: the runtime atomics flag is set from HWCAP_ATOMICS (ax_arch_atomics_name() tells
 * which side is in use) and the DC ZVA block size is known. */
void ax_arch_cpu_detect(void);
/* post: a short description of what ax_arch_cpu_detect found ("baseline" before it ran). */
const char *ax_arch_cpu_features(void);
/* Bytes one `DC ZVA` zeroes (DCZID_EL0.BS: 4 << BS, 64 on most cores), or 0 when DC ZVA is
 * prohibited (DCZID_EL0.DZP) or ax_arch_cpu_detect has not run. */
size_t ax_arch_dczva_size(void);

/* DWARF register numbers for the heap profiler's stack walk (modes/stacks/unwind.c): the stack
 * pointer (sp), the frame pointer (x29) and the return address (x30, the link register). */
#define AX_DWARF_SP 31
#define AX_DWARF_FP 29
#define AX_DWARF_RA 30

/* Is pc the signal return trampoline (mov x8, #139; svc #0), which libgcc's unwinder walks
 * through without an FDE (its MD_FALLBACK_FRAME_STATE_FOR)? pre: pc is a return address the
 * stack walk found and libgcc would read the same bytes. */
static inline int ax_arch_sigreturn_at(uintptr_t pc) {
  const volatile uint32_t *p = (const uint32_t *)pc;
  return p[0] == 0xd2801168u && p[1] == 0xd4000001u;
}

#endif
