/* SPDX-License-Identifier: MIT */
/* Heaps (heap.c): a thread's allocation past its cache, trim, and a heap's release.
 * Layer: heaps (docs/design/08-heaps.md). */
#ifndef AX_HEAP_H
#define AX_HEAP_H

#include "types.h"

AXI_HIDDEN bool axi_heap_release(ax_heap_t *heap);
AXI_HIDDEN void axi_heap_trim(ax_heap_t *heap);
AXI_HIDDEN void *axi_heap_malloc(ax_heap_t *heap, size_t size, bool zero);
AXI_HIDDEN void *axi_heap_page_malloc(ax_heap_t *heap, size_t size, bool zero);
AXI_HIDDEN ax_page_t *axi_heap_page_with_free(ax_heap_t *heap, unsigned c);
AXI_HIDDEN void *axi_heap_huge_alloc(ax_heap_t *heap, size_t size, size_t align, bool zero);
AXI_HIDDEN void axi_stats_merge_heap(ax_heap_t *heap);

#endif
