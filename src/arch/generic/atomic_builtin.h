/* SPDX-License-Identifier: MIT */
/* The ax_arch_<op>_<order> atomics as the compiler's __atomic builtins: the same names,
 * contracts and memory orders as every backend's arch_atomic.h, with no inline asm.
 *
 * x86-64 always uses this file: there the builtins are exactly the instructions wanted
 * (see src/arch/x86_64/arch_atomic.h). AArch64 uses it when AX_ATOMICS_BUILTIN is defined
 * (CMake option AX_ATOMICS_BUILTIN, forced on by AX_SANITIZE=thread): ThreadSanitizer
 * sees an __atomic builtin as an atomic operation with its memory order, but an asm block
 * not at all, so with the LSE/LL-SC asm it would take the data those atomics order for
 * races. Which instructions the builtins become is then the compiler's choice (LL/SC for
 * ARMv8.0, LSE under -march=armv8.1-a; never a libgcc helper under -mno-outline-atomics).
 * pre: ax_atomic_word is defined (arch_atomic.h). */
#ifndef AX_ATOMIC_BUILTIN_H
#define AX_ATOMIC_BUILTIN_H

#include <stdbool.h>
#include <stdint.h>

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

#endif
