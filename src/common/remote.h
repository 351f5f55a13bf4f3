/* SPDX-License-Identifier: MIT */
/* Remote frees (remote.c): blocks freed by a thread that does not own them, batched per owner and
 * sent to its inbox; the double-free seek over every place a block in transit waits. Layer: remote
 * frees (docs/design/05-remote.md). */
#ifndef AX_REMOTE_H
#define AX_REMOTE_H

#include "types.h"

AXI_HIDDEN void axi_remote_free(ax_block_t *b, ax_page_t *page, ax_segment_t *seg);
AXI_HIDDEN void axi_remote_push(ax_page_t *page, ax_segment_t *seg, uint32_t n, ax_block_t *head,
                                ax_block_t *tail);
AXI_HIDDEN void axi_remote_flush(ax_heap_t *heap, bool forget);
AXI_HIDDEN void axi_remote_exit(ax_heap_t *heap);
AXI_HIDDEN void axi_remote_age(ax_heap_t *heap);
AXI_HIDDEN void axi_remote_orphan(ax_heap_t *heap);
/* Is b (looking free) waiting anywhere a freed block waits? (the double-free model) */
AXI_HIDDEN bool axi_remote_seek(ax_page_t *page, ax_segment_t *seg, const ax_block_t *b);
/* Other threads' batches sent for them: all (trim), or those idle since the last sweep. */
AXI_HIDDEN unsigned axi_remote_steal(const ax_heap_t *self, bool all);
AXI_HIDDEN void axi_remote_sweep_wanted(void);
AXI_HIDDEN bool axi_remote_sweep_tick(ax_heap_t *heap);
AXI_HIDDEN const char *axi_remote_steal_mode(void); /* "membarrier" or "off" */
AXI_HIDDEN uint64_t axi_remote_sweeps(void);
AXI_HIDDEN void axi_remote_fork_prepare(void);
AXI_HIDDEN void axi_remote_fork_release(void);

#endif
