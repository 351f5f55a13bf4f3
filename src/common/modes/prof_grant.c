/* SPDX-License-Identifier: MIT */
/* What the fast paths hand out while the heap profiler samples: they count nothing, so the
 * profiler limits what they may take before a class's sampled allocation, with the pages' and
 * the cache's own primitives, and counts it back on the slow path.
 *
 * Grants (the classes the direct table serves). The current page of such a class gets at most
 * heap->prof.left[c] blocks on its free list (axi_page_free_cut: the rest waits on local_free,
 * where the next refill finds it): the allocation after them finds the list empty and takes
 * the slow path, which counts it and samples it if its turn has come. What the fast path took
 * of a grant is the grant's length less what is left on the list: counted when the slow path
 * comes back or the page stops being current (settle). Grants are made and settled on slow
 * paths only (malloc's, the pages layer's change of a current page, trim's walks), and nothing
 * else lengthens a granted list.
 *
 * The cache (the cached classes). malloc takes cached blocks without a slow path and counts
 * nothing: so a block is counted as its class's next allocation when it enters the cache (and
 * uncounted when the cache gives it back to its page). When the class's next allocation is the
 * sampled one, the block waits aside (the cache's one aside slot; another goes back to its
 * page), the cache drains, and that allocation takes the slow path, whose sample puts the block
 * back (axi_prof_unaside): a program that frees and allocates one block over and over finds it
 * in the cache again after the sample, instead of taking a second slow path to its page for it.
 * (left is 0 for every class until the heap's profile starts, and start() sets it anew.)
 *
 * The pages, cache and heaps layers reach this file only through the profiler's seams
 * (state.h), which axi_prof_grant_init fills. */
#include "modes/prof_grant.h"

#include "cache.h"
#include "list.h"
#include "pagemap.h"
#include "remote.h"
#include "state.h"

/* ---- grants ------------------------------------------------------------------------------- */

/* axi_prof_settle (prof_grant.h) of a grant with blocks left on its list: counted. */
void axi_prof_settle_walk(ax_heap_t *heap, unsigned c) {
  ax_page_t *page = heap->prof.grant_page[c];
  uint64_t granted = heap->prof.granted[c], n = axi_page_free_count(page, granted);
  uint64_t taken = n < granted ? granted - n : 0, left = heap->prof.left[c];
  heap->prof.left[c] = left > taken ? left - taken : 0;
  heap->prof.grant_page[c] = NULL;
}

/* Give the fast path class c's current page with at most left blocks on its free list. */
void axi_prof_grant(ax_heap_t *heap, unsigned c) {
  heap->prof.grant_page[c] = NULL;
  ax_page_t *page = heap->current[c];
  if (!heap->prof.started || !axi_class_direct(c) || page == &axi_page_empty ||
      c == heap->prof.serving)
    return;
  heap->prof.granted[c] = axi_page_free_cut(page, heap->prof.left[c]);
  heap->prof.grant_page[c] = page;
}

/* malloc's slow path for a size the direct table serves, in its common case while the heap
 * profiler samples: the class's grant used up (its list empty), this allocation not the
 * sampled one, the blocks freed since waiting on local_free. Settles, counts, refills, hands
 * out and grants again, as axi_prof_take, axi_page_malloc_current and axi_prof_grant do one
 * after the other, without their checks again (wl_rounds: 811,000 such slow paths, 110
 * instructions each more than without profiling). pre: size <= AX_DIRECT_MAX; heap is the
 * thread's own, its profile started, not busy. post: the block (zeroed if zero), or NULL with
 * nothing changed: take the general way. */
void *axi_prof_malloc_granted(ax_heap_t *heap, size_t size, bool zero) {
  ax_page_t *page = heap->direct[size];
  unsigned c = page->cls;
  ax_prof_heap_t *ph = &heap->prof;
  uint64_t left = ph->left[c], granted = ph->granted[c];
  if (ph->grant_page[c] != page || page->free || left <= granted)
    return NULL;
  void *b = axi_page_malloc_refilled(heap, page, size, zero);
  if (!b)
    return NULL;
  if (ax_peek(&heap->rb.open)) /* as malloc_common (alloc.c) does first; other threads' pages */
    axi_remote_age(heap);
  ph->left[c] = left - granted - 1;                  /* the grant taken, and this allocation */
  uint64_t n = page->capacity - axi_page_live(page); /* (local_free is empty) */
  if (ax_unlikely(n > ph->left[c]))
    axi_prof_grant(heap, c); /* a cut */
  else
    ph->granted[c] = (uint32_t)n; /* (grant_page[c] is page still) */
  return b;
}

/* Around heap-wide walks that lengthen free lists (trim, a refused mapping). */
void axi_prof_settle_all(ax_heap_t *heap) {
  for (unsigned c = 1; c < AX_CLASSES && axi_class_direct(c); c++)
    axi_prof_settle(heap, c);
}
void axi_prof_grant_all(ax_heap_t *heap) {
  for (unsigned c = 1; c < AX_CLASSES && axi_class_direct(c); c++)
    axi_prof_grant(heap, c);
}

/* ---- the cache ---------------------------------------------------------------------------- */

/* b, freed into the cache, counted as its class's next allocation; aside when that one is the
 * sampled one. */
static void put_counted(ax_heap_t *heap, ax_block_t *b, ax_page_t *page) {
  uint64_t *left = &heap->prof.left[page->cls];
  if (ax_likely(*left != 0)) {
    --*left;
    return axi_cache_put(heap, b, page);
  }
  if (!heap->prof.started)
    return axi_cache_put(heap, b, page);
  if (heap->cache.aside)
    return axi_page_give_back(heap, page, b);
  axi_set_link(page, b, b); /* looks free to a second free() of it (axi_cache_has) */
  heap->cache.aside = b;
}

/* Class c's sample was just taken: the block aside, if of class c, goes into the cache,
 * counted. pre: heap is the calling thread's. */
void axi_prof_unaside(ax_heap_t *heap, unsigned c) {
  ax_block_t *b = heap->cache.aside;
  ax_page_t *page = axi_page_of(axi_segment_of(b), b);
  if (page->cls != c)
    return;
  heap->cache.aside = NULL;
  put_counted(heap, b, page);
}

/* The same after a look, b's first word a link of its page's: it may be free already. */
static AX_NOINLINE void free_suspect(ax_block_t *b, ax_page_t *page) {
  axi_double_free_check(page, b);
  put_counted(axi_tls_heap, b, page);
}

/* free() of a block of our own page of a cached class while the heap profiler samples: the
 * double-free filter, then the block is counted into the cache. Reached through AX_OWNER_PROF
 * (free.c), so that axi_cache_free stays as it is; the filter here, so that the common case
 * is one call (free.c's own wrapper around it cost 10 instructions a free). pre: the
 * calling thread owns page, whose class is cached; b passed free()'s block checks. */
void axi_prof_cache_free(ax_block_t *b, ax_page_t *page) {
  if (axi_looks_free(page, b))
    return free_suspect(b, page);
  put_counted(axi_tls_heap, b, page); /* the page's owner is this thread: its heap */
}

/* The cache gives a block of class c back to its page: an allocation counted in advance
 * (put_counted) that is not made after all. */
static void uncache(ax_heap_t *heap, unsigned c) {
  if (heap->prof.started)
    heap->prof.left[c]++;
}

/* ---- the seams ---------------------------------------------------------------------------- */

static void current_leave(ax_heap_t *heap, unsigned c) { axi_prof_settle(heap, c); }

void axi_prof_grant_init(void) {
  axi_seams.current_leave = current_leave; /* a grant ends with its page (page.c) */
  axi_seams.current_enter = axi_prof_grant;
  axi_seams.walk_begin = axi_prof_settle_all; /* trim's walks lengthen the lists (heap.c) */
  axi_seams.walk_end = axi_prof_grant_all;
  axi_seams.uncache = uncache; /* (cache.c) */
}
