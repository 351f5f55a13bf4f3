/* SPDX-License-Identifier: MIT */
/* Checked mode (check.c; contracts there).
 * Layer: modes (docs/design/09-modes.md). */
#ifndef AX_CHECK_H
#define AX_CHECK_H

#include "types.h"

/* check.c: checked mode (contracts there) */
AXI_HIDDEN void *axi_check_malloc(ax_heap_t *heap, size_t size, size_t align, bool zero);
AXI_HIDDEN void axi_check_free(ax_heap_t *heap, const char *fn, ax_segment_t *seg, ax_page_t *page,
                               void *p, size_t size, enum ax_sized how, enum ax_dealloc by);
AXI_HIDDEN void *axi_check_new_array(ax_heap_t *heap, size_t n);
AXI_HIDDEN void axi_check_flush(ax_heap_t *heap);
AXI_HIDDEN void axi_check_orphan(ax_heap_t *heap);
AXI_HIDDEN void axi_check_uncount(const ax_heap_t *heap, uint64_t *class_live);
AXI_HIDDEN void *axi_check_realloc(ax_heap_t *heap, const ax_ptr_t *x, void *p, size_t size);
AXI_HIDDEN size_t axi_check_usable(const ax_ptr_t *x, const void *p);
AXI_HIDDEN void axi_check_carve(ax_page_t *page, ax_block_t *first, uint32_t n);
AXI_HIDDEN void axi_check_init(void);

#endif
