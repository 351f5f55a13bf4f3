/* SPDX-License-Identifier: MIT */
/* Heap validation for the tests (AX_TEST_HOOKS builds only, hooks.h): every structure of the
 * allocator walked and cross-checked, while no other thread is inside the allocator.
 *
 *   - the empty heap (the one of threads without a heap of their own) holds nothing: no cached
 *     block, no chain, no page;
 *   - heaps in use have distinct thread ids; every page in their queues and full lists is
 *     theirs, in use, of its queue's class, and every page in use of theirs is in one of them;
 *   - every segment of the segment map has a valid header, belongs to a heap in use or to none
 *     (abandoned, cached), and counts its pages in use right; every page in use has an owner
 *     word of its heap's thread id (0 for none) and lists (free, local_free, thread_free) of
 *     blocks it has carved, no block twice, thread_free as long as its word says;
 *   - every block a heap holds outside its page (its cache, the block aside, its open batches
 *     of remote frees, its inbox) is a carved block of a page in use, on none of its page's
 *     lists, held once;
 *   - a page's count: used - pinned == capacity - |free| - |local_free|.
 * A problem is printed as `axmalloc: validate: ...`; ax_test_validate returns how many.
 */
#include <stdlib.h>

#include "hooks.h"
#include "list.h"
#include "os.h"
#include "pagemap.h"
#include "pool.h"
#include "print.h"
#include "segment.h"
#include "state.h"

#if AX_TEST_HOOKS

static unsigned problems;
static bool show_pages; /* AX_VALIDATE_PAGES=1: every page in use printed */
#define BAD(fmt, ...) (problems++, axi_write("axmalloc: validate: " fmt "\n", ##__VA_ARGS__))

/* ---- the heaps in use, and what they hold outside their pages ---------------------------- */

typedef struct heap_info {
  ax_heap_t *heap;
  unsigned queued; /* pages reached through its queues and full list */
  unsigned found;  /* pages in use of its segments */
} heap_info_t;

static heap_info_t *heaps;
static unsigned nheaps, heaps_cap;
static uintptr_t *held; /* blocks held outside their pages, sorted */
static size_t nheld, held_cap;

static void count_heap(ax_heap_t *heap, void *arg) {
  (void)heap;
  (*(unsigned *)arg)++;
}

static void add_heap(ax_heap_t *heap, void *arg) {
  (void)arg;
  if (nheaps < heaps_cap)
    heaps[nheaps++] = (heap_info_t){heap, 0, 0};
}

static heap_info_t *info_of(uintptr_t heap) {
  for (unsigned i = 0; i < nheaps; i++)
    if ((uintptr_t)heaps[i].heap == heap)
      return &heaps[i];
  return NULL;
}

static void hold(uintptr_t b) {
  if (nheld < held_cap)
    held[nheld++] = b;
  else
    BAD("more held blocks than counted");
}

/* The next block of b, in transit (a batch, an inbox), or NULL at the end or at a bad link. */
static const ax_block_t *transit_next(const ax_heap_t *heap, const ax_block_t *b,
                                      const char *what) {
  const ax_page_t *page = axi_pagemap_get(b);
  if (!page || axi_block_index(page, b) >= page->capacity) {
    BAD("heap %p: %s holds %p, not a carved block", (void *)heap, what, (const void *)b);
    return NULL;
  }
  uintptr_t link = axi_transit(page, b);
  if (!(link & AX_TRANSIT)) {
    BAD("heap %p: %s holds %p, whose link is not in transit", (void *)heap, what, (const void *)b);
    return NULL;
  }
  return (const ax_block_t *)(link & ~AX_TRANSIT);
}

#define MAX_INBOX ((size_t)1 << 24)

static const ax_block_t *inbox_of(const ax_heap_t *heap) {
  uintptr_t in = ax_atomic_load_relaxed(&heap->inbox);
  return in == AX_INBOX_CLOSED ? NULL : (const ax_block_t *)in;
}

static size_t held_bound(const ax_heap_t *heap) {
  size_t n = 2;
  for (unsigned i = 0; i < AX_CACHE_N; i++)
    n += heap->cache.n[i];
  for (unsigned i = 0; i < AX_RB_SLOTS; i++)
    n += axi_rb_n(heap->rb.slot[i].nb);
  for (const ax_block_t *b = inbox_of(heap); b && n < MAX_INBOX;
       b = transit_next(heap, b, "its inbox"))
    n++;
  return n;
}

/* The blocks of heap's cache, aside, open batches and inbox, each checked to be where it says. */
static void collect_held(const ax_heap_t *heap) {
  if (heap->cache.last_cls) {
    if (!axi_class_cached(heap->cache.last_cls))
      BAD("heap %p: last block of class %d, not a cached class", (void *)heap,
          (int)heap->cache.last_cls);
    hold((uintptr_t)heap->cache.last);
  }
  for (unsigned i = 0; i < AX_CACHE_N; i++) {
    if (heap->cache.n[i] > AX_CACHE_SLOTS)
      BAD("heap %p: %d blocks on cache stack %d", (void *)heap, (int)heap->cache.n[i], (int)i);
    for (uint32_t k = 0; k < heap->cache.n[i] && k < AX_CACHE_SLOTS; k++)
      hold((uintptr_t)heap->cache.slot[i][k]);
  }
  if (heap->cache.aside)
    hold((uintptr_t)heap->cache.aside);
  for (unsigned i = 0; i < AX_RB_SLOTS; i++) {
    const ax_remote_slot_t *s = &heap->rb.slot[i];
    bool open = (heap->rb.open >> i) & 1;
    uint32_t n = axi_rb_n(s->nb);
    if (open != (n != 0) || (open && !s->to)) {
      BAD("heap %p: remote slot %d has %d blocks, open bit %d, key %p", (void *)heap, (int)i,
          (int)n, (int)open, (void *)s->to);
      continue;
    }
    const ax_block_t *b = s->head;
    for (uint32_t k = 0; k < n && b; k++) {
      hold((uintptr_t)b);
      if (k + 1 == n) {
        if (b != s->tail)
          BAD("heap %p: batch %d does not end at its tail %p", (void *)heap, (int)i,
              (const void *)s->tail);
        break;
      }
      b = transit_next(heap, b, "a batch");
    }
  }
  size_t n = 0;
  for (const ax_block_t *b = inbox_of(heap); b && n < MAX_INBOX;
       b = transit_next(heap, b, "its inbox"), n++)
    hold((uintptr_t)b);
}

static void sort_held(void) { /* Shell sort: no libc call that may allocate */
  static const size_t gaps[] = {701, 301, 132, 57, 23, 10, 4, 1};
  for (unsigned g = 0; g < sizeof gaps / sizeof *gaps; g++)
    for (size_t i = gaps[g]; i < nheld; i++) {
      uintptr_t v = held[i];
      size_t j = i;
      for (; j >= gaps[g] && held[j - gaps[g]] > v; j -= gaps[g])
        held[j] = held[j - gaps[g]];
      held[j] = v;
    }
  for (size_t i = 1; i < nheld; i++)
    if (held[i] == held[i - 1])
      BAD("block %p held twice (caches, chains)", (void *)held[i]);
}

static size_t held_from(uintptr_t lo) { /* the first held block >= lo */
  size_t a = 0, b = nheld;
  while (a < b) {
    size_t m = (a + b) / 2;
    if (held[m] < lo)
      a = m + 1;
    else
      b = m;
  }
  return a;
}

/* ---- pages and segments ----------------------------------------------------------------- */

#define MAX_BLOCKS ((size_t)(1u << AX_SMALL_PAGE_SHIFT) / 16) /* blocks a page holds at most */

/* Mark list's blocks in seen; post: how many (stops at the first bad one). */
static uint32_t walk(const ax_page_t *page, const ax_block_t *b, uint64_t *seen, uint32_t limit,
                     const char *what) {
  uint32_t n = 0;
  for (; b && n <= limit; n++) {
    uintptr_t off = (uintptr_t)b - page->area;
    uint64_t k = off / page->block_size;
    if (off % page->block_size || k >= page->capacity) {
      BAD("page %p: %s holds %p, not a carved block", (void *)page->area, what, (const void *)b);
      return n;
    }
    if ((seen[k / 64] >> (k % 64)) & 1) {
      BAD("page %p: block %p twice on its lists (%s)", (void *)page->area, (const void *)b, what);
      return n;
    }
    seen[k / 64] |= (uint64_t)1 << (k % 64);
    b = axi_link(page, b);
  }
  if (b)
    BAD("page %p: %s longer than %d blocks", (void *)page->area, what, (int)limit);
  return n;
}

static void check_page(const ax_segment_t *seg, ax_page_t *page, heap_info_t *hi) {
  uintptr_t owner = ax_atomic_load_relaxed(&page->xowner) & ~AX_OWNER_FLAGS;
  uintptr_t want = hi ? hi->heap->tid : 0;
  if (owner != want)
    BAD("page %p: owner word %p, its heap's thread %p", (void *)page->area, (void *)owner,
        (void *)want);
  if (hi)
    hi->found++;
  if (page->block_size == 0 || page->capacity > page->reserved || page->reserved > MAX_BLOCKS) {
    BAD("page %p: in use without a class (size %d, capacity %d)", (void *)page->area,
        (int)page->block_size, (int)page->capacity);
    return;
  }
  if (show_pages)
    axi_write("axmalloc: validate: page %p class %d: used %d (pinned %d), carved %d, owner %p\n",
              (void *)page->area, (int)page->cls, (int)page->used, (int)page->pinned,
              (int)page->capacity, (void *)owner);
  uint64_t seen[MAX_BLOCKS / 64] = {0};
  uint32_t nfree = walk(page, page->free, seen, page->capacity, "free");
  uint32_t nlocal = walk(page, page->local_free, seen, page->capacity, "local_free");
  uintptr_t tf = ax_atomic_load_relaxed(&page->thread_free);
  uint32_t nremote = walk(page, axi_tf_list(tf), seen, axi_tf_len(tf), "thread_free");
  if (nremote != axi_tf_len(tf))
    BAD("page %p: thread_free holds %d blocks, its word says %d", (void *)page->area, (int)nremote,
        (int)axi_tf_len(tf));
  uintptr_t end = page->area + axi_page_carved(page);
  for (size_t i = held_from(page->area); i < nheld && held[i] < end; i++) {
    uintptr_t off = held[i] - page->area;
    uint64_t k = off / page->block_size;
    if (off % page->block_size)
      BAD("page %p: held block %p is not a block start", (void *)page->area, (void *)held[i]);
    else if ((seen[k / 64] >> (k % 64)) & 1)
      BAD("page %p: held block %p is on its page's lists too", (void *)page->area, (void *)held[i]);
  }
  if (page->pinned > 1 || page->used < page->pinned ||
      page->used - page->pinned != page->capacity - nfree - nlocal)
    BAD("page %p: used %d (pinned %d), but %d carved, %d free, %d on local_free",
        (void *)page->area, (int)page->used, (int)page->pinned, (int)page->capacity, (int)nfree,
        (int)nlocal);
}

static size_t held_in_use; /* held blocks found in pages in use (all must be) */

static void check_segment(ax_segment_t *seg, void *arg) {
  (void)arg;
  if (seg->cookie != ((uintptr_t)seg ^ axi_cookie_key) || seg->kind >= AX_KIND_HUGE ||
      seg->npages == 0 || seg->npages > AX_MAX_PAGES) {
    BAD("segment %p: bad header", (void *)seg);
    return;
  }
  uintptr_t h = ax_atomic_load_relaxed(&seg->heap);
  heap_info_t *hi = h ? info_of(h) : NULL;
  if (h && !hi)
    BAD("segment %p: heap %p, which is not in use", (void *)seg, (void *)h);
  if (ax_atomic_load_relaxed(&seg->owner) != (hi ? hi->heap->tid : 0))
    BAD("segment %p: owner %p, heap %p", (void *)seg, (void *)ax_atomic_load_relaxed(&seg->owner),
        (void *)h);
  unsigned used = 0;
  for (unsigned i = 0; i < seg->npages; i++) {
    ax_page_t *page = &seg->pages[i];
    bool free_bit = (seg->free_mask >> i) & 1;
    if (page->in_use == free_bit)
      BAD("segment %p: page %d in use %d, free bit %d", (void *)seg, (int)i, (int)page->in_use,
          (int)free_bit);
    if (!page->in_use)
      continue;
    used++;
    size_t before = held_from(page->area);
    check_page(seg, page, h ? hi : NULL);
    size_t after = held_from(page->area + axi_page_carved(page));
    held_in_use += after - before;
  }
  if (used != seg->used_pages)
    BAD("segment %p: %d pages in use, used_pages %d", (void *)seg, (int)used, (int)seg->used_pages);
}

/* ---- queues ---------------------------------------------------------------------------------- */

static bool page_of_heap(const ax_page_t *page, const ax_heap_t *heap) {
  const ax_segment_t *seg = axi_segment_of(page);
  return page->in_use && ax_atomic_load_relaxed(&seg->heap) == (uintptr_t)heap;
}

static void check_queues(heap_info_t *hi) {
  ax_heap_t *heap = hi->heap;
  for (unsigned c = 1; c < AX_CLASSES; c++) {
    const ax_page_t *prev = NULL;
    for (ax_page_t *page = heap->queue[c].first; page; prev = page, page = page->next) {
      hi->queued++;
      if (!page_of_heap(page, heap) || page->cls != c || page->prev != prev ||
          (ax_atomic_load_relaxed(&page->xowner) & AX_OWNER_FULL))
        BAD("heap %p: page %p in queue %d is not one of its pages of that class, or linked "
            "wrong",
            (void *)heap, (void *)page->area, (int)c);
      if (hi->queued > (1u << 24))
        return (void)BAD("heap %p: queue %d goes round", (void *)heap, (int)c);
    }
    if (heap->queue[c].last != prev)
      BAD("heap %p: queue %d ends at %p, its last is %p", (void *)heap, (int)c, (const void *)prev,
          (const void *)heap->queue[c].last);
    ax_page_t *pin = heap->pinned[c];
    if (pin && (pin != heap->queue[c].first || !pin->pinned))
      BAD("heap %p: class %d pins %p, not its current page", (void *)heap, (int)c,
          (void *)pin->area);
  }
  size_t full = 0;
  for (ax_page_t *page = heap->full.first; page && full <= heap->full_count; page = page->next) {
    full++;
    hi->queued++;
    if (!page_of_heap(page, heap) || !(ax_atomic_load_relaxed(&page->xowner) & AX_OWNER_FULL))
      BAD("heap %p: page %p in its full list is not one of its full pages", (void *)heap,
          (void *)page->area);
  }
  if (full != heap->full_count)
    BAD("heap %p: %zu pages in its full list, full_count %zu", (void *)heap, full,
        heap->full_count);
}

static void check_empty_heap(void) {
  const ax_heap_t *e = &axi_heap_empty;
  bool cached = e->cache.last_cls != 0;
  for (unsigned i = 0; i < AX_CACHE_N; i++)
    cached |= e->cache.n[i] != 0;
  if (cached || e->cache.aside)
    BAD("the empty heap holds cached blocks (a thread without a heap freed as an owner)");
  if (e->rb.open)
    BAD("the empty heap holds batches of remote frees");
  if (e->full.first || e->full_count)
    BAD("the empty heap has full pages");
  for (unsigned c = 0; c < AX_CLASSES; c++)
    if (e->queue[c].first || e->pinned[c] || e->current[c] != &axi_page_empty)
      BAD("the empty heap has pages of class %d", (int)c);
  for (unsigned n = 0; n < AX_DIRECT_N; n++)
    if (e->direct[n] != &axi_page_empty)
      return (void)BAD("the empty heap's direct table names a page");
  if (axi_page_empty.free || axi_page_empty.local_free || axi_page_empty.used)
    BAD("the empty page holds blocks");
}

unsigned ax_test_validate(void) {
  problems = 0;
  const char *show = getenv("AX_VALIDATE_PAGES");
  show_pages = show && *show == '1';
  check_empty_heap();
  unsigned n = 0;
  axi_heap_foreach(count_heap, &n);
  heaps_cap = n + 16; /* (the walk below runs after the count: nothing starts meanwhile) */
  size_t heap_bytes = (heaps_cap * sizeof *heaps + 4096) & ~(size_t)4095;
  heaps = axi_os_map(heap_bytes);
  nheaps = 0;
  axi_heap_foreach(add_heap, NULL);
  held_cap = 0;
  for (unsigned i = 0; i < nheaps; i++) {
    held_cap += held_bound(heaps[i].heap);
    for (unsigned j = 0; j < i; j++)
      if (heaps[j].heap->tid == heaps[i].heap->tid)
        BAD("heaps %p and %p both have thread id %p", (void *)heaps[j].heap, (void *)heaps[i].heap,
            (void *)heaps[i].heap->tid);
  }
  size_t held_bytes = (held_cap * sizeof *held + 4096) & ~(size_t)4095;
  held = axi_os_map(held_bytes);
  nheld = held_in_use = 0;
  for (unsigned i = 0; i < nheaps; i++)
    collect_held(heaps[i].heap);
  sort_held();
  axi_segment_foreach(check_segment, NULL);
  if (held_in_use != nheld)
    BAD("%zu held blocks are not in pages in use", nheld - held_in_use);
  for (unsigned i = 0; i < nheaps; i++) {
    check_queues(&heaps[i]);
    if (heaps[i].queued != heaps[i].found)
      BAD("heap %p: %d pages in its queues and full list, %d pages in use in its segments",
          (void *)heaps[i].heap, (int)heaps[i].queued, (int)heaps[i].found);
  }
  axi_os_unmap(held, held_bytes);
  axi_os_unmap(heaps, heap_bytes);
  return problems;
}

/* Whether the segment map holds a segment at seg (what free() consults first). */
int ax_test_segmap_has(const void *seg) { return axi_segmap_has((uintptr_t)seg); }

/* Whether checked mode is on (check.c): some points are on the default mode's paths only. */
int ax_test_checked(void) { return axi_checked; }

#endif
