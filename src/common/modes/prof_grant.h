/* SPDX-License-Identifier: MIT */
/* What the fast paths hand out while the heap profiler samples (prof_grant.c): the direct
 * classes' grants, and the count of the cached classes' blocks with the block put aside.
 * Layer: modes (docs/design/09-modes-profiler.md). */
#ifndef AX_PROF_GRANT_H
#define AX_PROF_GRANT_H

#include "page.h"

/* Fills the profiler's seams (state.h) of the pages, cache and heaps layers. pre: process
 * init, axi_prof_on. */
AXI_HIDDEN void axi_prof_grant_init(void);
AXI_HIDDEN void axi_prof_grant(ax_heap_t *heap, unsigned c);
AXI_HIDDEN void axi_prof_settle_walk(ax_heap_t *heap, unsigned c);
/* Close class c's grant: the blocks the fast path took from it count against left. With the
 * list used up (the usual way back to the slow path), it took them all: no walk. */
static inline void axi_prof_settle(ax_heap_t *heap, unsigned c) {
  ax_page_t *page = heap->prof.grant_page[c];
  if (!page)
    return;
  if (page->free)
    return axi_prof_settle_walk(heap, c);
  uint64_t left = heap->prof.left[c], taken = heap->prof.granted[c];
  heap->prof.left[c] = left > taken ? left - taken : 0;
  heap->prof.grant_page[c] = NULL;
}
AXI_HIDDEN void axi_prof_settle_all(ax_heap_t *heap);
AXI_HIDDEN void axi_prof_grant_all(ax_heap_t *heap);
AXI_HIDDEN void *axi_prof_malloc_granted(ax_heap_t *heap, size_t size, bool zero);
AXI_HIDDEN void axi_prof_cache_free(ax_block_t *b, ax_page_t *page);
AXI_HIDDEN void axi_prof_unaside(ax_heap_t *heap, unsigned c);

#endif
