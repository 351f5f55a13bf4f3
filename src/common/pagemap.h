/* SPDX-License-Identifier: MIT */
/* The page map (pagemap.c): a pointer's page in two loads; a pointer's segment and page by
 * arithmetic. Layer: maps (docs/design/01-maps.md). */
#ifndef AX_PAGEMAP_H
#define AX_PAGEMAP_H

#include "atomic.h"
#include "types.h"

/* The page map (pagemap.c): the page descriptor of any pointer in two loads, for free()'s
 * fast path. One entry per 64 KiB slice of the 48-bit address space, in second-level
 * tables of 2^20 entries (8 MiB each, mapped when the first segment of their 64 GiB region
 * is), under a first level whose unused entries point at one shared table of zeros. An
 * entry names the page covering the slice (every slice of a medium or large page names
 * it; a huge mapping's first segment and its block's slice name its page 0), or is NULL:
 * not ours. A pointer above 2^48 aliases a lower slice: the block-start test, which
 * compares the whole pointer with the page's area, rejects it.
 * A first-level entry holds its table's address less the offset of its region's first slice
 * (i << (AX_PM_L2_BITS + 3)), so that the slice number itself indexes it: no mask for the
 * second level (integers, not pointers: a biased base points into no object). Shifting the
 * pointer left by 16 first drops the bits above 2^48. */
#define AX_SLICE_SHIFT 16
#define AX_PM_L2_BITS 20
#define AX_PM_L1_BITS (48 - AX_SLICE_SHIFT - AX_PM_L2_BITS)
AXI_HIDDEN extern uintptr_t axi_pagemap[(size_t)1 << AX_PM_L1_BITS];

static inline ax_page_t *axi_pagemap_get(const void *p) {
  uintptr_t q = (uintptr_t)p << 16;
  uintptr_t i = q >> (64 - AX_PM_L1_BITS), s = q >> (16 + AX_SLICE_SHIFT);
  return (ax_page_t *)ax_atomic_load_relaxed(
      (const ax_atomic_word *)(axi_pagemap[i] + s * sizeof(ax_page_t *)));
}

/* pagemap.c. pre: start and len multiples of 64 KiB. post: the slices of [start, start+len)
 * name page (NULL: clear them); false when a second-level table could not be mapped. */
AXI_HIDDEN bool axi_pagemap_set(uintptr_t start, size_t len, ax_page_t *page);
/* pagemap.c: whether region i of the first level (64 GiB) has a table of its own */
AXI_HIDDEN bool axi_pagemap_region_used(unsigned i);
static inline ax_segment_t *axi_segment_of(const void *p) {
  return (ax_segment_t *)((uintptr_t)p & ~AX_SEGMENT_MASK);
}

static inline ax_page_t *axi_page_of(ax_segment_t *seg, const void *p) {
  return &seg->pages[((uintptr_t)p - (uintptr_t)seg) >> seg->page_shift];
}

#endif
