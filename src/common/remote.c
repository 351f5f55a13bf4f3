/* Remote frees: a block freed by a thread that does not own its page.
 *
 *   remote free(b of page P):  P's slot names P, with a chain open? append b (no atomic);
 *                                the chain full: publish it
 *                              names P, no chain? open one with b
 *                              else: publish the slot's chain if it has one, name P in the
 *                                slot, and publish b alone
 *   publish(chain of P):       one CAS pushes the whole chain on P->thread_free
 *
 * So a lone remote free, or a thread that frees into a different page each time, costs one
 * CAS per block as before, and a thread that frees many blocks of one page (a consumer, a
 * GC thread, Larson's rotating arrays) costs one CAS per chain of up to AX_RB_CHAIN blocks
 * or AX_RB_BYTES bytes. The owner takes chains like single blocks: its one exchange takes
 * the whole thread_free list (page.c).
 *
 * A chain is the freeing thread's alone until it is published, and its blocks still count
 * as used in their page, so the page and its segment cannot go away meanwhile. It waits at
 * most until its slot is wanted for another page, the chain fills, the thread's second
 * malloc refill after it opened (axi_remote_age), a trim, or the thread's exit
 * (axi_remote_flush): a thread that stops freeing holds at most AX_RB_SLOTS chains of
 * AX_RB_BYTES until then.
 */
#include "internal.h"

/* Publish the chain head .. tail (linked with page's key) on page->thread_free: one CAS.
 * Once it has succeeded the owner may collect the blocks, empty the page and unmap the
 * segment (trim, thread exit, a cache trim, a refused mapping): nothing after it touches
 * the segment or the page (t_race_remote stops a thread right there). What the rare case
 * needs (a page that leaves the full list: tell its heap) is read before the CAS, while the
 * blocks we still hold keep the segment alive. Heaps are never unmapped (pool.c), so the
 * increment after it is safe even if the owner exits meanwhile: a stale heap gets one
 * needless revisit, and if the segment was abandoned and reclaimed in that window, its new
 * owner finds the page at its next revisit, trim or exit instead of at once. The header's
 * cookie is checked before a heap pointer read from it is used: an overflow from the block
 * before the segment must not turn the increment into a write anywhere. */
void axi_remote_push(ax_page_t *page, ax_segment_t *seg, uint32_t n, ax_block_t *head,
                     ax_block_t *tail) {
  uintptr_t cookie = seg->cookie;
  /* relaxed: only the address is used, for an atomic add (heaps are type-stable) */
  ax_heap_t *heap = (ax_heap_t *)ax_atomic_load_relaxed(&seg->heap);
  uintptr_t tf = ax_atomic_load_relaxed(&page->thread_free);
  uintptr_t len;
  do {
    axi_set_link(page, tail, axi_tf_list(tf));
    len = axi_tf_len(tf) + n;
  } while (
      !ax_atomic_cas_release(&page->thread_free, &tf, (uintptr_t)head | len << AX_TF_LEN_SHIFT));
  AX_HOOK(AX_HOOK_REMOTE_FREE_PUBLISHED, head);
  if (ax_unlikely(tf & AX_TF_FULL)) { /* we took the page out of "full": tell its heap */
    if (cookie != ((uintptr_t)seg ^ axi_cookie_key))
      axi_corrupted(seg);
    if (heap)
      ax_atomic_fetch_add_relaxed(&heap->full_pending, 1);
  }
}

/* The slot is closed before the CAS: a fork child publishes again what a thread that does
 * not exist there left open (axi_remote_orphan), and a chain caught between the two is lost to
 * it, not published twice. */
static AX_NOINLINE void slot_publish(ax_heap_t *heap, ax_remote_slot_t *s) {
  AX_HOOK(AX_HOOK_CHAIN_PUBLISH, s->head);
  uint32_t n = s->n;
  uint64_t bit = (uint64_t)1 << (s - heap->rb.slot);
  s->n = 0;
  heap->rb.open &= ~bit;
  heap->rb.older &= ~bit;
  ax_compiler_fence(); /* (closed in program order, before the CAS) */
  axi_remote_push(s->page, axi_segment_of(s->page), n, s->head, s->tail);
  heap->stats.remote_frees += n;
  heap->stats.remote_publishes++;
}

/* The slot of a page: pages are 64 B or more apart in their segments' headers. */
static inline unsigned slot_of(const ax_page_t *page) {
  uintptr_t h = ((uintptr_t)page >> 6) * (uintptr_t)0x9e3779b97f4a7c15u;
  return (unsigned)(h >> (64 - AX_RB_SLOTS_LOG2));
}

/* A block that looks free, sought where other threads hold freed blocks: their open chains
 * into its page, the blocks they keep aside, their caches of its class. */
typedef struct seek {
  const ax_page_t *page;
  const ax_block_t *b;
  bool found;
} seek_t;

/* Other threads' chains and caches, read as they change: each field is one load, a chain is
 * walked at most as far as its count and within the page (whose memory the block held keeps:
 * its blocks count as used until the chain is collected), a cached block is only compared. A
 * stale read may miss a double free; a false report would need a live block whose first word
 * passes the filter (2^-14) freed in the instant its slot or chain is being emptied. */
static void seek_in(ax_heap_t *heap, void *arg) {
  seek_t *k = arg;
  for (unsigned i = 0; i < AX_RB_SLOTS && !k->found; i++) {
    ax_remote_slot_t *s = &heap->rb.slot[i];
    if (ax_peek(&s->page) != k->page)
      continue;
    uint32_t n = ax_peek(&s->n);
    const ax_block_t *x = ax_peek_acquire(&s->head);
    for (uint32_t j = 0; j < n && j <= AX_RB_CHAIN && !k->found; j++) {
      if ((uintptr_t)x - k->page->area >= axi_page_carved(k->page))
        break;
      k->found = x == k->b;
      x = axi_link(k->page, x);
    }
  }
  k->found |= ax_peek(&heap->prof.aside) == k->b || axi_cache_has(heap, k->page->cls, k->b);
}

/* b looks free (axi_looks_free): is it in s's open chain, published on its page's
 * thread_free list already, or held freed by another thread (its chain, its cache, the block
 * it keeps aside)? Then this is a double free, reported here, naming the block, instead of as
 * a corrupted list when the owner takes it (page.c), or not at all. The list may be taken
 * meanwhile; axi_list_has stops at a link out of the page. A block the owner has taken back
 * onto its page's lists is the owner's to find (its malloc checks nothing, its next free of
 * it does). The seek through other heaps costs only a free that looks free (a double free,
 * or one in 2^14 of the first words a program leaves: axi_looks_free). */
static void check_freed(const ax_remote_slot_t *s, ax_page_t *page, const ax_block_t *b) {
  const ax_block_t *x = s->head;
  for (uint32_t i = 0; s->page == page && i < s->n; i++, x = axi_link(page, x))
    if (x == b)
      axi_double_free("free", b);
  if (axi_list_has(page, axi_tf_list(ax_atomic_load_acquire(&page->thread_free)), b))
    axi_double_free("free", b);
  if (axi_mte) /* (blocks of other threads' chains may be live again, tagged: an untagged read */
    return;    /* of one would trap) */
  seek_t k = {page, b, false};
  axi_heap_foreach(seek_in, &k);
  if (k.found)
    axi_double_free("free", b);
}

/* b joins s's open chain, which it fills up to its limit. */
static inline void chain_append(ax_heap_t *heap, ax_remote_slot_t *s, ax_block_t *b) {
  axi_set_link(s->page, b, s->head);
  s->head = b;
  if (ax_unlikely(++s->n >= s->limit))
    return slot_publish(heap, s);
}

/* A thread that never allocated has no heap to keep chains in: its first frees go one by
 * one; one that keeps freeing (a consumer, a collector) gets a heap for its chains. */
static __thread uint32_t heapless_frees __attribute__((tls_model("initial-exec")));

static ax_heap_t *heap_for_chains(void) {
  if (++heapless_frees < AX_RB_HEAPLESS || axi_thread_exited)
    return NULL; /* (a thread in its last TSD destructors keeps no chains: pool.c) */
  ax_heap_t *heap = axi_heap_start(); /* (process init is done: a block was allocated) */
  if (heap)
    axi_heap_bind(heap);
  return heap;
}

/* Everything but an append to the chain of the last slot used: find p's slot; open a chain
 * there when the slot names the page already (its second free), else name the page in it,
 * publishing what the slot held, and publish b alone. A name may outlive its page (names
 * are only compared): a chain's limit is set when it opens. */
static AX_NOINLINE void free_slow(ax_block_t *b, ax_page_t *page, ax_segment_t *seg) {
  ax_heap_t *heap = axi_tls_heap;
  unsigned i = slot_of(page);
  if (axi_looks_free(page, b))
    check_freed(&heap->rb.slot[i], page, b);
  if (heap == &axi_heap_empty && !(heap = heap_for_chains()))
    return axi_remote_push(page, seg, 1, b, b);
  ax_remote_slot_t *s = &heap->rb.slot[i];
  if (s->page == page && s->n) { /* a chain, not the last used, or b looked free */
    heap->rb.last = i;
    return chain_append(heap, s, b);
  }
  uint32_t fit = (uint32_t)(AX_RB_BYTES / page->block_size);
  if (s->page == page && fit >= 2 && !axi_thread_exited) {
    /* (bigger blocks: little to gain, much to hold; a thread in its last TSD destructors
     * may not be called again to publish them: pool.c) */
    s->limit = fit < AX_RB_CHAIN ? fit : AX_RB_CHAIN;
    axi_set_link(page, b, NULL); /* the tail looks free too, to a second free of it */
    s->head = s->tail = b;
    s->n = 1;
    heap->rb.open |= (uint64_t)1 << i;
    heap->rb.last = i;
    return;
  }
  if (s->n)
    slot_publish(heap, s);
  s->page = page;
  heap->stats.remote_frees++;
  heap->stats.remote_publishes++;
  axi_remote_push(page, seg, 1, b, b);
}

/* The common case, without a call: b joins the open chain of the slot used last, which
 * holds blocks of its page (a consumer frees runs of blocks its producer carved in a row).
 * The empty heap's slots name no page, so a thread without a heap always falls through. */
void axi_remote_free(ax_block_t *b, ax_page_t *page, ax_segment_t *seg) {
  ax_heap_t *heap = axi_tls_heap;
  ax_remote_slot_t *s = &heap->rb.slot[heap->rb.last];
  if (ax_unlikely(s->page != page || s->n == 0 || axi_looks_free(page, b)))
    return free_slow(b, page, seg);
  chain_append(heap, s, b);
}

/* Publish every open chain (trim, refused mapping, exit); forget: and the pages the slots
 * name (trim: the next free into any page goes alone). pre: heap is the calling thread's. */
void axi_remote_flush(ax_heap_t *heap, bool forget) {
  for (uint64_t m = heap->rb.open; m; m &= m - 1)
    slot_publish(heap, &heap->rb.slot[__builtin_ctzll(m)]);
  for (unsigned i = 0; forget && i < AX_RB_SLOTS; i++)
    heap->rb.slot[i].page = NULL;
}

/* A fork child's handler, for a heap whose thread does not exist in the child: publish every
 * chain still open (n != 0: slot_publish closes a slot first), counted again from its head
 * to its tail, since the thread may have stopped between linking a block (chain_append) and
 * counting it. A chain whose links do not lead to its tail within its page is left (lost to
 * the child, never published wrong). */
void axi_remote_orphan(ax_heap_t *heap) {
  for (unsigned i = 0; i < AX_RB_SLOTS; i++) {
    ax_remote_slot_t *s = &heap->rb.slot[i];
    if (!s->n)
      continue;
    ax_page_t *page = s->page;
    ax_block_t *b = s->head;
    uint32_t n = 1;
    for (; b != s->tail && n <= AX_RB_CHAIN; n++) {
      b = axi_link(page, b);
      if ((uintptr_t)b - page->area >= axi_page_carved(page))
        break;
    }
    if (b == s->tail)
      axi_remote_push(page, axi_segment_of(page), n, s->head, s->tail);
    s->n = 0;
  }
  heap->rb.open = heap->rb.older = 0;
}

/* The thread's malloc refill: publish the chains that were open at its previous refill
 * already, so that no chain waits longer than two refills of a thread that allocates, and
 * one that a thread keeps adding to across a refill is not cut short. */
void axi_remote_age(ax_heap_t *heap) {
  for (uint64_t m = heap->rb.older & heap->rb.open; m; m &= m - 1)
    slot_publish(heap, &heap->rb.slot[__builtin_ctzll(m)]);
  heap->rb.older = heap->rb.open;
}
