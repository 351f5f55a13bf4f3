/* SPDX-License-Identifier: MIT */
/* AArch64 atomics as ARMv8.1 LSE instructions (CAS, SWP, LDADD, LDCLR, LDSET): one
 * instruction each, executed at the cache (or interconnect) instead of a retry loop.
 * SIGILL on ARMv8.0 cores: arch_atomic.h calls these only in an `lse` build or, in the
 * `runtime` build, when HWCAP_ATOMICS said so.
 *
 * Sibling of atomic_llsc.h: the same functions with the same signatures, axi_lse_ here and
 * axi_llsc_ there. Include arch_atomic.h, not this.
 *
 * Ordering, against the Arm memory model: the A suffix makes the read a load-acquire, the
 * L suffix makes the write a store-release, AL both; none is relaxed. For CAS the ARM ARM
 * says CASA/CASAL read with acquire semantics whether or not the compare succeeds, and a
 * CAS that fails writes nothing and so has no release semantics: CASAL is acq_rel on
 * success and acquire on failure, CASL release on success and relaxed on failure, exactly
 * the contracts of ax_arch_cas_acq_rel and ax_arch_cas_release.
 *
 * Asm conventions used by every block below:
 * - AXI_LSE_PREAMBLE: ".arch_extension lse" lets the assembler accept LSE mnemonics when the
 *   file is compiled for plain ARMv8.0 (the `runtime` build); the compiler itself still
 *   emits no LSE anywhere (and -mno-outline-atomics no libgcc helper calls). Harmless in an
 *   `lse` build, which passes -march=armv8.1-a anyway.
 * - "+Q"(*p): the word, addressed by a base register with no offset (the only mode these
 *   instructions take); "+" because it is read and (maybe) written.
 * - Single instructions: no early-clobber needed. The architecture allows Rs == Rt for
 *   SWP/LDADD/LDCLR/LDSET (Linux's atomic_lse.h reuses one register for both), so the
 *   compiler may pick the same register for an input and the result.
 * - "memory" on acquire, release and acq_rel forms: the compiler must not move other memory
 *   accesses across them; the relaxed form leaves it out. No instruction here sets flags.
 */
#ifndef AX_AARCH64_ATOMIC_LSE_H
#define AX_AARCH64_ATOMIC_LSE_H

#include <stdbool.h>
#include <stdint.h>

#define AXI_LSE_PREAMBLE ".arch_extension lse\n"

/* old = *p; *p = old <op> v in one instruction "insn v, old, [p]" (SWP*, LDADD*, LDCLR*,
 * LDSET*: Rs = the operand, Rt = where the old value goes). */
#define AXI_LSE_RMW(name, insn, ...)                                                               \
  static inline uintptr_t axi_lse_##name(ax_atomic_word *p, uintptr_t v) {                         \
    uintptr_t old;                                                                                 \
    __asm__ __volatile__(AXI_LSE_PREAMBLE insn "  %[v], %[old], %[mem]"                            \
                         : [old] "=r"(old), [mem] "+Q"(*p)                                         \
                         : [v] "r"(v)                                                              \
                         : __VA_ARGS__);                                                           \
    return old;                                                                                    \
  }

/* post: returns the old value; *p = v. Acquire: later accesses stay after the load. */
AXI_LSE_RMW(xchg_acquire, "swpa", "memory")
/* post: returns the old value; *p = v. Acquire and release. */
AXI_LSE_RMW(xchg_acq_rel, "swpal", "memory")
/* post: returns the old value; *p = old + v (wrapping). No ordering: a counter. */
AXI_LSE_RMW(fetch_add_relaxed, "ldadd", )
/* post: returns the old value; *p = old | v. Acquire and release. */
AXI_LSE_RMW(fetch_or_acq_rel, "ldsetal", "memory")
/* LDCLR clears the bits set in its operand (*p = old & ~m): called with m = ~v below. */
AXI_LSE_RMW(fetch_clr_acq_rel, "ldclral", "memory")

#undef AXI_LSE_RMW

/* post: returns the old value; *p = old & v. Acquire and release (LDCLRAL of ~v). */
static inline uintptr_t axi_lse_fetch_and_acq_rel(ax_atomic_word *p, uintptr_t v) {
  return axi_lse_fetch_clr_acq_rel(p, ~v);
}

/* Compare-and-swap "insn Xs, Xt, [p]": compares *p with Xs and stores Xt if equal; Xs
 * receives the value read either way, hence "+r" on [old], which enters holding *expected.
 * Strong: a CAS instruction never fails spuriously. */
#define AXI_LSE_CAS(name, insn)                                                                    \
  static inline bool axi_lse_##name(ax_atomic_word *p, uintptr_t *expected, uintptr_t v) {         \
    uintptr_t exp = *expected, old = exp;                                                          \
    __asm__ __volatile__(AXI_LSE_PREAMBLE insn "  %[old], %[v], %[mem]"                            \
                         : [old] "+r"(old), [mem] "+Q"(*p)                                         \
                         : [v] "r"(v)                                                              \
                         : "memory");                                                              \
    if (old == exp)                                                                                \
      return true;                                                                                 \
    *expected = old;                                                                               \
    return false;                                                                                  \
  }

/* post: true and *p == v if *p was *expected; else false, *expected = the value seen and
 * *p unchanged (nothing written). Release on success, relaxed on failure (CASL). */
AXI_LSE_CAS(cas_release, "casl")
/* As above; acquire and release on success, acquire on failure (CASAL). */
AXI_LSE_CAS(cas_acq_rel, "casal")

#undef AXI_LSE_CAS

#endif
