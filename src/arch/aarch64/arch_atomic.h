/* SPDX-License-Identifier: MIT */
/* AArch64 atomics: the ax_arch_<op>_<order> seam src/common/atomic.h calls, and the plain
 * _local twins it calls while single-threaded.
 *
 * Three builds, CMake option AX_AARCH64_ATOMICS (src/arch/aarch64/arch.cmake) passing one
 * of these definitions:
 *   AX_AARCH64_ATOMICS_RUNTIME  (default) atomic_lse.h and atomic_llsc.h both compiled in;
 *                               each operation branches on axi_arch_lse.on, which
 *                               ax_arch_cpu_detect() sets from HWCAP_ATOMICS. It starts
 *                               false: LL/SC is correct on every core, so any atomic that
 *                               runs before init is safe.
 *   AX_AARCH64_ATOMICS_LSE      LSE only, -march=armv8.1-a: SIGILL on ARMv8.0 cores
 *                               (Cortex-A53/A57/A72, Raspberry Pi 4, Graviton 1).
 *   AX_AARCH64_ATOMICS_LLSC     LL/SC only: runs everywhere, slower under contention.
 * With none defined (a file including this header outside the build) runtime is used.
 * AX_ATOMICS_BUILTIN (CMake option, forced on by AX_SANITIZE=thread) replaces all of the
 * asm below with ../generic/atomic_builtin.h, which ThreadSanitizer can see; arch.cmake then
 * passes AX_AARCH64_ATOMICS_LLSC, or _LSE with -march=armv8.1-a, naming what the compiler
 * emits for the builtins.
 *
 * Mixing is coherent: a store by any instruction (LSE included) to a word another core has
 * reserved with LDXR clears that reservation, so an LL/SC loop and an LSE op on the same
 * word stay atomic with respect to each other. The flag flips once, before other threads
 * exist, but nothing would break if it did not.
 *
 * Loads and stores are the same in every mode: relaxed ones plain LDR/STR (single-copy
 * atomic for an aligned 64-bit word), acquire LDAR, release STLR.
 * No operation here may call a libgcc outline-atomic helper (__aarch64_cas8_acq_rel, ...):
 * every RMW is inline asm, and the build passes -mno-outline-atomics for the rest.
 */
#ifndef AX_AARCH64_ARCH_ATOMIC_H
#define AX_AARCH64_ARCH_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>

typedef uintptr_t ax_atomic_word; /* accessed only through the functions below */

#if defined(AX_AARCH64_ATOMICS_LSE) + defined(AX_AARCH64_ATOMICS_LLSC) +                           \
        defined(AX_AARCH64_ATOMICS_RUNTIME) >                                                      \
    1
#error "define at most one of AX_AARCH64_ATOMICS_{RUNTIME,LSE,LLSC}"
#endif

/* The run-time choice: true once ax_arch_cpu_detect() saw HWCAP_ATOMICS. Read on every
 * atomic, written once at init (cpu_aarch64.c): a cache line of its own, so that no hot
 * written global (statistics counters) shares the line and bounces it between cores. */
typedef union axi_arch_flag {
  bool on;
  _Alignas(64) char line[64];
} axi_arch_flag_t;
__attribute__((visibility("hidden"))) extern axi_arch_flag_t axi_arch_lse;

#if defined(AX_ATOMICS_BUILTIN)
#include "../generic/atomic_builtin.h"
/* What the compiler made of the builtins (-mno-outline-atomics: no libgcc helpers). */
#if defined(__ARM_FEATURE_ATOMICS)
static inline const char *ax_arch_atomics_name(void) { return "lse"; }
#else
static inline const char *ax_arch_atomics_name(void) { return "llsc"; }
#endif
#else /* the inline asm, up to the #endif before atomic_local.h */

#if defined(AX_AARCH64_ATOMICS_LSE)
#include "atomic_lse.h"
#define AXI_ATOMIC(op, ...) axi_lse_##op(__VA_ARGS__)
#define AXI_ATOMICS_LSE() true
#elif defined(AX_AARCH64_ATOMICS_LLSC)
#include "atomic_llsc.h"
#define AXI_ATOMIC(op, ...) axi_llsc_##op(__VA_ARGS__)
#define AXI_ATOMICS_LSE() false
#else
#include "atomic_llsc.h"
#include "atomic_lse.h"
/* One load of the flag (an LDRB) and a branch predicted on the LSE side, the common case
 * on current servers; both are noise next to the atomic itself. */
#define AXI_ATOMICS_LSE() __builtin_expect(__atomic_load_n(&axi_arch_lse.on, __ATOMIC_RELAXED), 1)
#define AXI_ATOMIC(op, ...)                                                                        \
  (AXI_ATOMICS_LSE() ? axi_lse_##op(__VA_ARGS__) : axi_llsc_##op(__VA_ARGS__))
#endif

/* The atomic instructions in use now (ax_info, AXMALLOC_VERBOSE, tests): "lse" or "llsc".
 * In a runtime build "llsc" until ax_arch_cpu_detect() has run. */
static inline const char *ax_arch_atomics_name(void) { return AXI_ATOMICS_LSE() ? "lse" : "llsc"; }

/* ---- loads and stores: pre (all): p aligned to 8 ----------------------------------------- */

/* Relaxed loads and stores as volatile accesses, as Linux's READ_ONCE/WRITE_ONCE: GCC 12
 * emits an __atomic relaxed load or store of p->field as ADD + LDR, where a volatile access
 * takes LDR with an offset (free()'s fast path: 37 instructions, 34 this way). */
static inline uintptr_t ax_arch_load_relaxed(const ax_atomic_word *p) {
  return *(const volatile ax_atomic_word *)p; /* LDR */
}
/* post: no later access in program order is performed before this load. */
static inline uintptr_t ax_arch_load_acquire(const ax_atomic_word *p) {
  uintptr_t v;
  /* LDAR: "Q" is the word addressed by a base register only (LDAR has no offset form);
   * "memory": later accesses must not be hoisted above it by the compiler either. */
  __asm__ __volatile__("ldar  %[v], %[mem]" : [v] "=r"(v) : [mem] "Q"(*p) : "memory");
  return v;
}
static inline void ax_arch_store_relaxed(ax_atomic_word *p, uintptr_t v) {
  *(volatile ax_atomic_word *)p = v; /* STR */
}
/* post: every access before it in program order is visible before this store is. */
static inline void ax_arch_store_release(ax_atomic_word *p, uintptr_t v) {
  /* STLR: "=Q" as above, written; "memory": earlier accesses must not sink below it. */
  __asm__ __volatile__("stlr  %[v], %[mem]" : [mem] "=Q"(*p) : [v] "r"(v) : "memory");
}

/* ---- read-modify-write: LSE or LL/SC (contracts and asm in atomic_lse.h/atomic_llsc.h) -- */

/* Strong CAS. post: true and *p == v if *p was *expected; else false, *expected = the value
 * seen, nothing written. Release on success, relaxed on failure. */
static inline bool ax_arch_cas_release(ax_atomic_word *p, uintptr_t *expected, uintptr_t v) {
  return AXI_ATOMIC(cas_release, p, expected, v);
}
/* As ax_arch_cas_release; acquire and release on success, acquire on failure. */
static inline bool ax_arch_cas_acq_rel(ax_atomic_word *p, uintptr_t *expected, uintptr_t v) {
  return AXI_ATOMIC(cas_acq_rel, p, expected, v);
}
/* post: returns the old value, *p == v. */
static inline uintptr_t ax_arch_xchg_acquire(ax_atomic_word *p, uintptr_t v) {
  return AXI_ATOMIC(xchg_acquire, p, v);
}
static inline uintptr_t ax_arch_xchg_acq_rel(ax_atomic_word *p, uintptr_t v) {
  return AXI_ATOMIC(xchg_acq_rel, p, v);
}
/* post: returns the old value, *p == old + v (wrapping). */
static inline uintptr_t ax_arch_fetch_add_relaxed(ax_atomic_word *p, uintptr_t v) {
  return AXI_ATOMIC(fetch_add_relaxed, p, v);
}
/* post: returns the old value, *p == old & v. */
static inline uintptr_t ax_arch_fetch_and_acq_rel(ax_atomic_word *p, uintptr_t v) {
  return AXI_ATOMIC(fetch_and_acq_rel, p, v);
}
/* post: returns the old value, *p == old | v. */
static inline uintptr_t ax_arch_fetch_or_acq_rel(ax_atomic_word *p, uintptr_t v) {
  return AXI_ATOMIC(fetch_or_acq_rel, p, v);
}

#endif /* AX_ATOMICS_BUILTIN */

#include "../generic/atomic_local.h" /* the plain single-threaded twins, the same everywhere */

#endif
