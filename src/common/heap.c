/* SPDX-License-Identifier: MIT */
/* A heap's policies over its pages, segments and caches: trim, what a refused mapping
 * releases, the allocations retried after it, and a heap's counters merged into the
 * process's. A thread's heap is started and ended in lifecycle.c, its structure comes from
 * the pool (pool.c).
 */
#include <errno.h>
#include <string.h>

#include "heap.h"

#include "cache.h"
#include "hooks.h"
#include "huge.h"
#include "page.h"
#include "remote.h"
#include "segment.h"
#include "state.h"

/* ---- trim and refused mappings ---------------------------------------------------------- */

/* malloc_trim: purge all that can be purged now: this thread's empty pages, abandoned
 * segments that turn out empty, and both caches. Other threads' empty pages wait for their
 * own slow path (their heaps are theirs alone). pre: heap is the calling thread's. */
void axi_heap_trim(ax_heap_t *heap) {
  axi_remote_steal(heap, true); /* (idle threads' batches: their blocks' pages may empty) */
  if (heap != &axi_heap_empty) {
    if (axi_seams.walk_begin) /* the walks below lengthen the fast path's lists (the profiler) */
      axi_seams.walk_begin(heap);
    axi_remote_flush(heap, true);
    AX_HOOK(AX_HOOK_TRIM, heap);
    for (int i = 0; i < 64 && axi_page_reclaim(heap); i++)
      ;
    axi_cache_flush(heap);
    axi_pages_retire_empty(heap, true);
    axi_segment_purge(heap, true);
    axi_segment_purge_abandoned(true);
    if (axi_seams.walk_end)
      axi_seams.walk_end(heap);
  }
  axi_segment_cache_trim(AX_TRIM_ALL);
  axi_huge_cache_trim(AX_TRIM_ALL);
}

/* The OS refused a mapping. Only unmapping helps (RLIMIT_AS and the overcommit check count
 * address space, not resident pages: no purge): take over exited threads' segments, retire
 * the pages that are empty, then unmap both caches without waiting for their locks (fork's
 * prepare handler may hold them). A program that tries a huge buffer and falls back to a
 * smaller one pays little per refusal. Every class keeps its current page (pinned): the
 * next malloc of that size would map it again (a refused request cost the next malloc(16) a
 * segment's mmap and faults, 17-23 us; glibc's tst-malloc-too-large took 16-21 s instead of
 * 2-3). post: true when something was unmapped. */
bool axi_heap_release(ax_heap_t *heap) {
  uint64_t before = ax_atomic_load_relaxed(&axi_stats.munmap_calls);
  if (axi_seams.walk_begin) /* as in trim */
    axi_seams.walk_begin(heap);
  axi_remote_flush(heap, false);
  axi_huge_pack_tight();
  for (int i = 0; i < 64 && axi_page_reclaim(heap); i++)
    ;
  axi_cache_flush(heap);
  axi_pages_retire_empty(heap, false);
  if (axi_seams.walk_end)
    axi_seams.walk_end(heap);
  axi_segment_cache_trim(AX_TRIM_ALL_NOWAIT);
  axi_huge_cache_trim(AX_TRIM_ALL_NOWAIT);
  return ax_atomic_load_relaxed(&axi_stats.munmap_calls) != before;
}

/* The allocations that map memory, retried once after axi_heap_release when the OS refuses
 * (t_oom.limit: memory freed just before, waiting out the purge delay or in the caches,
 * is usable at once). */
void *axi_heap_page_malloc(ax_heap_t *heap, size_t size, bool zero) {
  void *p = axi_page_malloc(heap, size, zero);
  if (!p && axi_heap_release(heap))
    p = axi_page_malloc(heap, size, zero);
  return p;
}

ax_page_t *axi_heap_page_with_free(ax_heap_t *heap, unsigned c) {
  ax_page_t *page = axi_page_with_free(heap, c);
  if (!page && axi_heap_release(heap))
    page = axi_page_with_free(heap, c);
  return page;
}

/* A block for malloc's slow path that its class's current page could not give: a huge block
 * above AX_LARGE_MAX, else one from heap's pages, each retried after a release (above).
 * post: the block (zeroed if zero), or NULL with errno = ENOMEM. */
void *axi_heap_malloc(ax_heap_t *heap, size_t size, bool zero) {
  void *p = size > AX_LARGE_MAX ? axi_heap_huge_alloc(heap, size, 16, zero)
                                : axi_heap_page_malloc(heap, size, zero);
  if (!p)
    errno = ENOMEM;
  return p;
}

/* A request no address space holds fails at once: nothing to release for it. */
void *axi_heap_huge_alloc(ax_heap_t *heap, size_t size, size_t align, bool zero) {
  axi_page_purge_tick(heap);
  void *p = axi_huge_alloc(heap, size, align, zero);
  if (!p && axi_huge_possible(size, align) && axi_heap_release(heap))
    p = axi_huge_alloc(heap, size, align, zero);
  return p;
}

/* A heap's counters, added to the process's (thread exit, fork children). */
void axi_stats_merge_heap(ax_heap_t *heap) {
  for (unsigned c = 0; c < AX_CLASSES; c++)
    ax_atomic_fetch_add_relaxed(&axi_stats.class_mallocs[c], heap->stats.class_mallocs[c]);
  ax_atomic_fetch_add_relaxed(&axi_stats.huge_allocs, heap->stats.huge_allocs);
  ax_atomic_fetch_add_relaxed(&axi_stats.remote_frees, heap->stats.remote_frees);
  ax_atomic_fetch_add_relaxed(&axi_stats.remote_publishes, heap->stats.remote_publishes);
  ax_atomic_fetch_add_relaxed(&axi_stats.remote_drains, heap->stats.remote_drains);
  memset(&heap->stats, 0, sizeof heap->stats);
}
