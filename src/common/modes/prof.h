/* SPDX-License-Identifier: MIT */
/* The heap profiler's shared state: prof.c samples and keeps the stacks, prof_dump.c writes
 * them out (gperftools' heap-profile text format, which google-pprof reads). */
#ifndef AX_PROF_H
#define AX_PROF_H

#include "modes/prof_grant.h"
#include "modes/stacks/unwind.h"
#include "page.h"
#include "state.h"

/* ---- the slow path's decision to sample ------------------------------------------------ */

AXI_HIDDEN bool axi_prof_take_slow(ax_heap_t *heap, unsigned c);
/* malloc's slow path, for a block of class c: settles what the fast path handed out of the
 * class since the slow path last came by, counts this allocation, and tells whether it is
 * the sampled one. pre: c's size <= AX_LARGE_MAX; heap is the thread's own, not busy.
 * post: true: sample it (axi_prof_sampled); false: allocate as usual, then (a direct class)
 * axi_prof_grant. */
static inline bool axi_prof_take(ax_heap_t *heap, unsigned c) {
  ax_prof_heap_t *ph = &heap->prof;
  if (ax_unlikely(!ph->started))
    return axi_prof_take_slow(heap, c);
  axi_prof_settle(heap, c);
  if (ax_likely(ph->left[c] != 0)) {
    ph->left[c]--;
    return false;
  }
  return axi_prof_take_slow(heap, c);
}

/* prof.c: the sampled allocation, its stack taken (axi_stack_capture) */
AXI_HIDDEN void *axi_prof_sampled(ax_heap_t *heap, size_t size, bool zero, const ax_stack_t *st);

/* prof.c: the sampling heap profiler (contracts there; prof_dump.c writes the profiles) */
AXI_HIDDEN void axi_prof_init(void);
AXI_HIDDEN void axi_prof_ready(void);
AXI_HIDDEN uint64_t axi_prof_rate(void);
AXI_HIDDEN void axi_prof_set_active(bool on); /* ax_ctl's prof.active (sampling paused) */
AXI_HIDDEN bool axi_prof_active(void);
AXI_HIDDEN const char *axi_prof_prefix(void);
AXI_HIDDEN void *axi_prof_malloc(ax_heap_t *heap, size_t size, bool zero);
AXI_HIDDEN void axi_prof_huge(void *p, size_t size);
AXI_HIDDEN void axi_prof_release(ax_segment_t *seg);
AXI_HIDDEN void axi_prof_slot_free(const char *fn, ax_segment_t *seg, void *p);
AXI_HIDDEN size_t axi_prof_slot_size(const char *fn, ax_segment_t *seg, const void *p);
AXI_HIDDEN void axi_prof_fork_child(void);
AXI_HIDDEN void axi_prof_trim(void);

#endif
