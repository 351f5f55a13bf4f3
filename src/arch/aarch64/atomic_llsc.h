/* SPDX-License-Identifier: MIT */
/* AArch64 atomics as load-exclusive/store-exclusive loops (ARMv8.0: runs on every core).
 *
 * Sibling of atomic_lse.h: the same functions with the same signatures, axi_llsc_ here and
 * axi_lse_ there; arch_atomic.h picks one per call (see there). Include arch_atomic.h, not this.
 *
 * Ordering, against the Arm memory model (qemu-user on an x86 host runs guest accesses with
 * the host's strong ordering and cannot show a missing barrier, so this is by review):
 * - acquire = LDAXR (the exclusive load is a load-acquire); release = STLXR (the exclusive
 *   store is a store-release, ordered after everything before it in program order, the
 *   LDAXR/LDXR included); acq_rel = LDAXR + STLXR. That is C11 acq_rel, not a full fence:
 *   a later load may still be satisfied before the STLXR is visible, which acq_rel allows
 *   (Linux adds a DMB ISH only for its "fully ordered" ops; nothing here needs that).
 * - relaxed = LDXR + STXR.
 * - CAS failure: the loop branches out before the store, so a failed CAS writes nothing
 *   (a store of the old value would be a write other threads can observe and would carry
 *   release ordering). Its only access is then the exclusive load: LDAXR in the acq_rel CAS
 *   gives the failure path its acquire; LDXR in the release CAS makes failure relaxed,
 *   the contract of ax_arch_cas_release. The exclusive monitor left armed on failure is
 *   harmless: the next LDXR re-arms it, and no STXR runs without its own LDXR first.
 * - All CAS here are strong: an STXR that loses the reservation retries the whole load and
 *   compare, so false is returned only when the value differed.
 *
 * Asm conventions used by every block below:
 * - "+Q"(*p): the word itself, in a memory operand addressed by a base register with no
 *   offset (the only addressing mode LDXR/STXR accept); "+" because it is read and written.
 * - Outputs written inside the loop are early-clobber ("=&r"): the loop reads its inputs
 *   again after writing them, so no output may share a register with an input; for the
 *   status register this also keeps STXR's Ws distinct from Xt and Xn, which the
 *   architecture makes CONSTRAINED UNPREDICTABLE.
 * - "memory" on acquire, release and acq_rel forms: the compiler must not move other memory
 *   accesses across them; relaxed forms leave it out. "cc" where CMP writes the flags.
 * - No other memory access between the exclusive pair: one could clear the monitor and
 *   livelock the loop, which is why the loops are whole asm blocks and not C around
 *   intrinsics.
 */
#ifndef AX_AARCH64_ATOMIC_LLSC_H
#define AX_AARCH64_ATOMIC_LLSC_H

#include <stdbool.h>
#include <stdint.h>

/* A read-modify-write loop: old = *p; *p = old <op> v, retried until the exclusive store
 * succeeds. ld/st choose the ordering (LDXR or LDAXR, STXR or STLXR); op is one AArch64
 * data-processing instruction "insn new, old, v". */
#define AXI_LLSC_RMW(name, ld, st, insn, ...)                                                      \
  static inline uintptr_t axi_llsc_##name(ax_atomic_word *p, uintptr_t v) {                        \
    uintptr_t old, new;                                                                            \
    unsigned fail;                                                                                 \
    __asm__ __volatile__("1: " ld "  %[old], %[mem]\n"                                             \
                         "   " insn "\n"                                                           \
                         "   " st "  %w[fail], %[new], %[mem]\n"                                   \
                         "   cbnz   %w[fail], 1b"                                                  \
                         : [old] "=&r"(old), [new] "=&r"(new), [fail] "=&r"(fail), [mem] "+Q"(*p)  \
                         : [v] "r"(v)                                                              \
                         : __VA_ARGS__);                                                           \
    return old;                                                                                    \
  }

/* post: returns the old value; *p = old + v (wrapping). No ordering: a counter. */
AXI_LLSC_RMW(fetch_add_relaxed, "ldxr", "stxr", "add    %[new], %[old], %[v]", )
/* post: returns the old value; *p = old & v. Acquire and release. */
AXI_LLSC_RMW(fetch_and_acq_rel, "ldaxr", "stlxr", "and    %[new], %[old], %[v]", "memory")
/* post: returns the old value; *p = old | v. Acquire and release. */
AXI_LLSC_RMW(fetch_or_acq_rel, "ldaxr", "stlxr", "orr    %[new], %[old], %[v]", "memory")

#undef AXI_LLSC_RMW

/* Exchange: old = *p; *p = v. The same loop with v stored directly (no [new]). */
#define AXI_LLSC_XCHG(name, ld, st)                                                                \
  static inline uintptr_t axi_llsc_##name(ax_atomic_word *p, uintptr_t v) {                        \
    uintptr_t old;                                                                                 \
    unsigned fail;                                                                                 \
    __asm__ __volatile__("1: " ld "  %[old], %[mem]\n"                                             \
                         "   " st "  %w[fail], %[v], %[mem]\n"                                     \
                         "   cbnz   %w[fail], 1b"                                                  \
                         : [old] "=&r"(old), [fail] "=&r"(fail), [mem] "+Q"(*p)                    \
                         : [v] "r"(v)                                                              \
                         : "memory");                                                              \
    return old;                                                                                    \
  }

/* post: returns the old value; *p = v. Acquire: later accesses stay after the load. */
AXI_LLSC_XCHG(xchg_acquire, "ldaxr", "stxr")
/* post: returns the old value; *p = v. Acquire and release. */
AXI_LLSC_XCHG(xchg_acq_rel, "ldaxr", "stlxr")

#undef AXI_LLSC_XCHG

/* Strong compare-and-swap: if *p == *expected, *p = v. Returns the value read.
 * ld/st as above; the store is skipped (b.ne 2f) when the compare fails. [exp] and [v] are
 * inputs read on every iteration, hence the early-clobber outputs; CMP sets "cc". */
#define AXI_LLSC_CAS(name, ld, st)                                                                 \
  static inline bool axi_llsc_##name(ax_atomic_word *p, uintptr_t *expected, uintptr_t v) {        \
    uintptr_t old, exp = *expected;                                                                \
    unsigned fail;                                                                                 \
    __asm__ __volatile__("1: " ld "  %[old], %[mem]\n"                                             \
                         "   cmp    %[old], %[exp]\n"                                              \
                         "   b.ne   2f\n"                                                          \
                         "   " st "  %w[fail], %[v], %[mem]\n"                                     \
                         "   cbnz   %w[fail], 1b\n"                                                \
                         "2:"                                                                      \
                         : [old] "=&r"(old), [fail] "=&r"(fail), [mem] "+Q"(*p)                    \
                         : [exp] "r"(exp), [v] "r"(v)                                              \
                         : "cc", "memory");                                                        \
    if (old == exp)                                                                                \
      return true;                                                                                 \
    *expected = old;                                                                               \
    return false;                                                                                  \
  }

/* post: true and *p == v if *p was *expected; else false, *expected = the value seen and
 * *p unchanged (nothing written). Release on success, relaxed on failure. */
AXI_LLSC_CAS(cas_release, "ldxr", "stlxr")
/* As above; acquire and release on success, acquire on failure (the LDAXR). */
AXI_LLSC_CAS(cas_acq_rel, "ldaxr", "stlxr")

#undef AXI_LLSC_CAS

#endif
