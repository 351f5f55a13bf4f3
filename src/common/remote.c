/* SPDX-License-Identifier: MIT */
/* Remote frees: a block freed by a thread that does not own its page, batched per owning heap.
 *
 *   remote free(b, of a page whose segment names heap O):
 *     the slot used last names O, a batch open?  b joins it (no atomic); full: send it
 *     O's slot names O?                           b joins its batch, or opens one
 *     else                                        send what the slot held, name O in it,
 *                                                 and send b alone
 *   send(batch to O):  one CAS pushes the whole batch on O->inbox, whatever pages it spans
 *   O's slow path:     one exchange takes the inbox; each block goes back to its page with
 *                      plain stores (page.c, axi_page_drain)
 *
 * So a stream of remote frees to one owner costs one CAS per batch (AX_RB_COST: 171 blocks of
 * 64 B, 51 of 16..1024 B), scattered over its pages or not (Larson's servers, producers and
 * consumers, a collector), and a lone remote free, the first to an owner, costs one CAS as
 * before. A block of an abandoned segment (its thread exited: no heap) is batched for the
 * segment's own inbox, which the thread that reclaims the segment takes. A block sent to an
 * inbox that closed meanwhile goes alone onto its page's thread_free list, as every block of a
 * thread without heap does.
 *
 * Bounds: a batch is the freeing thread's until it is sent, and its blocks still count as used
 * in their pages, so no page or segment of them can go away meanwhile. A thread holds at most
 * AX_RB_SLOTS batches of AX_RB_COST (1 MiB of blocks; a page each at worst:
 * docs/design/05-remote.md, "Bounds"). A batch waits at most until its slot is wanted for another
 * owner, it fills, the thread's 2 * AX_RB_AGE_TICKS-th malloc slow path or the second batch it
 * fills after the batch opened (ageing, below), a trim, a refused mapping, or the thread's exit
 * (axi_remote_flush). A thread that stops calling the allocator does not keep them: another
 * thread's trim sends them for it, and so does a sweep once they stayed as they were for a
 * purge delay (steals, at the end: the thread's side is two plain stores).
 *
 * Double frees: every free that looks free asks axi_remote_seek whether the block waits in
 * any place a freed block waits (docs/design/05-remote.md, "Where a freed block waits").
 */
#include "remote.h"

#include "hooks.h"
#include "list.h"
#include "lock.h"
#include "os.h"
#include "pagemap.h"
#include "pool.h"
#include "print.h"
#include "segment.h"
#include "state.h"

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

/* The page of a block in transit that the caller holds (its segment is alive), or NULL when
 * b is no carved block of a page (a corrupted list, a fork child's half-made batch). */
static ax_page_t *transit_page(const ax_block_t *b) {
  ax_page_t *page = axi_pagemap_get(b);
  if (!page || axi_block_index(page, b) >= ax_peek(&page->capacity))
    return NULL;
  return page;
}

/* The block after b in transit, its page in *page: false when b is no carved block or its
 * link is not in transit (the walk must stop there). */
static bool transit_next(const ax_block_t *b, ax_page_t **page, ax_block_t **next) {
  *page = transit_page(b);
  uintptr_t link = *page ? axi_transit(*page, b) : 0;
  *next = (ax_block_t *)(link & ~AX_TRANSIT);
  return link & AX_TRANSIT;
}

/* Each block of list, in transit, goes alone onto its page's thread_free (an inbox that is
 * closed; a fork child's handler). Its link is read before its CAS, after which nothing
 * touches it. A link out of the pages ends the walk: the rest is lost, never published
 * wrong. */
static uint32_t scatter(ax_block_t *list) {
  uint32_t n = 0;
  ax_page_t *page;
  for (ax_block_t *b = list, *next; b && transit_next(b, &page, &next); b = next, n++)
    axi_remote_push(page, axi_segment_of(page), 1, b, b);
  return n;
}

/* A slot's key: the owning heap, or for a block of an abandoned segment (no heap) the
 * segment | 1: its own inbox, which the thread that reclaims it takes (page.c). */
#define AX_TO_SEGMENT ((uintptr_t)1)
static inline uintptr_t key_of(const ax_heap_t *owner, const ax_segment_t *seg) {
  return owner ? (uintptr_t)owner : (uintptr_t)seg | AX_TO_SEGMENT;
}

/* The inbox a key names. */
static ax_atomic_word *inbox_of(uintptr_t key) {
  return key & AX_TO_SEGMENT ? &((ax_segment_t *)(key & ~AX_TO_SEGMENT))->inbox
                             : &((ax_heap_t *)key)->inbox;
}

/* Send the batch head .. tail to key's inbox: one CAS (or, closed, block by block onto their
 * pages: the heap exited, the segment was reclaimed meanwhile). After the CAS the owner may
 * take the blocks, empty their pages and unmap their segments: nothing after it touches a
 * block, a page or a segment (t_race_remote stops a thread right there); the CAS itself is
 * on a heap, which is never unmapped (pool.c), or on the segment the blocks still kept
 * alive. post: the CASes that took (heap->stats.remote_publishes). */
static uint32_t send_to(uintptr_t key, ax_block_t *head, ax_block_t *tail) {
  ax_atomic_word *inbox = inbox_of(key);
  ax_page_t *tail_page = axi_page_of(axi_segment_of(tail), tail);
  uintptr_t in = ax_atomic_load_relaxed(inbox);
  do {
    if (in == AX_INBOX_CLOSED) {
      axi_set_transit(tail_page, tail, 0);
      return scatter(head);
    }
    axi_set_transit(tail_page, tail, in);
  } while (!ax_atomic_cas_release(inbox, &in, (uintptr_t)head));
  AX_HOOK(AX_HOOK_REMOTE_FREE_PUBLISHED, head);
  axi_remote_sweep_wanted(); /* (one load while a sweep is due already) */
  return 1;
}

/* The slot is closed before the CAS: a fork child publishes again what a thread that does
 * not exist there left open (axi_remote_orphan), and a batch caught between the two is lost
 * to it, not published twice. */
static AX_NOINLINE void slot_publish(ax_heap_t *heap, ax_remote_slot_t *s) {
  AX_HOOK(AX_HOOK_CHAIN_PUBLISH, s->head);
  uint32_t n = axi_rb_n(s->nb);
  uint64_t bit = (uint64_t)1 << (s - heap->rb.slot);
  s->nb = 0;
  heap->rb.open &= ~bit;
  heap->rb.older &= ~bit;
  ax_compiler_fence(); /* (closed in program order, before the CAS) */
  heap->stats.remote_publishes += send_to(s->to, s->head, s->tail);
  heap->stats.remote_frees += n;
}

/* The slot of a key: heaps are 64 B or more apart, segments 4 MiB. */
static inline unsigned slot_of(uintptr_t key) {
  uintptr_t h = (key >> 6) * (uintptr_t)0x9e3779b97f4a7c15u;
  return (unsigned)(h >> (64 - AX_RB_SLOTS_LOG2));
}

/* Is b among the first max blocks of the chain head, in transit (a batch, an inbox)? Each
 * block's page is looked up in the page map before its link is read, and the walk ends at a
 * link that is not in transit: another thread's batch or an inbox, read as it changes, is
 * walked safely while no segment is unmapped (axi_segments_hold: the caller). */
static bool chain_has(ax_block_t *head, uint32_t max, const ax_block_t *b) {
  ax_page_t *page;
  ax_block_t *x = head;
  for (uint32_t j = 0; j < max && x; j++) {
    if (x == b)
      return true;
    page = transit_page(x);
    AX_HOOK(AX_HOOK_SEEK_STEP, x); /* (its page found, its link not read yet) */
    uintptr_t link = page ? axi_transit(page, x) : 0;
    x = (ax_block_t *)(link & ~AX_TRANSIT);
    if (!(link & AX_TRANSIT))
      return false;
  }
  return false;
}

/* An inbox is unbounded: the seek walks this much of one (a second free of a block further
 * in is missed; the owner's drain still finds it if it is sent again). */
#define AX_SEEK_INBOX_MAX ((uint32_t)1 << 16)

/* A block that looks free, sought where other threads hold freed blocks: their batches to
 * its owner (or segment), the blocks they keep aside, their caches of its class. */
typedef struct seek {
  uintptr_t key;
  const ax_page_t *page;
  const ax_block_t *b;
  bool found;
} seek_t;

/* Other threads' batches and caches, read as they change: each field is one load, a batch is
 * walked at most as far as its count, a cached block is only compared. A stale read may miss
 * a double free; a false report would need a live block whose first word passes the filter
 * (2^-14) freed in the instant its slot or batch is being emptied. */
static void seek_in(ax_heap_t *heap, void *arg) {
  seek_t *k = arg;
  const ax_remote_slot_t *s = &heap->rb.slot[slot_of(k->key)];
  if (ax_peek(&s->to) == k->key) {
    uint32_t n = axi_rb_n(ax_peek(&s->nb));
    k->found |= chain_has(ax_peek_acquire(&s->head), n < AX_RB_BATCH ? n : AX_RB_BATCH, k->b);
  }
  k->found |= ax_peek(&heap->cache.aside) == k->b || axi_cache_has(heap, k->page->cls, k->b);
}

/* Is b, which looks free (axi_looks_free), waiting anywhere a freed block waits? On its page's
 * lists (free and local_free, the owner's, read as they change by any other thread;
 * thread_free), in transit (any thread's batch to its owner or segment, the inbox of that
 * owner or segment), or in a thread's cache or aside. The one double-free model of
 * docs/design/05-remote.md ("Where a freed block waits"): every free that looks free comes here,
 * the owner's (axi_double_free_check), a remote one's and a thread's without heap (check_freed).
 * The walks hold off every unmap (axi_segments_hold) and read each link only after the page
 * map named the block's page. Costs only a free that looks free: a double free, or one in 2^14
 * of the first words a program leaves. pre: b is a carved block of page, in seg. */
bool axi_remote_seek(ax_page_t *page, ax_segment_t *seg, const ax_block_t *b) {
  if (axi_mte)    /* (blocks of other threads' batches may be live again, tagged: an untagged */
    return false; /* read of one would trap; tagging finds double frees by the tag: mte.c) */
  ax_heap_t *owner = (ax_heap_t *)ax_atomic_load_relaxed(&seg->heap);
  if (owner && seg->cookie != ((uintptr_t)seg ^ axi_cookie_key))
    axi_corrupted(seg);
  seek_t k = {key_of(owner, seg), page, b, false};
  axi_segments_hold();
  k.found = axi_list_has(page, ax_peek(&page->free), b) ||
            axi_list_has(page, ax_peek(&page->local_free), b) ||
            axi_list_has(page, axi_tf_list(ax_atomic_load_acquire(&page->thread_free)), b);
  if (!k.found) {
    uintptr_t in = ax_atomic_load_acquire(inbox_of(k.key));
    k.found = in != AX_INBOX_CLOSED && chain_has((ax_block_t *)in, AX_SEEK_INBOX_MAX, b);
  }
  if (!k.found)
    axi_heap_foreach(seek_in, &k);
  axi_segments_release();
  return k.found;
}

/* A remote free of b, which looks free: is it free already? Then this is a double free,
 * reported here, naming the block (fn: the call that freed it). */
static void check_freed(const char *fn, ax_page_t *page, ax_segment_t *seg, const ax_block_t *b) {
  if (axi_remote_seek(page, seg, b))
    axi_double_free(fn, b);
}

static void age(ax_heap_t *heap);

static inline void rb_leave(ax_heap_t *heap);

/* A batch that fills ages the others: a thread that only frees (a consumer, a collector)
 * bounds the wait of its other batches too. Then the thread leaves its batches (below). */
static AX_NOINLINE void slot_full(ax_heap_t *heap, ax_remote_slot_t *s) {
  slot_publish(heap, s);
  age(heap);
  rb_leave(heap);
}

/* b, of page, joins s's open batch. post: true when the batch is full (slot_full next). */
static inline bool batch_append(ax_remote_slot_t *s, ax_block_t *b, const ax_page_t *page) {
  axi_set_transit(page, b, (uintptr_t)s->head);
  s->head = b;
  s->nb += AX_RB_ONE + page->block_size;
  return ax_unlikely((uint32_t)s->nb >= AX_RB_COST);
}

/* A thread that never allocated has no heap to keep batches in: its first frees go one by
 * one; one that keeps freeing (a consumer, a collector) gets a heap for its batches. */
static __thread uint32_t heapless_frees __attribute__((tls_model("initial-exec")));

static ax_heap_t *heap_for_chains(void) {
  if (++heapless_frees < AX_RB_HEAPLESS || axi_thread_exited)
    return NULL; /* (a thread in its last TSD destructors keeps no batches: pool.c) */
  ax_heap_t *heap = axi_heap_start(); /* (process init is done: a block was allocated) */
  if (heap)
    axi_heap_bind(heap);
  return heap;
}

/* ---- the thread's side of a steal ------------------------------------------------------ *
 * Another thread may send this thread's batches for it while it is not in them (a trim, a
 * sweep: below). The thread's side is two plain stores around everything it does with its
 * batches, rb_busy set first and cleared last, and one read of rb_last between: a stealer that sets
 * rb_last to AX_RB_STOLEN and then makes every running thread pass a full barrier (membarrier:
 * axi_os_barrier) either sees busy set or is seen, by the thread's next read of rb_last. So the
 * fast path pays no fence. The slot AX_RB_STOLEN names never has a batch: the fast path falls
 * through to free_slow, which gives the block alone to its page while the steal is on. */
/* Plain accesses, the compiler kept in order by its fences: an atomic one would be a
 * base-register-only instruction on AArch64 (one more each), and a release store too. The
 * stealer that reads busy clear makes every thread pass a second barrier before it reads the
 * slots, so that the stores made before the clear are seen. */
static inline bool rb_enter(ax_heap_t *heap) {
  heap->rb_busy = 1;
  ax_compiler_fence();
  return heap->rb_last != AX_RB_STOLEN;
}
static inline void rb_leave(ax_heap_t *heap) {
  ax_compiler_fence();
  heap->rb_busy = 0;
}

/* Everything but an append to the batch of the last slot used: find the key's slot; open a
 * batch there when the slot names the key already (its second free), else name the key in
 * it, sending what the slot held, and send b alone. A name may outlive its heap's thread or
 * its page (names are only compared; heaps are never unmapped: pool.c). pre: busy set. */
static void free_slow_in(ax_block_t *b, ax_page_t *page, ax_segment_t *seg) {
  ax_heap_t *heap = axi_tls_heap;
  ax_heap_t *owner = (ax_heap_t *)ax_atomic_load_relaxed(&seg->heap);
  if (owner && seg->cookie != ((uintptr_t)seg ^ axi_cookie_key))
    axi_corrupted(seg); /* (an overflow must not make a CAS on any address it likes) */
  uintptr_t key = key_of(owner, seg);
  if (axi_looks_free(page, b))
    check_freed("free", page, seg, b);
  if (heap == &axi_heap_empty && !(heap = heap_for_chains()))
    return axi_remote_push(page, seg, 1, b, b);
  if (ax_unlikely(!rb_enter(heap))) /* (again: a heap just started for a thread without one) */
    return axi_remote_push(page, seg, 1, b, b); /* (another thread sends our batches now) */
  unsigned i = slot_of(key);
  ax_remote_slot_t *s = &heap->rb.slot[i];
  if (s->to == key && s->nb) { /* a batch, not the last used, or b looked free */
    heap->rb_last = i;
    if (batch_append(s, b, page))
      slot_full(heap, s);
    return;
  }
  axi_set_transit(page, b, 0); /* the tail looks free too, to a second free of it */
  if (s->to == key && !axi_thread_exited) {
    /* (a thread in its last TSD destructors may not be called again to send: pool.c) */
    s->head = s->tail = b;
    s->nb = AX_RB_ONE + page->block_size;
    heap->rb.open |= (uint64_t)1 << i;
    heap->rb_last = i;
    if ((uint32_t)s->nb >= AX_RB_COST)
      slot_publish(heap, s);
    else
      axi_remote_sweep_wanted();
    return;
  }
  if (s->nb)
    slot_publish(heap, s);
  s->to = key;
  heap->stats.remote_frees++;
  heap->stats.remote_publishes += send_to(key, b, b);
}

static AX_NOINLINE void free_slow(ax_block_t *b, ax_page_t *page, ax_segment_t *seg) {
  ax_heap_t *heap = axi_tls_heap;
  free_slow_in(b, page, seg);
  rb_leave(heap);
  if (axi_tls_heap != heap) /* (the heap free_slow_in started for a thread without one) */
    rb_leave(axi_tls_heap);
}

/* The common case, without a call: b joins the open batch of the slot used last, which
 * goes to its owner (a consumer frees the blocks of one producer, a server's thread those
 * of the other). The empty heap's slots name nothing, so a thread without a heap always
 * falls through; so does a block of an abandoned segment (its slot's key is seg | 1), and
 * every free while another thread sends this one's batches (rb_last is AX_RB_STOLEN). */
void axi_remote_free(ax_block_t *b, ax_page_t *page, ax_segment_t *seg) {
  ax_heap_t *heap = axi_tls_heap;
  ax_heap_t *owner = (ax_heap_t *)ax_atomic_load_relaxed(&seg->heap);
  heap->rb_busy = 1; /* (rb_enter, with the test folded into the slot's) */
  ax_compiler_fence();
  ax_remote_slot_t *s = &heap->rb.slot[heap->rb_last];
  __asm__("" : "+r"(s)); /* (one base for the slot's fields: gcc 12 made a second, 3 more) */
  if (ax_unlikely(s->to != (uintptr_t)owner || s->nb == 0 || axi_looks_free(page, b)))
    return free_slow(b, page, seg);
  if (batch_append(s, b, page))
    return slot_full(heap, s);
  rb_leave(heap);
}

/* Send every open batch (trim, refused mapping, exit); forget: and the keys the slots
 * name (trim: the next free to any owner goes alone). A steal on sends them already. pre:
 * heap is the calling thread's. */
void axi_remote_flush(ax_heap_t *heap, bool forget) {
  if (rb_enter(heap)) {
    for (uint64_t m = heap->rb.open; m; m &= m - 1)
      slot_publish(heap, &heap->rb.slot[__builtin_ctzll(m)]);
    for (unsigned i = 0; forget && i < AX_RB_SLOTS; i++)
      heap->rb.slot[i].to = 0;
  }
  rb_leave(heap);
}

/* The thread exits: a steal on ends first, none starts after (steal EXITING until a thread
 * takes the heap again: pool.c), then every batch is sent. The wait is a stealer's sends (a
 * few CASes): spin briefly, then sleep on the word (a futex). pre: heap is the calling thread's. */
void axi_remote_exit(ax_heap_t *heap) {
  for (unsigned spins = 0;; spins++) {
    uintptr_t expect = AX_STEAL_FREE;
    if (ax_atomic_cas_acq_rel(&heap->steal, &expect, AX_STEAL_EXITING) ||
        expect == AX_STEAL_EXITING)
      break;
    if (spins < 256)
      ax_arch_pause();
    else /* (the stealer wakes us when it gives the word back: steal_round) */
      axi_os_wait(&heap->steal, AX_STEAL_ON, 10);
  }
  axi_remote_flush(heap, true);
}

/* A fork child's handler, for a heap whose thread does not exist in the child: send every
 * batch still open (n != 0: slot_publish closes a slot first), counted again from its head to
 * its tail, since the thread may have stopped between linking a block (batch_append) and
 * counting it; a batch whose links do not lead to its tail is left (lost to the child, never
 * published wrong). Then the heap's inbox is closed, and what it held goes to the blocks'
 * pages (the segments are abandoned next: their reclaimers take it). pre: the child is
 * alone. */
void axi_remote_orphan(ax_heap_t *heap) {
  for (unsigned i = 0; i < AX_RB_SLOTS; i++) {
    ax_remote_slot_t *s = &heap->rb.slot[i];
    if (!s->nb || !s->to)
      continue;
    ax_page_t *page;
    ax_block_t *b = s->head, *next;
    for (uint32_t n = 1; b != s->tail && n <= AX_RB_BATCH && transit_next(b, &page, &next); n++)
      b = next;
    if (b == s->tail && transit_page(b))
      heap->stats.remote_publishes += send_to(s->to, s->head, s->tail);
    s->nb = 0;
  }
  heap->rb.open = heap->rb.older = 0;
  ax_atomic_store_relaxed(&heap->steal, AX_STEAL_EXITING); /* (back in the pool next) */
  uintptr_t in = ax_atomic_xchg_acq_rel(&heap->inbox, AX_INBOX_CLOSED);
  if (in != AX_INBOX_CLOSED)
    scatter((ax_block_t *)in);
}

/* Send the batches that were open at the previous ageing already, so that no batch waits
 * longer than two, and one that a thread keeps adding to across one is not cut short. */
static void age(ax_heap_t *heap) {
  for (uint64_t m = heap->rb.older & heap->rb.open; m; m &= m - 1)
    slot_publish(heap, &heap->rb.slot[__builtin_ctzll(m)]);
  heap->rb.older = heap->rb.open;
  heap->rb.ticks = 0;
}

/* The thread's malloc slow path, while a batch is open: every AX_RB_AGE_TICKS-th ages. (Each
 * one aged at first: a thread that allocates mid-size blocks, which all take the slow path,
 * or many classes, cut its batches to 15 blocks on the scattered Larson pattern.) */
void axi_remote_age(ax_heap_t *heap) {
  if (rb_enter(heap) && ++heap->rb.ticks >= AX_RB_AGE_TICKS)
    age(heap);
  rb_leave(heap);
}

/* ---- steals: another thread sends the batches of a thread that is not in them ----------- *
 * A batch waits for its own thread (above); a thread that frees other threads' blocks and
 * then goes idle (a pool worker, a consumer gone quiet) would keep them, and every page and
 * segment they are in, until it exits. So a trim (any thread's malloc_trim) sends every
 * other thread's open batches, and a sweep (every purge delay, from any thread's slow path)
 * those that did not change since the last sweep. The stealer: the heap's steal word ON (one
 * stealer per heap; never while its thread exits), rb_last AX_RB_STOLEN, one barrier on every
 * running thread (axi_os_barrier, for up to AX_STEAL_ROUND heaps at once), then busy read:
 * clear, and rb_last still AX_RB_STOLEN, the thread is not in its batches and cannot enter
 * them (rb_enter) until rb_last is given back. Without membarrier (an old kernel, a seccomp
 * filter) nothing is stolen: remote.steal reads "off" (ax_ctl). */
#define AX_STEAL_ROUND 64
static ax_lock_t sweep_lock;       /* one stealer at a time; fork's prepare handler takes it */
static ax_atomic_word sweep_due;   /* ms: the next sweep; 0 while no batch was opened since */
static ax_atomic_word sweep_count; /* sweeps made (ax_ctl: stats.remote_sweeps) */

/* A batch was opened, or blocks sent to an inbox: a sweep comes within a purge delay. */
void axi_remote_sweep_wanted(void) {
  if (!ax_atomic_load_relaxed(&sweep_due))
    ax_atomic_store_relaxed(&sweep_due, axi_now_ms() + ax_peek(&axi_options.purge_delay_ms) + 1);
}

/* What a sweep sees of heap's batches: their mask and heads (every free into one moves its
 * head). Racy reads, one load each. */
static uint64_t batches_seen(const ax_heap_t *heap) {
  uint64_t open = ax_peek(&heap->rb.open), seen = open;
  for (uint64_t m = open; m; m &= m - 1)
    seen = seen * 0x9e3779b97f4a7c15u + (uintptr_t)ax_peek(&heap->rb.slot[__builtin_ctzll(m)].head);
  return seen;
}

/* Send heap's open batches for its thread. pre: heap's steal ON, its thread out of its
 * batches and kept out (rb_last AX_RB_STOLEN). post: the batches sent. */
static void steal_from(ax_heap_t *heap) {
  uint64_t blocks = 0, publishes = 0, batches = 0;
  for (uint64_t m = heap->rb.open; m; m &= m - 1, batches++) {
    ax_remote_slot_t *s = &heap->rb.slot[__builtin_ctzll(m)];
    blocks += axi_rb_n(s->nb);
    s->nb = 0;
    ax_compiler_fence(); /* (closed before the CAS: as slot_publish) */
    publishes += send_to(s->to, s->head, s->tail);
  }
  /* (atomic stores, one plain store each: the holder's malloc peeks at open, which TSan would
   * take for a race with a stealer whose stack it could not restore) */
  ax_poke(&heap->rb.open, 0);
  ax_poke(&heap->rb.older, 0);
  ax_atomic_fetch_add_relaxed(&axi_stats.remote_frees, blocks);
  ax_atomic_fetch_add_relaxed(&axi_stats.remote_publishes, publishes);
  ax_atomic_fetch_add_relaxed(&axi_stats.remote_steals, batches);
}

/* An inbox whose head did not move since the last sweep: its owner has not taken it for a
 * whole delay (idle, or a heap a new thread took over while other threads' batches were
 * still keyed by it, with blocks of pages that a third thread has since reclaimed). It is
 * taken as the owner would take it (a CAS from the head seen to empty: never a closed one)
 * and each block goes alone to its page's thread_free, where whoever owns the page finds it.
 * post: true when it was taken. */
static bool forward_idle_inbox(ax_heap_t *heap) {
  uintptr_t in = ax_atomic_load_acquire(&heap->inbox), before = heap->swept_in;
  heap->swept_in = in;
  if (in == 0 || in == AX_INBOX_CLOSED || in != before ||
      !ax_atomic_cas_acq_rel(&heap->inbox, &in, 0))
    return false;
  heap->swept_in = 0;
  uint32_t n = scatter((ax_block_t *)in);
  ax_atomic_fetch_add_relaxed(&axi_stats.remote_publishes, n);
  ax_atomic_fetch_add_relaxed(&axi_stats.remote_steals, 1);
  return true;
}

/* One round: up to AX_STEAL_ROUND heaps from h on marked, one barrier, each stolen from if
 * its thread is out (counted in *stolen, with the idle inboxes forwarded). post: the heap
 * to start the next round from. */
static ax_heap_t *steal_round(ax_heap_t *h, const ax_heap_t *self, bool all, unsigned *stolen) {
  ax_heap_t *got[AX_STEAL_ROUND];
  uint32_t last[AX_STEAL_ROUND];
  unsigned n = 0;
  for (; h && n < AX_STEAL_ROUND; h = h->all_next) {
    if (h == self || !ax_peek(&h->active))
      continue;
    *stolen += forward_idle_inbox(h);
    if (!axi_os_barrier_available() || !ax_peek(&h->rb.open))
      continue; /* (without membarrier only idle inboxes are taken: a CAS needs no barrier) */
    uint64_t seen = batches_seen(h), before = h->swept;
    h->swept = seen;
    uintptr_t expect = AX_STEAL_FREE;
    if ((!all && seen != before) || !ax_atomic_cas_acq_rel(&h->steal, &expect, AX_STEAL_ON))
      continue;
    last[n] = ax_peek(&h->rb_last);
    ax_poke(&h->rb_last, AX_RB_STOLEN);
    got[n++] = h;
  }
  bool barrier = n && axi_os_barrier(), out[AX_STEAL_ROUND], any = false;
  for (unsigned i = 0; i < n; i++) {
    ax_heap_t *v = got[i];
    out[i] = barrier && !ax_peek(&v->rb_busy) && ax_peek(&v->rb_last) == AX_RB_STOLEN;
    any |= out[i];
  }
  /* A second barrier: the stores of each thread seen out, made before it cleared busy, are
   * seen now (it cleared busy without a release: rb_leave). */
  any = any && axi_os_barrier();
  for (unsigned i = 0; i < n; i++) {
    ax_heap_t *v = got[i];
    if (any && out[i]) {
      steal_from(v);
      v->swept = 0;
      ++*stolen;
    }
    if (ax_peek(&v->rb_last) == AX_RB_STOLEN) /* (else its thread moved it: a valid slot) */
      ax_poke_release(&v->rb_last, last[i]);
    ax_atomic_store_release(&v->steal, AX_STEAL_FREE);
    axi_os_wake(&v->steal, UINT32_MAX); /* (its thread may wait to exit: axi_remote_exit) */
  }
  return h;
}

/* Send other threads' open batches (all: a trim), or those that did not change since the last
 * sweep (a sweep). Never waits: a steal or sweep on elsewhere makes this one return. post: the
 * heaps whose batches were sent. */
unsigned axi_remote_steal(const ax_heap_t *self, bool all) {
  unsigned stolen = 0;
  if (!axi_trylock(&sweep_lock))
    return 0;
  ax_atomic_fetch_add_relaxed(&sweep_count, 1);
  for (ax_heap_t *h = axi_heap_all(); h;)
    h = steal_round(h, self, all, &stolen);
  axi_unlock(&sweep_lock);
  return stolen;
}

/* Every 64th slow path of a thread, while a batch opened since the last sweep: the sweep is
 * due once a purge delay has passed since (any thread's), and then the next one, so that a
 * batch that stays as it is through one whole delay is sent by the second sweep after it
 * opened, at most two delays and 64 slow paths of some thread later. post: true when some
 * thread's batches were sent (the caller takes over abandoned segments they may empty). */
bool axi_remote_sweep_tick(ax_heap_t *heap) {
  uintptr_t due = ax_atomic_load_relaxed(&sweep_due);
  if (!due || heap == &axi_heap_empty || axi_thread_exited || (++heap->sweep_ticks & 63))
    return false; /* (not the empty heap, a realloc's in a thread without one; not a heap
                   * whose thread exits: it would take segments over only to abandon them) */
  uint64_t now = axi_now_ms();
  if (now < due || !ax_atomic_cas_acq_rel(&sweep_due, &due, 0))
    return false;
  unsigned stolen = axi_remote_steal(heap, false);
  /* (again a delay on while a batch is open anywhere; a batch opened meanwhile set it) */
  for (ax_heap_t *h = axi_heap_all(); h; h = h->all_next)
    if (ax_peek(&h->active) && (ax_peek(&h->rb.open) || ax_atomic_load_relaxed(&h->inbox) > 1)) {
      axi_remote_sweep_wanted();
      break;
    }
  return stolen != 0;
}

const char *axi_remote_steal_mode(void) {
  return axi_os_barrier_available() ? "membarrier" : "off";
}
uint64_t axi_remote_sweeps(void) { return ax_atomic_load_relaxed(&sweep_count); }

void axi_remote_fork_prepare(void) { axi_lock_for_fork(&sweep_lock); }
void axi_remote_fork_release(void) { axi_unlock_after_fork(&sweep_lock); }
