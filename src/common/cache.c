/* SPDX-License-Identifier: MIT */
/* The heap's cache of freed mid-size blocks (1,280 B .. 256 KiB), as in tcmalloc's thread
 * cache: a stack of blocks per class, in front of the pages.
 *
 *   free(p), local, of a cached class: push p on its class's stack (free_other in free.c;
 *            the owner word of such a page carries AX_OWNER_CACHED, so free()'s one
 *            compare sends it there and the small classes' fast path is unchanged);
 *   malloc(n) of a cached class: the block on top, before any page (malloc_slow).
 * Why: a program that frees mid-size blocks at random among many and allocates others
 * lands each free in a different page, mostly a full one, and each malloc then had to find a
 * page with a block: 283 instructions per pair (bm_pairs/random 4 KiB, 1,024 live blocks),
 * 2-5x tcmalloc's time. Through the stack a free and the next malloc meet in one place.
 *
 * A cached block still counts as used in its page (page->used), so its page can neither
 * empty nor retire while the block waits. The stack is bounded (depth[]: at most 16
 * blocks and about 64 KiB a class, at least one block), so a thread holds at most a few
 * MiB this way. A push that overfills a stack gives its older half back to their pages, as
 * local frees would have; trim, thread exit and a refused mapping give back everything
 * (heap.c, lifecycle.c). A cached block's first word is its own address encoded with its page's
 * key, so free()'s double-free filter sends a second free of it to axi_double_free_check, which
 * looks here too (axi_cache_has). Never in checked mode: no page has AX_OWNER_CACHED there.
 */
#include "cache.h"

#include "list.h"
#include "page.h"
#include "pagemap.h"
#include "print.h"
#include "remote.h"
#include "state.h"

/* axi_class_of as a constant expression (GCC folds __builtin_clzl of a constant), for the
 * sizes above 128 B; the table's bucket i holds the sizes (256 i, 256 (i + 1)]. */
#define LOG2(n) (63 - __builtin_clzl(n))
#define CLS(n) (4 * LOG2((n)-1) - 19 + ((((n)-1) >> (LOG2((n)-1) - 2)) & 3))
#define B1(i) CLS(((size_t)(i) << 8) + 256)
#define B4(i) B1(i), B1(i + 1), B1(i + 2), B1(i + 3)
#define B16(i) B4(i), B4(i + 4), B4(i + 8), B4(i + 12)
#define B64(i) B16(i), B16(i + 16), B16(i + 32), B16(i + 48)
#define B256(i) B64(i), B64(i + 64), B64(i + 128), B64(i + 192)
const uint8_t axi_cache_class[AX_CACHE_MAX >> 8] = {B256(0), B256(256), B256(512), B256(768)};
_Static_assert(AX_CACHE_MAX >> 8 == 1024, "axi_cache_class lists 1,024 buckets");

/* Stack depth per class: 16 blocks up to 4 KiB, then halving per power of two (64 KiB of
 * blocks), one from 64 KiB on. A class's sizes lie in (2^b, 2^(b+1)], b = (c - 9) / 4 + 7. */
#define OCT(c) (((c)-9) / 4 + 7)
#define DEPTH(c)                                                                                   \
  (OCT(c) <= 11 ? AX_CACHE_SLOTS : OCT(c) >= 15 ? 1 : AX_CACHE_SLOTS >> (OCT(c) - 11))
#define DEPTH4(c) DEPTH(c), DEPTH(c + 1), DEPTH(c + 2), DEPTH(c + 3)
static const uint8_t depth[AX_CACHE_N] = {DEPTH4(21), DEPTH4(25), DEPTH4(29), DEPTH4(33),
                                          DEPTH4(37), DEPTH4(41), DEPTH4(45), DEPTH4(49)};
_Static_assert(AX_CACHE_N == 32 && AX_CACHE_SLOTS == 16, "depth[] lists 32 classes");

/* Give cached block b back to its page. While the heap profiler samples, a cached block is an
 * allocation counted in advance (prof_grant.c): one that goes back is not made after all. */
static void give_back(ax_heap_t *heap, ax_block_t *b) {
  ax_page_t *page = axi_page_of(axi_segment_of(b), b);
  if (ax_unlikely(axi_seams.uncache != NULL))
    axi_seams.uncache(heap, page->cls);
  axi_page_give_back(heap, page, b);
}

/* Push b on stack i, which is full (depth[i] blocks): its older half goes back, the larger
 * half for an odd count (the one block of a depth of 1). The stack drops them before they go:
 * at every store a block is in the cache or on its page's lists, never in both (a fork child
 * gives a dead thread's cache back as it finds it: axi_cache_orphan). */
static AX_NOINLINE void push_full(ax_heap_t *heap, unsigned i, ax_block_t *b) {
  uint32_t n = heap->cache.n[i], half = (n + 1) / 2;
  ax_block_t *old[AX_CACHE_SLOTS / 2];
  for (uint32_t k = 0; k < half; k++)
    old[k] = heap->cache.slot[i][k];
  heap->cache.n[i] = 0;
  ax_compiler_fence();
  for (uint32_t k = half; k < n; k++)
    heap->cache.slot[i][k - half] = heap->cache.slot[i][k];
  heap->cache.slot[i][n - half] = b;
  heap->cache.n[i] = n - half + 1;
  for (uint32_t k = 0; k < half; k++)
    give_back(heap, old[k]);
}

/* Push b, of class c, on its stack. */
void axi_cache_push(ax_heap_t *heap, unsigned c, ax_block_t *b) {
  unsigned i = c - AX_CACHE_FIRST;
  uint32_t n = heap->cache.n[i];
  if (ax_unlikely(n == depth[i]))
    return push_full(heap, i, b); /* a tail call: the common path saves no register */
  heap->cache.slot[i][n] = b;
  heap->cache.n[i] = n + 1;
}

/* pre: the calling thread owns page, whose class is cached; b passed free()'s checks. */
void axi_cache_free(ax_block_t *b, ax_page_t *page) {
  axi_cache_put(axi_tls_heap, b, page); /* the page's owner is this thread: its heap */
}

/* Every cached block goes back to its page (trim, thread exit, refused mappings), and the
 * block aside (never counted); each leaves the cache before it goes (see push_full). */
void axi_cache_flush(ax_heap_t *heap) {
  ax_block_t *aside = heap->cache.aside;
  if (aside) {
    heap->cache.aside = NULL;
    axi_page_give_back(heap, axi_page_of(axi_segment_of(aside), aside), aside);
  }
  if (heap->cache.last_cls) {
    heap->cache.last_cls = 0;
    ax_compiler_fence();
    give_back(heap, heap->cache.last);
  }
  for (unsigned i = 0; i < AX_CACHE_N; i++) {
    uint32_t n = heap->cache.n[i];
    heap->cache.n[i] = 0;
    ax_compiler_fence();
    for (uint32_t k = 0; k < n; k++)
      give_back(heap, heap->cache.slot[i][k]);
  }
}

/* A fork child's handler, for a heap whose thread does not exist in the child: every block of
 * its cache and the one aside back on its page's local_free, as its owner's free would put
 * it, without the queue bookkeeping (the thread may have left its queues half-updated; its
 * segments are abandoned next, lifecycle.c). */
void axi_cache_orphan(ax_heap_t *heap) {
  if (heap->cache.aside)
    axi_page_return(heap->cache.aside);
  if (heap->cache.last_cls)
    axi_page_return(heap->cache.last);
  for (unsigned i = 0; i < AX_CACHE_N; i++)
    for (uint32_t k = 0; k < heap->cache.n[i] && k < AX_CACHE_SLOTS; k++)
      axi_page_return(heap->cache.slot[i][k]);
  heap->cache.aside = NULL;
  heap->cache.last_cls = 0;
  for (unsigned i = 0; i < AX_CACHE_N; i++)
    heap->cache.n[i] = 0;
}

/* b's first word decodes to a link of this page's lists: b may already be free. Look, in
 * the heap's cache too. pre: the caller owns the page. Returns when b is not free. */
void axi_double_free_check(ax_page_t *page, ax_block_t *b) {
  const ax_block_t *remote = axi_tf_list(ax_atomic_load_acquire(&page->thread_free));
  if (axi_list_has(page, page->free, b) || axi_list_has(page, page->local_free, b) ||
      axi_list_has(page, remote, b) || axi_cache_has(axi_tls_heap, page->cls, b) ||
      axi_remote_seek(page, axi_segment_of(page), b)) /* (in transit: a batch, an inbox) */
    axi_double_free("free", b);
}
