/* Atomics from the compiler's __atomic builtins, named with their memory order.
 *
 * Both backends start from this file; the AArch64 backend will replace it with inline
 * LSE and LL/SC sequences chosen at run time (its own issue). Every name carries its
 * order so that a reader of src/common never has to look up a parameter.
 * The _local twins are plain loads and stores for the single-threaded path: they are
 * correct only while no other thread can touch the location.
 */
#ifndef AX_ATOMIC_BUILTIN_H
#define AX_ATOMIC_BUILTIN_H

#include <stdbool.h>
#include <stdint.h>

typedef uintptr_t ax_atomic_word; /* accessed only through the functions below */

static inline uintptr_t ax_arch_load_relaxed(const ax_atomic_word *p) {
  return __atomic_load_n(p, __ATOMIC_RELAXED);
}
static inline uintptr_t ax_arch_load_acquire(const ax_atomic_word *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static inline void ax_arch_store_relaxed(ax_atomic_word *p, uintptr_t v) {
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
}
static inline void ax_arch_store_release(ax_atomic_word *p, uintptr_t v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
/* post: on failure *expected holds the value seen. */
static inline bool ax_arch_cas_release(ax_atomic_word *p, uintptr_t *expected, uintptr_t v) {
  return __atomic_compare_exchange_n(p, expected, v, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}
static inline bool ax_arch_cas_acq_rel(ax_atomic_word *p, uintptr_t *expected, uintptr_t v) {
  return __atomic_compare_exchange_n(p, expected, v, true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
static inline uintptr_t ax_arch_xchg_acquire(ax_atomic_word *p, uintptr_t v) {
  return __atomic_exchange_n(p, v, __ATOMIC_ACQUIRE);
}
static inline uintptr_t ax_arch_xchg_acq_rel(ax_atomic_word *p, uintptr_t v) {
  return __atomic_exchange_n(p, v, __ATOMIC_ACQ_REL);
}
static inline uintptr_t ax_arch_fetch_add_relaxed(ax_atomic_word *p, uintptr_t v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static inline uintptr_t ax_arch_fetch_and_acq_rel(ax_atomic_word *p, uintptr_t v) {
  return __atomic_fetch_and(p, v, __ATOMIC_ACQ_REL);
}
static inline uintptr_t ax_arch_fetch_or_acq_rel(ax_atomic_word *p, uintptr_t v) {
  return __atomic_fetch_or(p, v, __ATOMIC_ACQ_REL);
}

/* ---- single-threaded twins: plain loads and stores, no read-modify-write instruction -- */

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
