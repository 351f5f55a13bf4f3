/* SPDX-License-Identifier: MIT */
/* Zero-size allocations (zero.c), each a unique address in a reservation nothing may touch.
 * Layer: blocks (docs/design/03-blocks.md). */
#ifndef AX_ZERO_H
#define AX_ZERO_H

#include "atomic.h"
#include "types.h"

/* zero.c: zero-size allocations, each a unique address in a reservation nothing may touch */
#define AX_ZERO_SLOT ((size_t)16)
#define AX_ZERO_SLOTS ((size_t)1 << 18)
#define AX_ZERO_SIZE (AX_ZERO_SLOTS * AX_ZERO_SLOT) /* 4 MiB of address space */
AXI_HIDDEN extern ax_atomic_word axi_zero_base;
/* p is in the reservation (a zero-size block, or a pointer into the gaps between them) */
static inline bool axi_zero_has(const void *p) {
  uintptr_t base = ax_atomic_load_relaxed(&axi_zero_base);
  return base && (uintptr_t)p - base < AX_ZERO_SIZE;
}
/* post: a zero-size block; NULL when all are live or the OS refused the reservation. Any
 * thread, no lock, no allocation; errno kept. */
AXI_HIDDEN void *axi_zero_alloc(void);
/* pre: axi_zero_has(p). Gives p back; aborts naming p when it is no block or not live. */
AXI_HIDDEN void axi_zero_free(const char *fn, const void *p);
AXI_HIDDEN size_t axi_zero_live(void); /* zero-size blocks live now */

#endif
