/* SPDX-License-Identifier: MIT */
/* The heap pool (pool.c): heaps handed to starting threads and taken back at their exit.
 * Layer: heap pool (docs/design/04-pool.md). */
#ifndef AX_POOL_H
#define AX_POOL_H

#include "types.h"

AXI_HIDDEN ax_heap_t *axi_heap_start(void);
AXI_HIDDEN void axi_heap_bind(ax_heap_t *heap);
AXI_HIDDEN void axi_heap_exit_key(void (*on_exit)(void *));
AXI_HIDDEN void axi_heap_put(ax_heap_t *heap, bool orphaned);
AXI_HIDDEN void axi_heap_foreach(void (*fn)(ax_heap_t *, void *), void *arg);
AXI_HIDDEN ax_heap_t *axi_heap_all(void);

#endif
