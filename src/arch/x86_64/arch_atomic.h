/* x86-64 atomics: the ax_arch_<op>_<order> seam src/common/atomic.h calls, and the plain
 * _local twins it calls while single-threaded.
 *
 * The compiler's __atomic builtins give exactly the instructions we want here, so there is
 * no inline asm: x86-64 (TSO) makes every plain load an acquire and every plain store a
 * release, so loads and stores of every order are MOV; cas is LOCK CMPXCHG, xchg is XCHG
 * (implicitly locked), fetch_add LOCK XADD. fetch_and/fetch_or are LOCK AND / LOCK OR when
 * the old value is unused (every use in src/common today) and a LOCK CMPXCHG loop when it
 * is used: x86 has no instruction returning the old value of an AND/OR (LOCK BTS/BTR only
 * when one bit is set and only that bit is tested, which gcc picks by itself).
 * The acquire/release orders below still matter on x86: they stop the compiler moving
 * other accesses across the operation.
 */
#ifndef AX_X86_64_ARCH_ATOMIC_H
#define AX_X86_64_ARCH_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>

typedef uintptr_t ax_atomic_word; /* accessed only through the functions below */

/* The atomic instructions in use (ax_info, AXMALLOC_VERBOSE, tests). */
static inline const char *ax_arch_atomics_name(void) { return "x86-lock"; }

/* ---- loads and stores: pre (all): p aligned to 8 ----------------------------------------- */

static inline uintptr_t ax_arch_load_relaxed(const ax_atomic_word *p) {
  return __atomic_load_n(p, __ATOMIC_RELAXED);
}
/* post: no later access in program order is performed before this load. */
static inline uintptr_t ax_arch_load_acquire(const ax_atomic_word *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static inline void ax_arch_store_relaxed(ax_atomic_word *p, uintptr_t v) {
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
}
/* post: every access before it in program order is visible before this store is. */
static inline void ax_arch_store_release(ax_atomic_word *p, uintptr_t v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* ---- read-modify-write -------------------------------------------------------------------- */

/* Strong CAS. post: true and *p == v if *p was *expected; else false, *expected = the value
 * seen, nothing written. Release on success, relaxed on failure. */
static inline bool ax_arch_cas_release(ax_atomic_word *p, uintptr_t *expected, uintptr_t v) {
  return __atomic_compare_exchange_n(p, expected, v, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}
/* As ax_arch_cas_release; acquire and release on success, acquire on failure. */
static inline bool ax_arch_cas_acq_rel(ax_atomic_word *p, uintptr_t *expected, uintptr_t v) {
  return __atomic_compare_exchange_n(p, expected, v, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
/* post: returns the old value, *p == v. */
static inline uintptr_t ax_arch_xchg_acquire(ax_atomic_word *p, uintptr_t v) {
  return __atomic_exchange_n(p, v, __ATOMIC_ACQUIRE);
}
static inline uintptr_t ax_arch_xchg_acq_rel(ax_atomic_word *p, uintptr_t v) {
  return __atomic_exchange_n(p, v, __ATOMIC_ACQ_REL);
}
/* post: returns the old value, *p == old + v (wrapping). */
static inline uintptr_t ax_arch_fetch_add_relaxed(ax_atomic_word *p, uintptr_t v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
/* post: returns the old value, *p == old & v. */
static inline uintptr_t ax_arch_fetch_and_acq_rel(ax_atomic_word *p, uintptr_t v) {
  return __atomic_fetch_and(p, v, __ATOMIC_ACQ_REL);
}
/* post: returns the old value, *p == old | v. */
static inline uintptr_t ax_arch_fetch_or_acq_rel(ax_atomic_word *p, uintptr_t v) {
  return __atomic_fetch_or(p, v, __ATOMIC_ACQ_REL);
}

#include "../atomic_local.h" /* the plain single-threaded twins, the same everywhere */

#endif
