/* The AArch64 backend: everything src/common needs from the architecture.
 * Contract of each hook at its declaration; src/common includes only this header. */
#ifndef AX_ARCH_H
#define AX_ARCH_H

#include <stdint.h>

#include "../atomic_builtin.h"

#define AX_ARCH_NAME "aarch64"

/* A word unique to the calling thread while it lives: the thread pointer register.
 * pre: none (valid before TLS init, in signal handlers). post: never 0. */
static inline uintptr_t ax_arch_thread_id(void) {
  uintptr_t tid;
  __asm__("mrs %0, tpidr_el0" : "=r"(tid)); /* reads a system register; no clobbers */
  return tid;
}

/* The atomic instructions in use (for ax_info and AXMALLOC_VERBOSE). */
static inline const char *ax_arch_atomics_name(void) { return "llsc"; }

/* Spin-wait hint. */
static inline void ax_arch_pause(void) { __asm__ __volatile__("yield" ::: "memory"); }

/* CPU features, detected once. pre: may run before constructors; allocates nothing,
 * uses no stdio, leaves errno alone. */
void ax_arch_cpu_detect(void);
const char *ax_arch_cpu_features(void);

#endif
