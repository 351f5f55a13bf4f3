/* SPDX-License-Identifier: MIT */
/* Pages and the slow paths of malloc and free.
 *
 * A heap keeps, per size class, a queue of pages that may have free blocks; the first
 * page of a small class is also in heap->direct, which is where the malloc fast path
 * looks. When the fast path finds no free block it lands here: collect the blocks freed
 * since (local_free, and thread_free with one exchange), carve more of the page, move a
 * full page aside to the full list, or take a fresh page from a segment.
 */
#include <errno.h>
#include <string.h>

#include "page.h"

#include "bulk.h"
#include "hooks.h"
#include "huge.h"
#include "list.h"
#include "os.h"
#include "pagemap.h"
#include "print.h"
#include "remote.h"
#include "sample.h"
#include "segment.h"
#include "state.h"

/* ---- queues and the direct table ----------------------------------------------------- */

/* The first page of class c's queue is the class's current page: malloc's fast path finds
 * it in heap->direct, and it is pinned (used + 1, see ax_page_t), so that a free that
 * empties it stays on the fast path instead of leaving it to retire (a malloc/free loop
 * with one block live: 113 instructions per pair when each free took the slow path). A
 * pinned large page (one per segment, blocks of 128 KiB - 1 MiB) that stays empty for the
 * purge delay is retired all the same (retire_pinned_large): kept for good, one pinned its
 * dirty blocks (wl_bitset); not pinned, a 256 KiB malloc/free loop paid a clock read and
 * the page's retirement bookkeeping on every free (300 instructions per pair).
 * Call whenever the queue's first page may have changed. A page unpinned here has other
 * blocks live, or its caller is about to retire it. */
/* Unpin class c's current page, if any: its emptiness counts again. */
static void unpin(ax_heap_t *heap, unsigned c) {
  ax_page_t *page = heap->pinned[c];
  if (!page)
    return;
  page->pinned = 0;
  if (--page->used == 0) /* empty: trim (axi_pages_retire_empty) and retire_empty look */
    heap->empty_classes |= (uint64_t)1 << c;
  heap->pinned[c] = NULL;
}

static void current_update(ax_heap_t *heap, unsigned c) {
  if (ax_unlikely(axi_seams.current_leave != NULL)) /* the profiler: its grant ends here */
    axi_seams.current_leave(heap, c);
  ax_page_t *first = heap->queue[c].first;
  size_t hi = first ? first->block_size : axi_class_size(c); /* (a load, not a computation) */
  if (heap->pinned[c] != first) {
    unpin(heap, c);
    if (first) {
      first->pinned = 1;
      first->used++;
      first->retired_ms = 0; /* (large pages: empty since, see retire_pinned_large) */
      heap->pinned[c] = first;
      if (hi > AX_MEDIUM_MAX && !heap->next_retire_ms) /* a large page */
        heap->next_retire_ms = axi_now_ms() + axi_options.purge_delay_ms;
    }
  }
  /* checked mode, tagging: malloc always takes the slow path (check.c, mte.c) */
  ax_page_t *pg = first && !axi_slow_only() ? first : &axi_page_empty;
  heap->current[c] = pg;
  if (hi > AX_DIRECT_MAX)
    return;
  size_t lo = c == 1 ? 1 : axi_class_size(c - 1) + 1; /* direct[0]: always empty (zero.c) */
  for (size_t i = lo; i <= hi; i++)
    heap->direct[i] = pg;
  if (ax_unlikely(axi_seams.current_enter != NULL)) /* ... and a new one starts */
    axi_seams.current_enter(heap, c);
}

static void pageq_remove(ax_pageq_t *q, ax_page_t *page) {
  if (page->prev)
    page->prev->next = page->next;
  else
    q->first = page->next;
  if (page->next)
    page->next->prev = page->prev;
  else
    q->last = page->prev;
  page->next = page->prev = NULL;
}

static void pageq_push_front(ax_pageq_t *q, ax_page_t *page) {
  page->prev = NULL;
  page->next = q->first;
  if (q->first)
    q->first->prev = page;
  else
    q->last = page;
  q->first = page;
}

static void pageq_push_back(ax_pageq_t *q, ax_page_t *page) {
  page->next = NULL;
  page->prev = q->last;
  if (q->last)
    q->last->next = page;
  else
    q->first = page;
  q->last = page;
}

static void queue_remove(ax_heap_t *heap, ax_page_t *page) {
  bool was_first = heap->queue[page->cls].first == page;
  pageq_remove(&heap->queue[page->cls], page);
  if (was_first)
    current_update(heap, page->cls);
}

static void queue_push_front(ax_heap_t *heap, ax_page_t *page) {
  pageq_push_front(&heap->queue[page->cls], page);
  current_update(heap, page->cls);
}

static void queue_move_to_front(ax_heap_t *heap, ax_page_t *page) {
  ax_pageq_t *q = &heap->queue[page->cls];
  if (q->first == page)
    return;
  pageq_remove(q, page);
  pageq_push_front(q, page);
  current_update(heap, page->cls);
}

/* Add a page with live blocks to the back of its queue (reclaimed pages). */
void axi_page_queue_push(ax_heap_t *heap, ax_page_t *page) {
  pageq_push_back(&heap->queue[page->cls], page);
  if (heap->queue[page->cls].first == page)
    current_update(heap, page->cls);
}

/* ---- guarded sampling's countdown (types.h, ax_guard_heap_t; modes/guard.c takes the sample) */

/* n blocks of class c just went to the fast paths (left counted them down to <= 0): the index
 * among them of the class's guarded allocation, left + n (n: the first after them; <= 0: the
 * block the slow path under way hands out, or due since), or NOT_DUE when it is not among them
 * (the heap's first batch of the class, whose countdown is drawn here). */
#define NOT_DUE INT64_MIN
static int64_t guard_at(ax_heap_t *heap, unsigned c, uint32_t n) {
  ax_guard_heap_t *g = &heap->guard;
  if (!(g->drawn >> c & 1)) { /* (a heap starts at 0: undrawn) */
    axi_guard_draw(heap, c);
    if ((g->left[c] -= n) > 0)
      return NOT_DUE;
  }
  return g->left[c] + (int64_t)n;
}

/* The guarded allocation is at index at of the n blocks at the head of page's list. A direct
 * class's list is cut before it (the rest waits on local_free), so that the fast path runs dry
 * there and the slow path's refill finds the class due (left 0, then <= 0: hand_out_due). At
 * index 0 the malloc under way is the sample, when its caller can take it (hand_out_due,
 * axi_page_malloc, mid_take_due): left -1 says so, and a caller that cannot leaves it for the
 * class's next slow path. A cached class's next cache pop then misses (cache.h). */
static void guard_mark(ax_heap_t *heap, ax_page_t *page, int64_t at, uint32_t n) {
  unsigned c = page->cls;
  heap->guard.left[c] = at <= 0 ? -1 : 0;
  if (at < (int64_t)n && axi_class_direct(c) && page->free) /* (at 0: the next malloc, at 1) */
    axi_page_free_cut(page, at > 0 ? (uint64_t)at : 1);
}

static AX_NOINLINE void guard_due(ax_heap_t *heap, ax_page_t *page, uint32_t n) {
  int64_t at = guard_at(heap, page->cls, n);
  if (at != NOT_DUE)
    guard_mark(heap, page, at, n);
}

/* A sample was just taken off the list: the n blocks at the head of page's list, which the
 * malloc that took it left whole, go to the fast paths counted against the class's next
 * interval; when the next guarded one is among them, the list is cut before it (at index 0, the
 * next malloc's: every block waits on local_free), as guard_mark does for a malloc that takes
 * the list's first block. (guard.c after a sample on a short interval, and hand_out_due.) */
void axi_guard_after(ax_heap_t *heap, ax_page_t *page, uint32_t n) {
  unsigned c = page->cls;
  if ((heap->guard.left[c] -= n) > 0)
    return;
  int64_t at = heap->guard.left[c] + (int64_t)n;
  heap->guard.left[c] = 0;
  if (at < (int64_t)n && axi_class_direct(c) && page->free)
    axi_page_free_cut(page, (uint64_t)at);
}

/* n more blocks of page's class go to the fast paths (a refill, a carve, collected blocks, one
 * from local_free): two instructions on x86-64 when the guarded one is not among them. */
static inline void guard_count(ax_heap_t *heap, ax_page_t *page, uint32_t n) {
  if (ax_unlikely((heap->guard.left[page->cls] -= n) <= 0))
    guard_due(heap, page, n);
}

/* The sample, due now: guard.c's block, or NULL (no slot, sampling off, too big); the class's
 * next interval is drawn either way (without guard.c, in checked mode or with tagging, as
 * AXMALLOC_GUARD=0: a class looks again within 2^20 blocks). */
static void *guard_take(ax_heap_t *heap, size_t size, bool zero) {
  if (axi_seams.guard_take)
    return axi_seams.guard_take(heap, size, zero);
  axi_guard_draw(heap, axi_class_of(size));
  return NULL;
}

/* ---- collecting freed blocks --------------------------------------------------------- */

/* Statistics without a counter on the fast path: a page remembers how long its free
 * list was at the last refill, so blocks handed out = refill - current length. */
static uint32_t free_len(const ax_page_t *page) {
  uint32_t n = 0;
  for (const ax_block_t *b = page->free; b && n <= page->reserved; n++)
    b = axi_link(page, b);
  return n;
}

/* free_len of an empty page (used 0: every carved block is on free or on local_free), from
 * the two lists walked together until the shorter ends: a thread's exit finds long free lists
 * of cold blocks (wl_thread_churn on one CPU: the walk was 77% of the exit's time). */
static uint32_t free_len_empty(const ax_page_t *page) {
  const ax_block_t *f = page->free, *l = page->local_free;
  uint32_t n = 0;
  for (; f && l && n <= page->reserved; n++) {
    f = axi_link(page, f);
    l = axi_link(page, l);
  }
  return !f ? n : page->capacity - n; /* (else local_free held n: the rest are on free) */
}

/* Add the blocks handed out since the last refill to heap's statistics (and restart). */
void axi_page_count_mallocs(ax_heap_t *heap, ax_page_t *page) {
  uint32_t len = free_len(page);
  heap->stats.class_mallocs[page->cls] += page->refill - len;
  page->refill = len;
}

/* Take thread_free's blocks onto page->free with one exchange. The list's length comes
 * with it, so the walk to its tail stops there: a block pushed twice (remote.c catches
 * most) cannot send it round a cycle, and any other length is a corrupted list. Not walking
 * when free is empty (the list becomes free as it is) moved each block's cache miss into
 * malloc and was slower: wl_prodcons median 0.385 -> 0.505 s over 12 interleaved runs (the
 * walk runs down consecutive blocks, which the prefetcher follows). pre: the caller owns
 * the page. */
static void take_remote(ax_page_t *page) {
  uintptr_t tf = ax_atomic_xchg_acquire(&page->thread_free, 0);
  ax_block_t *head = axi_tf_list(tf), *tail = head;
  uint32_t n = axi_tf_len(tf);
  if (ax_unlikely(n == 0 || n > page->used))
    axi_corrupted_list(page, head);
  for (uint32_t i = 1; i < n; i++) {
    ax_block_t *next = axi_link(page, tail);
    if (ax_unlikely((uintptr_t)next - page->area >= axi_page_carved(page)))
      axi_corrupted_list(page, tail);
    tail = next;
  }
  if (ax_unlikely(axi_link(page, tail) != NULL))
    axi_corrupted_list(page, tail);
  axi_set_link(page, tail, page->free);
  page->free = head;
  page->used -= n;
  page->is_zero = 0;
  page->refill += n;
}

/* Move freed blocks to page->free: local_free when free is empty, and whatever other
 * threads pushed (one exchange for the whole list).
 * pre: the caller owns the page and the page is not in the full list. */
void axi_page_collect(ax_heap_t *heap, ax_page_t *page) {
  bool was_empty = !page->free;
  if (was_empty) {
    heap->stats.class_mallocs[page->cls] += page->refill; /* the whole list went out */
    page->refill = 0;
    if (axi_page_live(page) == 0 && page->capacity && !axi_checked) {
      /* Every block is back: start again in address order (page_extend carves what was
       * used before in one go). After random-order frees local_free is random, and walking
       * it made each malloc a cache and TLB miss (a loop allocating 200,000 blocks after
       * freeing the previous ones in random order: 40-48 ns per malloc, then 16-25 ns;
       * mimalloc 19-25). used == 0 also means nothing waits on thread_free. Not in
       * checked mode: re-carving would rewrite the free pattern of the whole page
       * (wl_churn 4x slower) instead of checking each block when it is handed out. */
      page->local_free = NULL;
      axi_page_set_capacity(page, 0); /* free() of a block of it is an invalid pointer */
      page->is_zero = 0;
      return;
    }
    if (page->local_free) { /* (local_free emptied first: see page_collect_all) */
      ax_block_t *lf = page->local_free;
      page->local_free = NULL;
      ax_compiler_fence();
      page->free = lf;
      page->is_zero = 0;
    }
  }
  uint32_t before = page->refill;
  /* While the process is single-threaded nobody can have pushed: not even a load. */
  if (!axi_remote_frees_impossible() && (ax_atomic_load_relaxed(&page->thread_free) & ~AX_TF_FULL))
    take_remote(page);
  if (was_empty && page->free)
    page->refill = page->capacity - axi_page_live(page); /* all not handed out is on free */
  if (page->refill > before)
    guard_count(heap, page, page->refill - before);
}

/* local_free joins free even when free is not empty (thread exit, trim). local_free is emptied
 * before its blocks join free, here and wherever they move: at every store a block is on one
 * list or (for a moment) on none, never on two, so that a fork child can take over a page that
 * a thread which does not exist there left half-moved (docs/design/10-lifecycle.md, "The fork child
 * model"). */
static void page_collect_all(ax_heap_t *heap, ax_page_t *page) {
  axi_page_collect(heap, page);
  if (page->local_free) {
    ax_block_t *lf = page->local_free, *tail = lf;
    uint32_t n = 1;
    for (ax_block_t *next; (next = axi_link(page, tail)); tail = next)
      n++;
    page->local_free = NULL;
    ax_compiler_fence();
    axi_set_link(page, tail, page->free);
    page->free = lf;
    page->is_zero = 0; /* freed blocks are dirty (found by fuzz/corpus/seed-24-trim_calloc) */
    page->refill += n;
    guard_count(heap, page, n);
  }
}

/* ---- full pages --------------------------------------------------------------------- */

/* The owner word of a page of heap's that is not in the full list: its thread id, with
 * AX_OWNER_CACHED for a class whose frees go to the heap's cache (cache.c), AX_OWNER_PROF
 * instead while the heap profiler samples. */
static uintptr_t owner_word(const ax_heap_t *heap, const ax_page_t *page) {
  if (!axi_class_cached(page->cls) || axi_slow_only())
    return heap->tid;
  return heap->tid | (axi_prof_on ? AX_OWNER_PROF : AX_OWNER_CACHED);
}

/* The page has no free block and nothing more to carve: park it in the full list so the
 * slow path stops looking at it. A remote free into it clears AX_TF_FULL and bumps
 * heap->full_pending; a local free sees AX_OWNER_FULL (free()'s owner compare fails) and
 * brings it back at once. */
static bool full_park(ax_heap_t *heap, ax_page_t *page) {
  uintptr_t expect = 0;
  if (!ax_atomic_cas_acq_rel(&page->thread_free, &expect, AX_TF_FULL))
    return false; /* a block just arrived */
  ax_atomic_store_relaxed(&page->xowner, owner_word(heap, page) | AX_OWNER_FULL);
  pageq_push_front(&heap->full, page);
  heap->full_count++;
  return true;
}

static void page_to_full(ax_heap_t *heap, ax_page_t *page) {
  queue_remove(heap, page);
  if (!full_park(heap, page))
    axi_page_queue_push(heap, page);
}

/* Take page out of the full list (its caller puts it in its queue). */
static void full_unpark(ax_heap_t *heap, ax_page_t *page) {
  pageq_remove(&heap->full, page);
  heap->full_count--;
  ax_atomic_store_relaxed(&page->xowner, owner_word(heap, page));
  ax_atomic_fetch_and_acq_rel(&page->thread_free, ~AX_TF_FULL);
}

/* The page joins the back of its queue: the page in front keeps serving, so a page that
 * gets one block back does not bounce to the front and out again (measured on larson:
 * half of all mallocs took the slow path with push-front). */
static void page_unfull(ax_heap_t *heap, ax_page_t *page) {
  full_unpark(heap, page);
  axi_page_queue_push(heap, page);
}

/* A local free brought page back from the full list. When the page in front has nothing
 * left to hand out, the two change places at once: that one is full, this one serves next.
 * Otherwise the next malloc would find it so, park it and walk to this one (a program that
 * frees one of many blocks at random and allocates another: every free lands in a full
 * page; bm_pairs/random 4 KiB, 1,024 live blocks: 450 instructions per pair before). */
static void page_unfull_local(ax_heap_t *heap, ax_page_t *page) {
  ax_pageq_t *q = &heap->queue[page->cls];
  ax_page_t *cur = q->first;
  if (!cur || cur->free || cur->local_free || cur->capacity < cur->reserved) {
    page_unfull(heap, page);
    return;
  }
  full_unpark(heap, page);
  pageq_remove(q, cur);
  pageq_push_front(q, page);
  if (!full_park(heap, cur))
    pageq_push_back(q, cur);
  current_update(heap, page->cls);
}

/* Bring back the full pages that remote frees have touched (AX_TF_FULL cleared). */
static void revisit_full(ax_heap_t *heap) {
  ax_atomic_xchg_acq_rel(&heap->full_pending, 0);
  for (ax_page_t *page = heap->full.first, *next; page; page = next) {
    next = page->next;
    if (ax_atomic_load_relaxed(&page->thread_free) != AX_TF_FULL)
      page_unfull(heap, page);
  }
}

/* ---- fresh pages -------------------------------------------------------------------- */

static void page_init(ax_page_t *page, unsigned c) {
  size_t bsize = axi_class_size(c);
  page->cls = (uint8_t)c;
  page->span_shift = (uint8_t)axi_class_span_shift(c);
  page->block_size = (uint32_t)bsize;
  page->reserved = (uint32_t)((axi_page_end(page) - page->area) / bsize);
  axi_page_set_divisor(page, (uint32_t)bsize);
  page->key = page->okey = axi_page_key(axi_random()); /* per page, from the random seed */
}

/* Carve about 4 KiB worth of untouched blocks (at least one) onto the free list:
 * touching a page of memory at a time keeps RSS and page faults proportional to use.
 * At least 8 blocks up to 1 KiB: with the 4 of 1 KiB that fit in 4 KiB, a malloc/free loop
 * with one other block live refilled from local_free every 3 pairs (79 instructions per
 * pair in pair.sh against 58 at 16 B); 8 is as many as local_usable lets a page hold and
 * still refill from local_free when every block is back.
 * One block at a time above 4 KiB: with 4, a vector regrown every round by doubling
 * realloc cycled through 4 untouched 512 KiB blocks (wl_strings: 10.5 MB peak RSS against
 * glibc's 5.3 MB), because a freed block waits on local_free while free still has blocks.
 * pre: page->free is empty and capacity < reserved. post: false when the OS refused to open
 * the memory (segment.c's guards): nothing was carved. */
static bool page_extend(ax_heap_t *heap, ax_page_t *page) {
  uint32_t n = page->reserved - page->capacity, max = 4096 / page->block_size;
  if (page->block_size <= AX_DIRECT_MAX && max < 8)
    max = 8;
  if (max < 1)
    max = 1;
  if (page->touched > page->capacity + max) /* memory used before: carve it all at once */
    max = page->touched - page->capacity;
  if (n > max)
    n = max;
  uintptr_t start = page->area + (uintptr_t)page->capacity * page->block_size;
  if (!axi_segment_open(axi_segment_of(page), start + (uintptr_t)n * page->block_size))
    return false;
  ax_block_t *b = (ax_block_t *)start;
  for (uint32_t i = 1; i < n; i++) {
    ax_block_t *next = (ax_block_t *)((uintptr_t)b + page->block_size);
    axi_set_link(page, b, next);
    b = next;
  }
  axi_set_link(page, b, NULL);
  if (ax_unlikely(axi_seams.carve != NULL)) /* checked mode */
    axi_seams.carve(page, (ax_block_t *)start, n);
  page->free = (ax_block_t *)start;
  axi_page_set_capacity(page, page->capacity + n);
  page->refill += n;
  guard_count(heap, page, n);
  if (page->touched < page->capacity)
    page->touched = page->capacity;
  return true;
}

/* Retire the empty pages that stayed empty for the purge delay (all of them if force),
 * except the last page of a class (unless force). Until then an empty page stays in its
 * queue with its free list whole, so a program that frees everything and allocates again
 * reuses it as it is: retiring at once re-carved every page and re-ran the slow path every
 * 4 KiB (wl_churn: 22,266 slow-path calls for 600,000 mallocs). */
static void retire_empty(ax_heap_t *heap, uint64_t now, bool force) {
  uint64_t keep = 0, next = 0;
  for (uint64_t mask = heap->empty_classes; mask; mask &= mask - 1) {
    unsigned c = (unsigned)__builtin_ctzll(mask);
    for (ax_page_t *page = heap->queue[c].first, *after; page; page = after) {
      after = page->next;
      bool last = page == heap->queue[c].first && !after;
      if (page->used != 0 || (!force && last && axi_class_kind(c) != AX_KIND_LARGE))
        continue;
      uint64_t due = page->retired_ms + axi_options.purge_delay_ms;
      if (force || due <= now) {
        queue_remove(heap, page);
        axi_page_count_mallocs(heap, page);
        axi_segment_page_retire(heap, page);
      } else {
        keep |= (uint64_t)1 << c;
        next = !next || due < next ? due : next;
      }
    }
  }
  heap->empty_classes = keep;
  heap->next_retire_ms = next;
}

/* The pinned page of each large class, seen empty at a tick, is stamped; seen empty again
 * a purge delay later, it is retired. post: when the next tick should look (0: never). */
static uint64_t retire_pinned_large(ax_heap_t *heap, uint64_t now) {
  uint64_t next = 0;
  for (unsigned c = axi_class_of(AX_MEDIUM_MAX + 1); c < AX_CLASSES; c++) {
    ax_page_t *page = heap->pinned[c];
    if (!page)
      continue;
    if (axi_page_live(page) != 0) {
      page->retired_ms = 0;
    } else if (!page->retired_ms) {
      page->retired_ms = now;
    } else if (now - page->retired_ms >= axi_options.purge_delay_ms) {
      queue_remove(heap, page); /* unpins it */
      axi_page_count_mallocs(heap, page);
      axi_segment_page_retire(heap, page);
      continue;
    }
    uint64_t due = now + axi_options.purge_delay_ms;
    next = !next || due < next ? due : next;
  }
  return next;
}

/* Retire the empty pages and purge the free memory whose delay has passed, if any waits:
 * the slow paths call it, and so do huge allocations and reallocs (heap.c, alloc.c), which
 * may be all a program does for a long time (wl_vecgrow: 16 vectors grown by mremap kept
 * the large pages their growth had left dirty until the end). */
void axi_page_purge_tick(ax_heap_t *heap) {
  if (axi_remote_sweep_tick(heap)) /* (one load while no batch waits) */
    for (int i = 0; i < 64 && axi_page_reclaim(heap); i++)
      ; /* (idle threads' batches went out: the abandoned segments they were in may empty) */
  axi_segment_purge_abandoned(false); /* (one load while none is due) */
  if (!heap->next_purge_ms && !heap->next_retire_ms)
    return;
  uint64_t now = axi_now_ms();
  if (heap->next_retire_ms && now >= heap->next_retire_ms) {
    retire_empty(heap, now, false);
    uint64_t large = retire_pinned_large(heap, now);
    if (large && (!heap->next_retire_ms || large < heap->next_retire_ms))
      heap->next_retire_ms = large;
  }
  if (heap->next_purge_ms && now >= heap->next_purge_ms) {
    axi_segment_purge(heap, false);
    axi_segment_cache_trim(AX_TRIM_DUE);
    axi_huge_cache_trim(AX_TRIM_DUE);
  }
}

/* A page of class c in heap's queue with a free block (moved to the front), or NULL. */
static ax_page_t *queue_find(ax_heap_t *heap, unsigned c) {
  ax_pageq_t *q = &heap->queue[c];
  for (ax_page_t *page = q->first, *next; page; page = next) {
    next = page->next;
    axi_page_collect(heap, page);
    if (!page->free && page->capacity < page->reserved)
      page_extend(heap, page);
    if (!page->free) {
      page_to_full(heap, page);
      continue;
    }
    queue_move_to_front(heap, page);
    return page;
  }
  return NULL;
}

static void drain_list(ax_heap_t *heap, ax_block_t *list, bool queued); /* (below) */

/* Take over one abandoned segment (segment.c): its pages with free blocks join heap's
 * queues, its empty pages are retired. post: true when a segment was taken (the caller
 * should look at its queues again). */
bool axi_page_reclaim(ax_heap_t *heap) {
  ax_segment_t *seg = axi_segment_adopt(heap);
  if (!seg)
    return false;
  for (unsigned i = 0; i < seg->npages; i++)
    if (seg->pages[i].in_use)
      ax_atomic_store_relaxed(&seg->pages[i].xowner, owner_word(heap, &seg->pages[i]));
  /* what other threads sent the segment while it was abandoned (remote.c); closed, so that
   * what they send now goes to our inbox, or alone onto thread_free (a sender that read no
   * heap before adopt set ours) */
  uintptr_t in = ax_atomic_xchg_acq_rel(&seg->inbox, AX_INBOX_CLOSED);
  if (in != 0 && in != AX_INBOX_CLOSED) {
    heap->stats.remote_drains++;
    drain_list(heap, (ax_block_t *)in, false);
  }
  unsigned live = seg->used_pages;
  for (unsigned i = 0; i < seg->npages && live; i++) {
    ax_page_t *page = &seg->pages[i];
    if (!page->in_use)
      continue;
    live--;
    ax_atomic_fetch_and_acq_rel(&page->thread_free, ~AX_TF_FULL);
    axi_page_collect(heap, page);
    if (page->used == 0) {
      page->free = page->local_free = NULL;
      if (axi_segment_page_retire_keep(heap, page))
        break; /* the segment went to the cache: another of the heap's has free pages */
    } else {
      heap->stats.adopted_bytes += (uint64_t)axi_page_live(page) * page->block_size;
      axi_page_queue_push(heap, page);
    }
  }
  return true;
}

/* post: a page of class c with a free block, first in its queue; NULL when out of memory.
 * Order: pages of the class, then abandoned segments (a few), then a fresh page. */
static ax_page_t *find_page(ax_heap_t *heap, unsigned c) {
  axi_page_drain(heap, false);
  /* A revisit walks the whole full list: do it when enough remote frees have landed in
   * full pages to pay for the walk, and always before taking a fresh page. */
  uintptr_t pending = ax_atomic_load_relaxed(&heap->full_pending);
  if (pending && pending * 16 >= heap->full_count)
    revisit_full(heap);
  ax_page_t *page = queue_find(heap, c);
  if (page)
    return page;
  if (ax_atomic_load_relaxed(&heap->full_pending)) {
    revisit_full(heap);
    if ((page = queue_find(heap, c)))
      return page;
  }
  axi_page_purge_tick(heap);
  enum ax_kind kind = axi_class_kind(c);
  for (int i = 0; i < 8 && !heap->segs[kind].first && axi_page_reclaim(heap); i++)
    if ((page = queue_find(heap, c)))
      return page;
  page = axi_segment_page_alloc(heap, kind);
  if (!page)
    return NULL;
  page_init(page, c);
  ax_atomic_store_relaxed(&page->xowner, owner_word(heap, page));
  if (!page_extend(heap, page)) {
    axi_segment_page_retire(heap, page); /* (the caller releases and retries: heap.c) */
    return NULL;
  }
  queue_push_front(heap, page);
  return page;
}

/* post: a page of class c with a free block, first in its queue (NULL: out of memory). */
ax_page_t *axi_page_with_free(ax_heap_t *heap, unsigned c) {
  ax_page_t *page = heap->queue[c].first;
  return page && page->free ? page : find_page(heap, c);
}

/* Take the first block of *list, one of page's free lists. pre: *list != NULL.
 * post: the block, its first word 0 (see heap_malloc). */
static inline ax_block_t *pop_from(ax_page_t *page, ax_block_t **list) {
  ax_block_t *b = *list;
  *list = axi_link(page, b);
  page->used++;
  AX_TRACK_UNDEFINED(b, sizeof *b);
  b->next_enc = 0;
  return b;
}

/* Take the first block of page->free (check.c validates the link before). */
ax_block_t *axi_page_pop(ax_page_t *page) { return pop_from(page, &page->free); }

/* malloc's most common miss: the current page's free list ran dry while the blocks the
 * program freed since the last refill wait on local_free. Take them, without the general
 * search (a malloc+free loop of 1 KiB blocks refills every 4 pairs: 180 instructions per
 * refill through find_page, 20 here). A page with remote frees waiting takes the general
 * way, and so does a heap with blocks in its inbox (remote.c), and one with every block back that
 * spans more than 4 KiB in more than 8 blocks: it restarts in address order (axi_page_collect).
 * Within one carve (4 KiB), or among a few big blocks, order costs nothing, and a malloc/free loop
 * with one live block finds its page empty at every refill (wl_oneblock: with every empty page
 * re-carved, a 64 KiB malloc/free pair cost 75 instructions more). post: true when page->free has
 * blocks again. */
static bool local_usable(const ax_page_t *page) {
  return page->local_free &&
         !(axi_page_live(page) == 0 && axi_page_carved(page) > 4096 && page->capacity > 8);
}

static inline __attribute__((always_inline)) bool refill_from_local(ax_heap_t *heap,
                                                                    ax_page_t *page) {
  if (!local_usable(page) ||
      (!axi_remote_frees_impossible() && (ax_atomic_load_relaxed(&page->thread_free) ||
                                          ax_atomic_load_relaxed(&heap->inbox) > AX_INBOX_CLOSED)))
    return false; /* (the general way takes them: find_page) */
  heap->stats.class_mallocs[page->cls] += page->refill; /* the whole list went out */
  ax_block_t *lf = page->local_free;                    /* (emptied first: see page_collect_all) */
  page->local_free = NULL;
  ax_compiler_fence();
  page->free = lf;
  page->is_zero = 0;
  page->refill = page->capacity - axi_page_live(page); /* all not handed out is on free */
  return true;
}

/* refill_from_local with guarded sampling's count of the refill (out of line for the general
 * way: the common one, axi_page_malloc_current, counts after it, so that the call it may make
 * is a tail call and its frame saves no register for it). */
static bool refill_local(ax_heap_t *heap, ax_page_t *page) {
  if (!refill_from_local(heap, page))
    return false;
  guard_count(heap, page, page->refill);
  return true;
}

/* Hand out page's first free block, zeroed if asked (size bytes of it).
 * pre: page->free != NULL. */
static void *hand_out(ax_page_t *page, size_t size, bool zero) {
  ax_block_t *b = axi_page_pop(page);
  AX_TRACK_MALLOC(b, page->block_size, zero && page->is_zero);
  if (zero && !page->is_zero)
    axi_bulk_zero(b, (size + 15) & ~(size_t)15);
  return b;
}

/* A refill of page's list (page->refill blocks) just counted reached its class's guarded
 * allocation. At index 0 it is this malloc's: the sample, and the list, whole, for the fast path
 * (counted against the next interval); else the list is cut before it (guard_mark). A frame of
 * its own, reached by a tail call (see refill_local). */
static AX_NOINLINE void *hand_out_due(ax_heap_t *heap, ax_page_t *page, size_t size, bool zero) {
  uint32_t n = page->refill;
  int64_t at = guard_at(heap, page->cls, n);
  if (at != NOT_DUE && at <= 0) { /* the list counts against the interval drawn */
    void *p = guard_take(heap, size, zero);
    if (p) {
      axi_guard_after(heap, page, n); /* (index 0: the next malloc's) */
      return p;
    }
    p = hand_out(page, size, zero); /* (no slot: the list's first block, then the rest) */
    axi_guard_after(heap, page, n - 1);
    return p;
  }
  if (at != NOT_DUE)
    guard_mark(heap, page, at, n);
  return hand_out(page, size, zero);
}

/* Sizes above the direct table: every malloc of them comes this way, so the blocks freed
 * since the last refill are handed out straight from local_free, the last freed first
 * (still in cache), instead of moving the list to free (a 4 KiB malloc/free pair with one
 * other block live refilled at every malloc: 132 instructions per pair). Remote frees wait
 * until local_free is empty. */
static inline __attribute__((always_inline)) void *mid_take(ax_heap_t *heap, unsigned c,
                                                            size_t size, bool zero) {
  ax_page_t *page = heap->current[c];
  if (ax_likely(page->free != NULL))
    return hand_out(page, size, zero);
  if (!local_usable(page))
    return NULL;
  ax_block_t *b = pop_from(page, &page->local_free);
  heap->stats.class_mallocs[page->cls]++; /* (not counted by refill: see free_len) */
  heap->guard.left[c]--;                  /* (a cache pop finds a count run out: mid_take_due) */
  AX_TRACK_MALLOC(b, page->block_size, 0);
  if (zero)
    axi_bulk_zero(b, (size + 15) & ~(size_t)15);
  return b;
}

/* A cached class's countdown ran out at this malloc's cache pop (cache.h), which missed: the
 * sample (the class's first malloc in the heap draws its countdown instead). A frame of its
 * own, reached by a tail call: malloc_current_mid saves no register for it. */
static AX_NOINLINE void *mid_take_due(ax_heap_t *heap, unsigned c, size_t size, bool zero) {
  void *p;
  if (!(heap->guard.drawn >> c & 1))
    axi_guard_draw(heap, c);
  else if ((p = guard_take(heap, size, zero)))
    return p;
  return mid_take(heap, c, size, zero);
}

static void *malloc_current_mid(ax_heap_t *heap, size_t size, bool zero) {
  unsigned c = axi_class_of(size);
  if (axi_class_cached(c) && heap->guard.left[c] < 0) /* (its cache pop ran the count out) */
    return mid_take_due(heap, c, size, zero);
  return mid_take(heap, c, size, zero);
}

/* The common case of malloc's slow path: a block from the current page of size's class,
 * which has one, or the blocks freed since the last refill (refill_local). pre: size <=
 * AX_LARGE_MAX. post: the block (zeroed if zero), or NULL: take the general way. */
void *axi_page_malloc_current(ax_heap_t *heap, size_t size, bool zero) {
  if (size > AX_DIRECT_MAX)
    return malloc_current_mid(heap, size, zero);
  ax_page_t *page = heap->direct[size];
  if (ax_likely(page->free != NULL))
    return hand_out(page, size, zero);
  if (!refill_from_local(heap, page))
    return NULL;
  if (ax_unlikely((heap->guard.left[page->cls] -= page->refill) <= 0))
    return hand_out_due(heap, page, size, zero);
  return hand_out(page, size, zero);
}

/* post: a block of at least size (<= AX_LARGE_MAX) bytes from heap's pages, zeroed if
 * zero; NULL when no page could be had (the OS refused a mapping: the caller decides what
 * to release, heap.c). */
void *axi_page_malloc(ax_heap_t *heap, size_t size, bool zero) {
  AX_HOOK(AX_HOOK_REFILL, heap);
  ax_page_t *page = heap->current[axi_class_of(size)];
  if (!refill_local(heap, page)) {
    page = axi_page_with_free(heap, axi_class_of(size));
    if (!page)
      return NULL;
  }
  void *p; /* (a sample due now: guard_mark) */
  if (ax_unlikely(heap->guard.left[page->cls] < 0) && (p = guard_take(heap, size, zero)))
    return p;
  return hand_out(page, size, zero);
}

/* ---- cutting and counting a free list (the heap profiler's grants: prof_grant.c) -------- */

/* The blocks on page's free list, counted up to max + 1: a count <= max is the length itself.
 * Every block carved and not live is on free or local_free (remote frees stay live until
 * collected), so with local_free empty, which it is after a refill, the count needs no walk;
 * otherwise it walks free, up to max + 1 blocks. */
uint64_t axi_page_free_count(const ax_page_t *page, uint64_t max) {
  if (!page->free)
    return 0;
  if (!page->local_free)
    return page->capacity - axi_page_live(page);
  uint64_t n = 0;
  for (const ax_block_t *b = page->free; b && n <= max; n++)
    b = axi_link(page, b);
  return n;
}

/* Cut page's free list to its first max blocks at most: the rest go to the front of local_free,
 * where the next refill finds them. A walk of max blocks when the list is longer, none when
 * local_free is empty and the list is short enough (the common refill). pre: the caller owns
 * page. post: the list's length now (<= max). */
uint32_t axi_page_free_cut(ax_page_t *page, uint64_t max) {
  uint64_t n = axi_page_free_count(page, max);
  if (n <= max)
    return (uint32_t)n;
  ax_block_t *last = NULL, *rest = page->free;
  for (uint64_t i = 0; i < max; i++)
    last = rest, rest = axi_link(page, rest);
  if (last)
    axi_set_link(page, last, NULL);
  else
    page->free = NULL;
  uint32_t moved = 1;
  ax_block_t *tail = rest;
  if (page->local_free) { /* (empty after most refills: no walk) */
    for (ax_block_t *next; (next = axi_link(page, tail)); tail = next)
      moved++;
    axi_set_link(page, tail, page->local_free);
  } else {
    moved = (uint32_t)(n - max);
  }
  page->local_free = rest;
  page->refill = page->refill > moved ? page->refill - moved : 0; /* (statistics) */
  return (uint32_t)max;
}

/* malloc's slow path on a page whose free list is empty, without looking elsewhere: refill the
 * list from the blocks freed since the last refill and hand out the first. pre: size <=
 * AX_DIRECT_MAX; page is heap's current page of size's class, its free list empty. post: the
 * block (zeroed if zero), or NULL with nothing changed (the general way takes the rest). */
void *axi_page_malloc_refilled(ax_heap_t *heap, ax_page_t *page, size_t size, bool zero) {
  if (!refill_from_local(heap, page))
    return NULL;
  if (ax_unlikely((heap->guard.left[page->cls] -= page->refill) <= 0))
    return hand_out_due(heap, page, size, zero);
  return hand_out(page, size, zero);
}

/* ---- the free slow path ------------------------------------------------------------- */

/* A local free just pushed a block of page, which is now empty or sat in the full list.
 * post: true when the page is empty and waits to retire (the caller may purge). */
static bool page_freed(ax_heap_t *heap, ax_page_t *page) {
  if (ax_atomic_load_relaxed(&page->xowner) & AX_OWNER_FULL)
    page_unfull_local(heap, page);
  if (page->used != 0)
    return false;
  /* An empty page waits in its queue for the purge delay (retire_empty), so that a
   * malloc/free loop does not thrash. The last page of a small or medium class stays for
   * good; a large page (one per segment, blocks of 128 KiB to 1 MiB) goes after the delay
   * even so: kept for good, it pinned its dirty blocks (wl_bitset: 1.8 MB for a bitset
   * regrown by doubling), and retired at once, a malloc/free loop of 256 KiB cost 10x
   * glibc's time (bm_pairs). */
  {
    ax_pageq_t *q = &heap->queue[page->cls];
    if (q->first == page && !page->next && axi_class_kind(page->cls) != AX_KIND_LARGE)
      return false;
    page->retired_ms = axi_now_ms(); /* empty since */
    heap->empty_classes |= (uint64_t)1 << page->cls;
    if (!heap->next_retire_ms)
      heap->next_retire_ms = page->retired_ms + axi_options.purge_delay_ms;
  }
  return true;
}

/* pre: the caller owns the page; b was just pushed on local_free and either the page is
 * now empty or it sat in the full list. (b first: free()'s fast path tail-calls this with
 * p still in the first argument's register.) */
void axi_free_slow(ax_block_t *b, ax_page_t *page) {
  ax_segment_t *seg = axi_segment_of(page);
  axi_segment_check_cookie(seg); /* the heap pointer below comes from the header */
  ax_heap_t *heap = (ax_heap_t *)ax_atomic_load_relaxed(&seg->heap);
  if (page_freed(heap, page))
    axi_page_purge_tick(heap);
}

/* A block goes back on its page's local_free, as its owner's free puts it, without the
 * queue bookkeeping: the cache of a heap whose thread does not exist in a fork child
 * (axi_cache_orphan), whose segments are abandoned next. */
void axi_page_return(ax_block_t *b) {
  ax_page_t *page = axi_page_of(axi_segment_of(b), b);
  axi_set_link(page, b, page->local_free);
  page->local_free = b;
  page->used--;
}

/* A page of a heap whose thread does not exist in a fork child, before its segment is
 * abandoned: no longer its class's current page (unpinned, as thread exit leaves it). */
void axi_page_orphan(ax_page_t *page) {
  page->used -= page->pinned;
  page->pinned = 0;
}

/* A block of heap's cache goes back to its page as a local free (cache.c). No purge here:
 * the caller may be walking its stacks. pre: heap owns the page. */
void axi_page_give_back(ax_heap_t *heap, ax_page_t *page, ax_block_t *b) {
  axi_set_link(page, b, page->local_free);
  page->local_free = b;
  if (--page->used == 0 || (ax_atomic_load_relaxed(&page->xowner) & AX_OWNER_FULL))
    page_freed(heap, page);
}

/* ---- blocks other threads sent (remote.c) ---------------------------------------------- */

/* A block of the inbox whose link is not in transit: taken already (reached twice: freed
 * twice while in transit), or written after it was freed. */
static AX_NOINLINE void drain_bad(const ax_page_t *page, const ax_block_t *b) {
  if (!page)
    axi_corrupted_transit(b);
  if (axi_looks_free(page, b))
    axi_double_free("free", b);
  axi_corrupted_list(page, b);
}

/* Give each block of list, in transit (remote.c), back to its page as a local free would put
 * it (the heap's cache is left out: the block is cold), with plain stores. Each block is
 * checked to be a carved block of a page before its link is read, and its link to be in
 * transit (each block is rewritten as it is taken, so one reached twice is a double free). A
 * block of a page that is not ours (its segment was abandoned, or reclaimed by another heap
 * after the sender read its owner) goes on that page's thread_free. queued: the pages are in
 * heap's queues (not: a segment being reclaimed, whose pages join them next). The walk reads
 * each block's first word once, as the peers' collections do; the block then sits on
 * local_free, in this thread's cache, for the malloc that takes it. */
static void drain_list(ax_heap_t *heap, ax_block_t *list, bool queued) {
  for (ax_block_t *b = list, *next; b; b = next) {
    ax_page_t *page = axi_pagemap_get(b);
    if (ax_unlikely(!page || axi_block_index(page, b) >= ax_peek(&page->capacity)))
      drain_bad(NULL, b);
    uintptr_t link = axi_transit(page, b);
    if (ax_unlikely(!(link & AX_TRANSIT)))
      drain_bad(page, b);
    next = (ax_block_t *)(link & ~AX_TRANSIT);
    uintptr_t owner = ax_atomic_load_relaxed(&page->xowner);
    if (ax_unlikely((owner & ~AX_OWNER_FLAGS) != heap->tid)) {
      heap->stats.remote_publishes++;
      axi_remote_push(page, axi_segment_of(page), 1, b, b);
      continue;
    }
    if (ax_unlikely(axi_page_live(page) == 0))
      axi_corrupted_list(page, b);
    axi_set_link(page, b, page->local_free);
    page->local_free = b;
    if ((--page->used == 0 || (owner & AX_OWNER_FULL)) && queued)
      page_freed(heap, page);
  }
}

/* Take heap's inbox with one exchange (close: and leave it closed, at thread exit) and give
 * its blocks back to their pages: no atomic per block. pre: heap is the calling thread's, or
 * the child of a fork is alone. */
void axi_page_drain(ax_heap_t *heap, bool close) {
  uintptr_t in;
  if (close)
    in = ax_atomic_xchg_acq_rel(&heap->inbox, AX_INBOX_CLOSED);
  else if (!ax_atomic_load_relaxed(&heap->inbox) || axi_remote_frees_impossible())
    return;
  else
    in = ax_atomic_xchg_acquire(&heap->inbox, 0);
  if (in == AX_INBOX_CLOSED || in == 0)
    return;
  heap->stats.remote_drains++;
  drain_list(heap, (ax_block_t *)in, true);
}

/* ---- heap-wide walks (heap.c: trim, refused mappings; lifecycle.c: thread exit) ---------- */

/* Retire every page of heap that is empty once remote frees are collected, pages in the
 * full list that remote frees reached included, in O(pages + remote frees): no free list is
 * walked (stress-ng's malloc stressor calls malloc_trim every 8th operation; walking them
 * made each trim cost 107,000 instructions there). The current page of a small or medium
 * class stays (it is pinned) unless all: the next malloc of that size would map it again
 * (axi_heap_release); a large class's goes too, when empty: it holds a segment (t_oom_cxx:
 * 6 of 125 blocks of 2 MiB). all (trim): every current page goes when empty. */
void axi_pages_retire_empty(ax_heap_t *heap, bool all) {
  /* Without remote frees a page is empty only where a free or an unpin left it so, and
   * empty_classes has its class: only those queues are walked (each page is a cache miss:
   * stress-ng's trims spent 65% of their samples loading descriptors of pages in use). */
  for (unsigned c = all ? 1 : axi_class_of(AX_MEDIUM_MAX + 1); c < AX_CLASSES; c++)
    unpin(heap, c);
  axi_page_drain(heap, false);
  /* a full page that no remote free has reached is not empty */
  if (ax_atomic_load_relaxed(&heap->full_pending))
    revisit_full(heap);
  uint64_t every = (~(uint64_t)0 >> (64 - AX_CLASSES)) & ~(uint64_t)1; /* (class 0: unused) */
  uint64_t visit = axi_remote_frees_impossible() ? heap->empty_classes : every;
  for (; visit; visit &= visit - 1) {
    unsigned c = (unsigned)__builtin_ctzll(visit);
    for (ax_page_t *page = heap->queue[c].first, *next; page; page = next) {
      next = page->next;
      axi_page_collect(heap, page);
      /* all: a page pinned when the one before it left goes too (leaving unpins it) */
      if ((all ? axi_page_live(page) : page->used) == 0) {
        queue_remove(heap, page);
        axi_page_count_mallocs(heap, page);
        axi_segment_page_retire(heap, page);
      }
    }
  }
  heap->empty_classes = 0; /* what is left is a current page: retire_empty keeps it too */
  heap->next_retire_ms = 0;
}

/* Unpin every class's current page (trim, thread exit): their emptiness counts again. */
static void unpin_all(ax_heap_t *heap) {
  for (unsigned c = 1; c < AX_CLASSES; c++)
    unpin(heap, c);
}

/* Collect every page of the heap; retire the empty ones (even the current one of a class,
 * which the next current_update pins again). */
void axi_pages_collect_all(ax_heap_t *heap) {
  unpin_all(heap);
  while (heap->full.first)
    page_unfull(heap, heap->full.first);
  ax_atomic_store_relaxed(&heap->full_pending, 0);
  for (unsigned c = 1; c < AX_CLASSES; c++) {
    for (ax_page_t *page = heap->queue[c].first, *next; page; page = next) {
      next = page->next;
      axi_page_collect(heap, page);
      if (axi_page_live(page) == 0) {
        /* empty: retired with its lists, not joined (their blocks are cold: a thread's exit
         * walked each freed block, 21% of wl_thread_churn's user time on one CPU) */
        heap->stats.class_mallocs[page->cls] += page->refill - free_len_empty(page);
        queue_remove(heap, page);
        axi_segment_page_retire(heap, page);
        continue;
      }
      page_collect_all(heap, page);
      axi_page_count_mallocs(heap, page);
    }
  }
  unpin_all(heap); /* retiring pages pinned the next ones: a heap that exits leaves none */
}
