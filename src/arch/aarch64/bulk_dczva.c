/* SPDX-License-Identifier: MIT */
/* DC ZVA zeroing: whole naturally aligned blocks of the DCZID_EL0 size (64 B on most
 * cores) are zeroed without reading them first; NEON does the unaligned head and tail and
 * every region too small to hold one block. Contract and list: arch_bulk.h.
 *
 * DC ZVA is asm, so only an AArch64 build has it. Elsewhere (this file compiled into
 * tests/t_bulk on x86-64) a stand-in with the instruction's semantics - zero the whole
 * aligned block that contains the address - runs the same head/body/tail logic, so the
 * guard-band test catches a block that would reach outside the region. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arch_bulk.h"

size_t axi_bulk_dczva_block; /* 0: NEON only */

static inline void dc_zva(char *a, size_t block) {
#if defined(__aarch64__)
  (void)block;
  /* Zeroes the block of DCZID_EL0 size containing the address in the input register.
   * No outputs; "memory" because it writes memory that is not an operand. */
  __asm__ __volatile__("dc zva, %0" : : "r"(a) : "memory");
#else
  memset((void *)((uintptr_t)a & ~(uintptr_t)(block - 1)), 0, block);
#endif
}

void axi_bulk_zero_dczva(void *p, size_t n) {
  size_t block = axi_bulk_dczva_block;
  if (block == 0 || n < 2 * block) {
    axi_bulk_zero_neon(p, n);
    return;
  }
  char *d = p, *end = d + n;
  char *a = (char *)(((uintptr_t)d + block - 1) & ~(uintptr_t)(block - 1));
  char *e = (char *)((uintptr_t)end & ~(uintptr_t)(block - 1)); /* a < e: n >= 2 blocks */
  axi_bulk_zero_neon(d, (size_t)(a - d)); /* 16-byte multiples: block is one, >= 16 */
  for (; a < e; a += block)
    dc_zva(a, block);
  axi_bulk_zero_neon(e, (size_t)(end - e));
}
