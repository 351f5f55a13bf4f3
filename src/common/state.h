/* SPDX-License-Identifier: MIT */
/* The process's settings and flags (state.c): each set once by process init (lifecycle.c) before
 * the first page exists. The thread's heap slot; the process-wide counters. Layer: base
 * (docs/design/00-base.md). */
#ifndef AX_STATE_H
#define AX_STATE_H

#include "atomic.h"
#include "types.h"

/* The process's settings and flags, each set once by process init (lifecycle.c) before the
 * first page exists; the thread's heap slot. */

/* Checked mode (check.c): AXMALLOC_CHECK=1 at run time, or always on when built with
 * -DAX_CHECKED=ON. Set once by process init, before the first page exists. */
AXI_HIDDEN extern bool axi_checked;
/* Memory tagging on (mte.c): AXMALLOC_MTE=1 or checked mode, on a CPU with MTE. Set once by
 * process init, before the first page exists. */
AXI_HIDDEN extern bool axi_mte;
AXI_HIDDEN extern const char *axi_mte_state; /* "on", "off", "unavailable" */
/* Sampling heap profiler on (prof.c): AXMALLOC_PROF=1, not with checked mode or tagging.
 * Set once by process init, before the first page exists; read on slow paths only. */
AXI_HIDDEN extern bool axi_prof_on;
/* How stacks are walked (modes/stacks/unwind.c): AXMALLOC_PROF_UNWIND=libgcc|check (default: the
 * table) */
enum { AX_UNWIND_TABLE, AX_UNWIND_LIBGCC, AX_UNWIND_CHECK };
AXI_HIDDEN extern uint8_t axi_prof_unwind_mode;
/* The exact leak checker on (leak.c): AXMALLOC_LEAKS=1 or all, not with checked mode or
 * tagging. Set once by process init, before the first page exists; 2: all (the still
 * reachable blocks reported too). */
AXI_HIDDEN extern uint8_t axi_leaks;
/* Checked mode keeps every block's stacks for its reports (check.c, modes/stacks/):
 * AXMALLOC_CHECK=1 with AXMALLOC_PROF=1. Set once by process init. */
AXI_HIDDEN extern bool axi_check_stacks;
/* The profiler or the leak checker is on: malloc's slow path goes to them. Set once by process
 * init, with them. */
AXI_HIDDEN extern bool axi_malloc_hooked;
/* Guarded sampling's mean bytes between samples (modes/guard.c sets it at process init and at
 * ax_ctl's write; 0: none), read where a class's countdown is drawn (sample.c); and whether it
 * is so short (below 64 KiB: a test's) that a class's first malloc in a thread may be the
 * sample: every heap's malloc slow path then stays hooked (AX_HOOKED_GUARD). */
AXI_HIDDEN extern uint64_t axi_guard_mean;
AXI_HIDDEN extern bool axi_guard_every;
#define AX_GUARD_EVERY_BELOW ((uint64_t)64 << 10)
/* Every malloc and free takes the slow paths (checked mode, tagging, the leak checker): the
 * direct tables hold only the empty page and every fast_cap is 0. */
/* The modes' seams: where a layer below the modes hands work to one without naming it (an
 * upward call through a pointer). The mode's init fills its entries when it is on, during
 * process init and before the first page exists; NULL otherwise, and the caller tests it. */
typedef struct axi_seams {
  /* checked mode (check.c, set by lifecycle.c): the blocks a page just carved get its free
   * pattern (page.c) */
  void (*carve)(ax_page_t *page, ax_block_t *first, uint32_t n);
  /* the leak checker (leak.c, leak_gate.c): an unmap, resize or move of a mapping waits while
   * its scan at exit reads memory (os.c); see axi_leak_hold */
  void (*unmap_hold)(const void *p);
  void (*unmap_release)(void);
  /* the heap profiler (prof_grant.c): what the fast paths may take before a sample. A class's
   * current page changes (page.c: before and after); a heap-wide walk that lengthens free
   * lists runs (heap.c: before and after); the cache gives a block of class c back (cache.c) */
  void (*current_leave)(ax_heap_t *heap, unsigned c);
  void (*current_enter)(ax_heap_t *heap, unsigned c);
  void (*walk_begin)(ax_heap_t *heap);
  void (*walk_end)(ax_heap_t *heap);
  void (*uncache)(ax_heap_t *heap, unsigned c);
  /* guarded sampling (guard.c): a class's countdown ran out at this malloc (page.c): its
   * guarded block, or NULL (no slot, off, too big), the class's next interval drawn either way */
  void *(*guard_take)(ax_heap_t *heap, size_t size, bool zero);
} axi_seams_t;
AXI_HIDDEN extern axi_seams_t axi_seams;
static inline bool axi_slow_only(void) { return axi_checked || axi_mte || axi_leaks; }

AXI_HIDDEN extern ax_options_t axi_options;
AXI_HIDDEN extern size_t axi_os_page; /* the OS page size, read at run time */
AXI_HIDDEN extern ax_page_t axi_page_empty;
AXI_HIDDEN extern ax_heap_t axi_heap_empty;
AXI_HIDDEN extern __thread ax_heap_t *axi_tls_heap;

/* The thread is in its last TSD destructors: its heap was done (lifecycle.c, pool.c) */
AXI_HIDDEN extern __thread bool axi_thread_exited;
/* The entry point whose free is under way when it is not free() itself ("realloc": its
 * reports name it, print.c); NULL otherwise */
AXI_HIDDEN extern __thread const char *axi_freeing_for;
/* address ^ axi_cookie_key is every segment header's first word (segment.c) */
AXI_HIDDEN extern uintptr_t axi_cookie_key;
/* process-wide counters, touched only on slow paths */
AXI_HIDDEN extern ax_global_stats_t axi_stats;
/* counter += delta, and peak follows it up (if given). Any thread, any time. */
static inline void axi_stat_add(ax_atomic_word *counter, ax_atomic_word *peak, intptr_t delta) {
  uintptr_t now = ax_atomic_fetch_add_relaxed(counter, (uintptr_t)delta) + (uintptr_t)delta;
  if (!peak)
    return;
  uintptr_t seen = ax_atomic_load_relaxed(peak);
  while ((intptr_t)now > (intptr_t)seen && !ax_atomic_cas_acq_rel(peak, &seen, now))
    ;
}

#endif
