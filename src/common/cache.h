/* SPDX-License-Identifier: MIT */
/* The thread's cache of freed medium blocks (cache.c).
 * Layer: cache (docs/design/07-cache.md). */
#ifndef AX_CACHE_H
#define AX_CACHE_H

#include "list.h"
#include "track.h"
#include "types.h"

/* axi_class_of(n) for AX_DIRECT_MAX < n <= AX_CACHE_MAX, as one load: classes there are
 * 256 B apart or more, so (n - 1) >> 8 names one (cache.c; t_cache checks every size). */
AXI_HIDDEN extern const uint8_t axi_cache_class[AX_CACHE_MAX >> 8];

AXI_HIDDEN void axi_cache_free(ax_block_t *b, ax_page_t *page);
AXI_HIDDEN void axi_cache_flush(ax_heap_t *heap);
AXI_HIDDEN void axi_double_free_check(ax_page_t *page, ax_block_t *b);
AXI_HIDDEN void axi_cache_orphan(ax_heap_t *heap);

AXI_HIDDEN void axi_cache_push(ax_heap_t *heap, unsigned c, ax_block_t *b);
/* Freed block b of page (the calling thread's, of a cached class) into heap's cache (the heap
 * profiler counts it first: prof_grant.c). b goes in the heap's last slot when that is empty, else
 * on its class's stack (a block already in the slot stays: moving it to its stack cost a second
 * push whenever the program alternates classes, as wl_oneblock does). */
static inline void axi_cache_put(ax_heap_t *heap, ax_block_t *b, ax_page_t *page) {
  axi_set_link(page, b, b); /* looks free to a second free() of it */
  if (heap->cache.last_cls)
    return axi_cache_push(heap, page->cls, b);
  heap->cache.last = b;
  heap->cache.last_cls = page->cls;
}

/* post: a block of size's class taken off heap's cache (the one in `last`, else its stack's
 * top); NULL when there is none. pre: AX_DIRECT_MAX < size <= AX_CACHE_MAX. (cache.c has
 * the rest.) */
static inline ax_block_t *axi_cache_pop(ax_heap_t *heap, size_t size) {
  unsigned c = axi_cache_class[(size - 1) >> 8], i = c - AX_CACHE_FIRST;
  ax_block_t *b;
  /* guarded sampling's countdown (types.h), where a block is there to take: run out, the slow
   * path takes the sample (page.c). Not before: the empty heap, every heapless thread's, has no
   * block and must not be written (TSan: two threads' mid mallocs raced on it). */
  if (heap->cache.last_cls == c) { /* one compare: last_cls is 0 when there is no last */
    if (ax_unlikely(--heap->guard.left[c] < 0))
      return NULL;
    b = heap->cache.last;
    heap->cache.last_cls = 0;
  } else {
    uint32_t n = heap->cache.n[i];
    if (!n || ax_unlikely(--heap->guard.left[c] < 0))
      return NULL;
    b = heap->cache.slot[i][--n];
    heap->cache.n[i] = n;
  }
  AX_TRACK_UNDEFINED(b, sizeof *b);
  b->next_enc = 0; /* a live block must not look free to free()'s double-free check */
  heap->stats.class_mallocs[c]++;
  AX_TRACK_MALLOC(b, axi_class_size(c), 0);
  return b;
}

#endif
