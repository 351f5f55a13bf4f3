/* SPDX-License-Identifier: MIT */
/* ERMS bulk kernels: REP STOSB / REP MOVSB. With ERMS the microcode moves whole cache
 * lines; with FSRM short REP MOVSB starts fast too. Contract and list: arch_bulk.h.
 *
 * The string instructions are asm, so only an x86-64 build has them. Elsewhere (this file
 * compiled into tests/t_bulk on aarch64) a byte loop stands in, so that the kernel list
 * links everywhere: that stand-in tests nothing of REP STOSB itself. */
#include <stddef.h>

#include "arch_bulk.h"

void axi_bulk_zero_erms(void *p, size_t n) {
#if defined(__x86_64__)
  /* Stores AL to [RDI] RCX times, advancing RDI (DF is clear at every call by the ABI).
   * RDI and RCX are consumed ("+D", "+c"); AL is only read; "memory" because the n bytes
   * written are not an operand the compiler can see. */
  __asm__ __volatile__("rep stosb" : "+D"(p), "+c"(n) : "a"(0) : "memory");
#else
  for (volatile unsigned char *d = p; n; n--)
    *d++ = 0;
#endif
}

void axi_bulk_copy_erms(void *dst, const void *src, size_t n) {
#if defined(__x86_64__)
  /* Copies RCX bytes from [RSI] to [RDI], advancing both (DF clear by the ABI). All three
   * registers are consumed ("+D", "+S", "+c"); "memory": it reads and writes memory that
   * is not an operand. */
  __asm__ __volatile__("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
#else
  volatile unsigned char *d = dst;
  const unsigned char *s = src;
  for (; n; n--)
    *d++ = *s++;
#endif
}
