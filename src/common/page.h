/* SPDX-License-Identifier: MIT */
/* Pages (page.c): malloc's slow path, carving, the free lists' collection, empty and full pages,
 * the owner's drain of its inbox. Layer: pages (docs/design/06-pages.md). */
#ifndef AX_PAGE_H
#define AX_PAGE_H

#include "types.h"

AXI_HIDDEN void *axi_page_malloc(ax_heap_t *heap, size_t size, bool zero);
AXI_HIDDEN void *axi_page_malloc_current(ax_heap_t *heap, size_t size, bool zero);
AXI_HIDDEN bool axi_page_reclaim(ax_heap_t *heap);
AXI_HIDDEN void axi_pages_retire_empty(ax_heap_t *heap, bool all);
AXI_HIDDEN void axi_page_purge_tick(ax_heap_t *heap);
AXI_HIDDEN void axi_free_slow(ax_block_t *b, ax_page_t *page);
AXI_HIDDEN void axi_page_give_back(ax_heap_t *heap, ax_page_t *page, ax_block_t *b);
AXI_HIDDEN void axi_page_collect(ax_heap_t *heap, ax_page_t *page);
AXI_HIDDEN void axi_page_count_mallocs(ax_heap_t *heap, ax_page_t *page);
AXI_HIDDEN void axi_page_queue_push(ax_heap_t *heap, ax_page_t *page);
AXI_HIDDEN void axi_pages_collect_all(ax_heap_t *heap);
AXI_HIDDEN void axi_page_drain(ax_heap_t *heap, bool close);
AXI_HIDDEN void axi_page_return(ax_block_t *b);
AXI_HIDDEN void axi_page_orphan(ax_page_t *page);

AXI_HIDDEN ax_page_t *axi_page_with_free(ax_heap_t *heap, unsigned c);
AXI_HIDDEN ax_block_t *axi_page_pop(ax_page_t *page);
/* A free list cut and counted, and a refill alone (for the heap profiler's grants) */
AXI_HIDDEN uint64_t axi_page_free_count(const ax_page_t *page, uint64_t max);
AXI_HIDDEN uint32_t axi_page_free_cut(ax_page_t *page, uint64_t max);
AXI_HIDDEN void *axi_page_malloc_refilled(ax_heap_t *heap, ax_page_t *page, size_t size, bool zero);

/* guarded sampling: the n blocks on page's list after a sample counted (page.c) */
AXI_HIDDEN void axi_guard_after(ax_heap_t *heap, ax_page_t *page, uint32_t n);

#endif
