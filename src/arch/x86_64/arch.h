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

/* CPU features, detected once. pre: may run before constructors; allocates nothing,
 * uses no stdio, leaves errno alone. post: writes a short description into buf. */
void ax_arch_cpu_detect(void);
const char *ax_arch_cpu_features(void);

#endif
