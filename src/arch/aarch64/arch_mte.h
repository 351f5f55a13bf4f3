/* SPDX-License-Identifier: MIT */
/* Memory tagging (MTE, ARMv8.5): the primitives src/common/mte.c builds on.
 *
 * A tagged pointer carries a 4-bit tag in bits 56..59; memory mapped with PROT_MTE carries
 * one tag per 16-byte granule. With synchronous tag checks on (ax_arch_mte_enable), a load
 * or store whose pointer tag differs from the granule's tag faults with SIGSEGV, si_code
 * SEGV_MTESERR. Each asm names `.arch armv8.5-a+memtag` for the assembler only (the compiler
 * still targets ARMv8.0, and binutils 2.40 takes no `.arch_extension memtag` on an ARMv8.0
 * base); the instructions run only after ax_arch_mte_enable succeeded (HWCAP2_MTE), never on
 * a core without MTE (no SIGILL).
 */
#ifndef AX_ARCH_MTE_H
#define AX_ARCH_MTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AX_ARCH_TAG_SHIFT 56

/* The tag bits of p (0 for an untagged pointer). */
static inline unsigned ax_arch_ptr_tag(const void *p) {
  return (unsigned)((uintptr_t)p >> AX_ARCH_TAG_SHIFT) & 15;
}
/* p without its top byte (Linux ignores it on AArch64: TBI). */
static inline void *ax_arch_untag(const void *p) {
  return (void *)((uintptr_t)p & (((uintptr_t)1 << AX_ARCH_TAG_SHIFT) - 1));
}
static inline void *ax_arch_with_tag(const void *p, unsigned tag) {
  return (void *)((uintptr_t)ax_arch_untag(p) | (uintptr_t)(tag & 15) << AX_ARCH_TAG_SHIFT);
}

/* HWCAP2_MTE, and the kernel accepted tagged addresses with synchronous tag checks and
 * every tag but 0 for IRG (prctl PR_SET_TAGGED_ADDR_CTRL). pre: single-threaded (init): the
 * setting is per thread and inherited by threads created later. post: true when on. */
bool ax_arch_mte_enable(void);
/* PROT_MTE for mprotect (mappings whose granules carry tags). */
#define AX_ARCH_PROT_MTE 0x20

/* p with a random tag (IRG) that is neither 0 nor one of `exclude`'s bits (bit t: tag t). */
static inline void *ax_arch_mte_random(void *p, uint64_t exclude) {
  void *t;
  __asm__(".arch armv8.5-a+memtag\n\tirg %0, %1, %2" : "=r"(t) : "r"(p), "r"(exclude | 1));
  return t;
}
/* The tag of the granule at p (LDG). pre: p in a PROT_MTE mapping, 16-byte aligned. */
static inline unsigned ax_arch_mte_get(const void *p) {
  const void *t = p;
  __asm__ __volatile__(".arch armv8.5-a+memtag\n\tldg %0, [%1]" : "+r"(t) : "r"(p) : "memory");
  return ax_arch_ptr_tag(t);
}
/* Give the n bytes at p (16-byte aligned, n a multiple of 16) p's tag, the data left as it
 * is: ST2G per 32 bytes (STG for an odd 16); from 1 KiB, ax_arch_mte_set_large. */
void ax_arch_mte_set_large(void *p, size_t n);
static inline void ax_arch_mte_set(void *p, size_t n) {
  if (n >= 1024)
    return ax_arch_mte_set_large(p, n);
  char *q = p, *end = q + n;
  if (n & 16) {
    __asm__ __volatile__(".arch armv8.5-a+memtag\n\tstg %0, [%0]" : : "r"(q) : "memory");
    q += 16;
  }
  for (; q < end; q += 32)
    __asm__ __volatile__(".arch armv8.5-a+memtag\n\tst2g %0, [%0]" : : "r"(q) : "memory");
}

#endif
