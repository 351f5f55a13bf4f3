/* SPDX-License-Identifier: MIT */
/* The _local twins of the ax_arch_* atomics: what src/common/atomic.h calls while the
 * process is single-threaded. Plain C, identical on every architecture, so both backends
 * include this file rather than each keeping a copy.
 * pre: ax_atomic_word is defined (arch_atomic.h). */
#ifndef AX_ATOMIC_LOCAL_H
#define AX_ATOMIC_LOCAL_H

#include <stdbool.h>
#include <stdint.h>

/* ---- single-threaded twins --------------------------------------------------------------
 * pre: no other thread can access *p (src/common/atomic.h calls these only while
 * __libc_single_threaded). Plain loads and stores, never an RMW instruction; same results
 * as the atomic forms. (Relaxed atomic load/store builtins: a plain LDR/STR the compiler
 * may not tear or invent.) */

static inline bool ax_arch_cas_local(ax_atomic_word *p, uintptr_t *expected, uintptr_t v) {
  uintptr_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
  if (cur != *expected) {
    *expected = cur;
    return false;
  }
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
  return true;
}
static inline uintptr_t ax_arch_xchg_local(ax_atomic_word *p, uintptr_t v) {
  uintptr_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
  return old;
}
static inline uintptr_t ax_arch_fetch_add_local(ax_atomic_word *p, uintptr_t v) {
  uintptr_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
  __atomic_store_n(p, old + v, __ATOMIC_RELAXED);
  return old;
}
static inline uintptr_t ax_arch_fetch_and_local(ax_atomic_word *p, uintptr_t v) {
  uintptr_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
  __atomic_store_n(p, old & v, __ATOMIC_RELAXED);
  return old;
}
static inline uintptr_t ax_arch_fetch_or_local(ax_atomic_word *p, uintptr_t v) {
  uintptr_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
  __atomic_store_n(p, old | v, __ATOMIC_RELAXED);
  return old;
}

#endif
