/* SPDX-License-Identifier: MIT */
/* Guarded sampling (guard.c): a random sample of the allocations, by bytes, each alone in a page
 * of a pool between inaccessible guard pages, its page made inaccessible when it is freed, so
 * that an overflow or a use after free faults where it happens (guard_fault.c) and is reported
 * with the stacks that allocated and freed the block (guard_report.c). On by default.
 * Layer: modes (docs/design/09-modes-guard.md). */
#ifndef AX_GUARD_H
#define AX_GUARD_H

#include "types.h"

/* pre: process init, options read, after checked mode's and tagging's (which rule it out). */
AXI_HIDDEN void axi_guard_init(void);
/* malloc's slow path with a short interval (axi_guard_every: every heap's is hooked): a
 * class's first malloc in the heap is the sample when its countdown, drawn then, is 0; NULL
 * otherwise (the caller allocates as usual). Elsewhere the samples are taken where the
 * countdown runs out, through the seam axi_guard_init fills (state.h, page.c). pre: heap is the
 * thread's. */
AXI_HIDDEN void *axi_guard_malloc(ax_heap_t *heap, size_t size, bool zero);
/* free (and realloc's free: fn names it) of a pointer in the pool (axi_guard_has): its page
 * made inaccessible; a double or invalid free, or bytes around the block written, reported
 * with the block's stacks (the process aborts). caller: the return address into the program
 * (its free stack's first frame when a walk from there could wait for libgcc's lock). */
AXI_HIDDEN void axi_guard_free(const char *fn, void *p, uintptr_t caller);
/* The bytes asked for of the live block at p (malloc_usable_size, realloc); reported as free
 * reports it when p is not a live block's start. */
AXI_HIDDEN size_t axi_guard_usable(const char *fn, const void *p);
/* AXMALLOC_VERBOSE's line (process init). */
AXI_HIDDEN void axi_guard_say(void);
/* The mean bytes between samples (0: none), and ax_ctl's write of it (false: not available,
 * as in checked mode or with memory tagging). */
AXI_HIDDEN uint64_t axi_guard_rate(void);
AXI_HIDDEN bool axi_guard_set_rate(uint64_t rate);
/* Counts for ax_ctl: blocks handed out, live now (and their bytes), samples skipped (every
 * slot live), slots. */
typedef struct ax_guard_counts {
  uint64_t samples, live, live_bytes, skipped, slots;
} ax_guard_counts_t;
AXI_HIDDEN void axi_guard_counts(ax_guard_counts_t *out);
/* A fork child: the pool's lock is free again (a thread that held it does not exist here). */
AXI_HIDDEN void axi_guard_fork_child(void);

#endif
