/* SPDX-License-Identifier: MIT */
/* Huge blocks (huge.c): a mapping of their own, still behind a segment header.
 * Layer: blocks (docs/design/03-blocks.md). */
#ifndef AX_HUGE_H
#define AX_HUGE_H

#include "pagemap.h"

/* huge.c */
AXI_HIDDEN bool axi_huge_possible(size_t size, size_t align);
AXI_HIDDEN void axi_huge_pack_tight(void);
AXI_HIDDEN void *axi_huge_alloc(ax_heap_t *heap, size_t size, size_t align, bool zero);
AXI_HIDDEN void axi_huge_free(ax_segment_t *seg);
AXI_HIDDEN ax_segment_t *axi_huge_aligned_header(const void *p);
/* The header of a huge block that axi_huge_alloc or axi_huge_realloc returned: the segment
 * it is in, or the one before when it starts a segment (aligned to a segment or more). */
static inline ax_segment_t *axi_huge_segment_of(const void *p) {
  uintptr_t seg = (uintptr_t)axi_segment_of(p);
  return (ax_segment_t *)(seg == (uintptr_t)p ? seg - AX_SEGMENT_SIZE : seg);
}
AXI_HIDDEN void *axi_huge_realloc(ax_segment_t *seg, void *p, size_t size);
AXI_HIDDEN void axi_huge_cache_trim(enum ax_trim mode);
AXI_HIDDEN void axi_huge_fork_prepare(void);
AXI_HIDDEN void axi_huge_fork_release(void);

#endif
