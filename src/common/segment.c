/* SPDX-License-Identifier: MIT */
/* Segments: 4 MiB of address space aligned to its size, owned by one thread heap.
 *
 * A heap keeps its segments with free pages on segs[kind] and the others on segs_full.
 * Empty pages are retired to their segment and purged after a delay; an empty segment
 * goes to a small global cache and is unmapped when it stays unused past the delay.
 * A thread that exits abandons its segments with live blocks onto a lock-free stack,
 * and other threads reclaim them from their slow path.
 */
#include <string.h>

#include "segment.h"

#include "hooks.h"
#include "lock.h"
#include "os.h"
#include "pagemap.h"
#include "print.h"
#include "state.h"
#include "thp.h"
#include "track.h"

_Static_assert(sizeof(ax_page_t) == 128, "page descriptors are indexed with a shift");
_Static_assert(sizeof(ax_segment_t) + sizeof(ax_page_t) == AX_HUGE_OFFSET,
               "a huge block starts right after its header and page descriptor");
_Static_assert(sizeof(ax_segment_t) + AX_MAX_PAGES * sizeof(ax_page_t) <= AX_SMALL_META,
               "small segment metadata must fit before page 0's blocks");

ax_atomic_word axi_segmap[AX_MAP_BITS / (8 * sizeof(uintptr_t))];

/* Threads reading other heaps' segments now (axi_segments_hold). */
static ax_atomic_word walkers;

/* Every bit cleared is a segment about to be unmapped, moved or joined: it waits for the walks
 * that may have seen it set (walkers are rare: ax_ctl's statistics, the double-free seek). The
 * clear (after the page map's slices: axi_segment_unmap), a full fence, then walkers read; the
 * walk: walkers written, a full fence, then the maps read. So either the walk sees the bit (and
 * the slices) clear, or this sees the walk and waits for it: spinning briefly, then sleeping on a
 * futex. */
void axi_segmap_set(ax_segment_t *seg, bool on) {
  const unsigned w = 8 * sizeof(uintptr_t);
  uintptr_t i = (uintptr_t)seg >> AX_SEGMENT_SHIFT, bit = (uintptr_t)1 << (i % w);
  if (on) {
    ax_atomic_fetch_or_acq_rel(&axi_segmap[i / w], bit);
    return;
  }
  ax_atomic_fetch_and_acq_rel(&axi_segmap[i / w], ~bit);
  ax_fence_full();
  for (unsigned spins = 0;; spins++) {
    uintptr_t n = ax_atomic_load_acquire(&walkers);
    if (!n)
      break;
    if (spins < 256)
      ax_arch_pause();
    else /* (the last walker wakes us: axi_segments_release) */
      axi_os_wait(&walkers, (uint32_t)n, 10);
  }
}

void axi_segments_hold(void) {
  ax_atomic_fetch_add_relaxed(&walkers, 1);
  ax_fence_full();
}

void axi_segments_release(void) {
  ax_fence_release(); /* the reads before are done before an unmapper sees walkers drop */
  if (ax_atomic_fetch_add_relaxed(&walkers, (uintptr_t)-1) == 1)
    axi_os_wake(&walkers, UINT32_MAX); /* (an unmapper may sleep on it: axi_segmap_set) */
}

static unsigned kind_shift(enum ax_kind kind) {
  return kind == AX_KIND_SMALL    ? AX_SMALL_PAGE_SHIFT
         : kind == AX_KIND_MEDIUM ? AX_MEDIUM_PAGE_SHIFT
                                  : AX_LARGE_PAGE_SHIFT;
}

static uintptr_t page_start(const ax_segment_t *seg, unsigned i) {
  uintptr_t base = (uintptr_t)seg + ((uintptr_t)i << seg->page_shift);
  if (i == 0)
    base += seg->kind == AX_KIND_SMALL ? AX_SMALL_META : AX_OTHER_META;
  return base;
}

static uintptr_t page_end(const ax_segment_t *seg, unsigned i) {
  return (uintptr_t)seg + ((uintptr_t)(i + 1) << seg->page_shift);
}

static uint64_t all_pages(unsigned n) { return n >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << n) - 1; }

uintptr_t axi_page_start(const ax_segment_t *seg, unsigned i) { return page_start(seg, i); }

uintptr_t axi_page_end(const ax_page_t *page) {
  const ax_segment_t *seg = axi_segment_of(page);
  return page_end(seg, (unsigned)(page - seg->pages));
}

/* ---- metadata checks ------------------------------------------------------------------ */
/* Made on slow paths only (a pointer that failed the block-start test, a page that empties
 * or leaves the full list, everything in checked mode): a stray write over a header or a
 * page descriptor is reported there instead of steering the allocator into user memory.
 * The fast paths read only page_shift (a bad one sends free to a wrong page descriptor,
 * whose block-start test then fails) and the page's area, div_inv, div_shift, fast_cap. */

/* pre: seg is in the segment map. Aborts unless its header is consistent. */
void axi_segment_validate(const ax_segment_t *seg) {
  unsigned k = seg->kind;
  if (seg->cookie != ((uintptr_t)seg ^ axi_cookie_key) || k >= AX_KINDS)
    axi_corrupted(seg);
  unsigned shift = k == AX_KIND_HUGE ? AX_HUGE_PAGE_SHIFT : kind_shift((enum ax_kind)k);
  unsigned npages = k == AX_KIND_HUGE ? 1 : (unsigned)(AX_SEGMENT_SIZE >> shift);
  if (seg->page_shift != shift || seg->npages != npages || seg->used_pages > seg->npages)
    axi_corrupted(seg);
}

/* pre: seg validated and page one of its descriptors. Aborts unless page is consistent. */
void axi_page_validate(const ax_segment_t *seg, const ax_page_t *page) {
  unsigned i = (unsigned)(page - seg->pages);
  if (page->in_use > 1)
    axi_corrupted(page);
  if (!page->in_use || seg->kind == AX_KIND_HUGE || page->block_size == 0)
    return; /* nothing to check in a free page; a huge block's page has no class */
  unsigned c = page->cls;
  if (c < 1 || c >= AX_CLASSES || page->block_size != axi_class_size(c) ||
      page->area != page_start(seg, i) ||
      (uint64_t)(page->div_inv * (page->block_size >> page->div_shift)) != 1 ||
      (page->block_size >> page->div_shift << page->div_shift) != page->block_size ||
      !((page->block_size >> page->div_shift) & 1) ||
      page->area + (uint64_t)page->reserved * page->block_size > page_end(seg, i) ||
      page->capacity > page->reserved)
    axi_corrupted(page);
  /* used, capacity and fast_cap move together only in the owner's eyes: another thread (a
   * remote free) may read a new one with an old other (found under qemu, checked mode) */
  if (ax_atomic_load_relaxed(&seg->owner) == ax_arch_thread_id() &&
      (axi_page_live(page) > page->capacity ||
       page->fast_cap != (axi_slow_only() ? 0 : page->capacity)))
    axi_corrupted(page);
}

/* ---- lists ------------------------------------------------------------------------- */

static void segq_push(ax_segq_t *q, ax_segment_t *seg) {
  seg->prev = NULL;
  seg->next = q->first;
  if (q->first)
    q->first->prev = seg;
  q->first = seg;
}

static void segq_remove(ax_segq_t *q, ax_segment_t *seg) {
  if (seg->prev)
    seg->prev->next = seg->next;
  else
    q->first = seg->next;
  if (seg->next)
    seg->next->prev = seg->prev;
  seg->next = seg->prev = NULL;
}

/* ---- mapping and the segment cache -------------------------------------------------- */

/* Bytes of page i that madvise can return (page 0 may share an OS page with the header). */
static size_t purgeable(const ax_segment_t *seg, unsigned i) {
  uintptr_t lo = (page_start(seg, i) + axi_os_page - 1) & ~(axi_os_page - 1);
  uintptr_t hi = page_end(seg, i) & ~(axi_os_page - 1);
  return hi > lo ? hi - lo : 0;
}

/* os_committed counts every mapped byte except the pages purged since (purged_mask). */
static void uncount_purged(ax_segment_t *seg) {
  for (uint64_t m = seg->purged_mask; m; m &= m - 1)
    axi_stat_add(&axi_stats.os_committed, &axi_stats.os_committed_peak,
                 (intptr_t)purgeable(seg, (unsigned)__builtin_ctzll(m)));
  seg->purged_mask = 0;
}

/* The bytes at a segment's start that only ever hold metadata. */
static size_t meta_bytes(const ax_segment_t *seg) {
  return seg->kind == AX_KIND_HUGE ? AX_HUGE_OFFSET : AX_SMALL_META;
}

/* Tell memcheck (AX_VALGRIND) that seg's metadata holds no program pointers (track.h). */
void axi_segment_hide_meta(ax_segment_t *seg, bool hide) {
  size_t n = meta_bytes(seg);
  if (hide)
    AX_TRACK_HIDE_META(seg, n);
  else
    AX_TRACK_SHOW_META(seg, n);
  (void)n;
}

/* ---- guards --------------------------------------------------------------------------
 * A small, medium or large segment is mapped inaccessible (PROT_NONE: address space, no
 * memory) but for its metadata, with AX_SEGMENT_GUARD more inaccessible address space right
 * below it. Its memory opens as blocks are first carved there, in steps of AX_OPEN_STEP, and
 * stays open (purges and the segment cache keep it so). So a stray write past the blocks a
 * segment ever carved, or running backwards off its first pages, faults at once instead of
 * landing in memory that a later block gets, or in another mapping. The cost: a quarter more
 * address space, and one mprotect per step of fresh memory (at most 16 a segment). */
#define AX_SEGMENT_GUARD ((size_t)1 << 20)
#define AX_OPEN_STEP ((uintptr_t)256 << 10)

/* Opens seg up to end (an address in it) and a step beyond. post: false when the OS refused;
 * the segment is as it was. */
bool axi_segment_open_to(ax_segment_t *seg, uintptr_t end) {
  uintptr_t step = AX_OPEN_STEP > axi_os_page ? AX_OPEN_STEP : axi_os_page;
  uintptr_t to = (end - (uintptr_t)seg + step - 1) & ~(step - 1);
  to = to < AX_SEGMENT_SIZE ? to : AX_SEGMENT_SIZE;
  if (!axi_os_commit((char *)seg + seg->open_end, to - seg->open_end))
    return false;
  seg->open_end = (uint32_t)to;
  return true;
}

/* The mapping of a segment of kind: huge ones (huge.c, prof.c) are readable and writable
 * throughout; the others are guarded (above). */
static ax_segment_t *map(enum ax_kind kind, size_t map_size, size_t align, size_t off) {
  if (kind == AX_KIND_HUGE)
    return axi_os_map_aligned(map_size, align, off);
  ax_segment_t *seg = axi_os_reserve_aligned(map_size, align, AX_SEGMENT_GUARD);
  size_t meta = (AX_SMALL_META + axi_os_page - 1) & ~(axi_os_page - 1);
  if (seg && !axi_os_commit(seg, meta)) { /* (tags too, when tagging) */
    axi_os_unmap((char *)seg - AX_SEGMENT_GUARD, AX_SEGMENT_GUARD + map_size);
    return NULL;
  }
  if (seg)
    seg->open_end = (uint32_t)meta;
  return seg;
}

/* post: a mapped, registered segment of `kind`, map_size bytes at an address m with m + off
 * a multiple of align (see axi_os_map_aligned); NULL if the OS refuses. */
ax_segment_t *axi_segment_map(enum ax_kind kind, size_t map_size, size_t align, size_t off) {
  ax_segment_t *seg = map(kind, map_size, align, off);
  if (!seg)
    return NULL;
  seg->kind = (uint8_t)kind;
  axi_segment_hide_meta(seg, true);
  seg->map_size = map_size;
  seg->cookie = (uintptr_t)seg ^ axi_cookie_key;
  axi_stat_add(&axi_stats.os_reserved, &axi_stats.os_reserved_peak, (intptr_t)map_size);
  axi_stat_add(&axi_stats.os_committed, &axi_stats.os_committed_peak, (intptr_t)map_size);
  ax_atomic_fetch_add_relaxed(&axi_stats.segments_live, 1);
  if (kind != AX_KIND_HUGE) /* (huge blocks advise their own: huge.c; the profiler's slots) */
    axi_thp_apply(seg, map_size, kind);
  axi_segmap_set(seg, true);
  return seg;
}

/* Point the page map's slices of seg at its pages, by kind. post: false when the OS had no
 * memory for a page-map table (the slices set so far stay: the unmap clears them). */
static bool pagemap_register(ax_segment_t *seg) {
  for (unsigned i = 0; i < seg->npages; i++)
    if (!axi_pagemap_set((uintptr_t)seg + ((uintptr_t)i << seg->page_shift),
                         (uintptr_t)1 << seg->page_shift, &seg->pages[i]))
      return false;
  return true;
}

/* A segment-aligned part of a mapping already counted becomes a segment of its own: the
 * tail split off a cached huge mapping (huge.c), with the advice of the mapping it was part
 * of (thp.c). pre: its first AX_HUGE_OFFSET bytes are ours to write. */
void axi_segment_split_off(ax_segment_t *seg, size_t map_size, enum ax_thp_advice thp) {
  AX_TRACK_HIDE_META(seg, AX_HUGE_OFFSET); /* first: memcheck saw this memory freed */
  memset(seg, 0, AX_HUGE_OFFSET);
  seg->kind = AX_KIND_HUGE;
  seg->thp = (uint8_t)thp;
  seg->map_size = map_size;
  seg->cookie = (uintptr_t)seg ^ axi_cookie_key;
  ax_atomic_fetch_add_relaxed(&axi_stats.segments_live, 1);
  axi_segmap_set(seg, true);
}

/* The inverse: seg's mapping joins the one right before it, which grows over it (the
 * caller's). seg is no segment from here on. */
void axi_segment_join(ax_segment_t *seg) {
  axi_segmap_set(seg, false);
  axi_segment_hide_meta(seg, false);
  AX_TRACK_NOACCESS(seg, AX_HUGE_OFFSET); /* free memory of the mapping it joins */
  ax_atomic_fetch_add_relaxed(&axi_stats.segments_live, (uintptr_t)-1);
}

/* The segment map and the page map forget seg before its memory goes back to the OS: from
 * then on another thread may map a segment there (t_race_remap). Huge mappings are not in
 * the page map (free() finds them through the segment map, off the fast path). */
void axi_segment_unmap(ax_segment_t *seg) {
  ax_atomic_store_relaxed(&seg->owner, 0); /* first: a fork child takes no half-unmapped one */
  ax_atomic_store_relaxed(&seg->heap, 0);
  ax_compiler_fence();
  uncount_purged(seg);
  axi_segment_hide_meta(seg, false);
  if (seg->kind != AX_KIND_HUGE)
    axi_pagemap_set((uintptr_t)seg, AX_SEGMENT_SIZE, NULL);
  axi_segmap_set(seg, false);
  axi_stat_add(&axi_stats.os_reserved, NULL, -(intptr_t)seg->map_size);
  axi_stat_add(&axi_stats.os_committed, NULL, -(intptr_t)seg->map_size);
  ax_atomic_fetch_add_relaxed(&axi_stats.segments_live, (uintptr_t)-1);
  axi_thp_resized(seg, -(intptr_t)seg->map_size);
  if (seg->kind == AX_KIND_HUGE)
    axi_os_unmap(seg, seg->map_size);
  else /* (with its guard) */
    axi_os_unmap((char *)seg - AX_SEGMENT_GUARD, AX_SEGMENT_GUARD + seg->map_size);
}

#define AX_SEGMENT_CACHE_MAX 8
static ax_segcache_t cache;

/* A segment leaves its heap for the cache, or for the OS when the cache is full or busy. Its
 * heap is cleared only under the cache's lock, which fork's prepare handler takes: so in a
 * fork child a segment still names the heap of a thread that left it between its queue and the
 * cache, and the child takes it over (lifecycle.c), instead of finding it in neither. */
static void cache_put(ax_segment_t *seg) {
  seg->cached_ms = axi_now_ms();
  if (axi_trylock(&cache.lock)) {
    if (cache.count < AX_SEGMENT_CACHE_MAX) {
      ax_atomic_store_relaxed(&seg->owner, 0);
      ax_atomic_store_relaxed(&seg->heap, 0);
      seg->next = cache.first;
      axi_segcache_link(&cache.first, seg);
      cache.count++;
      cache.bytes += seg->map_size;
      seg = NULL;
    }
    axi_unlock(&cache.lock);
  }
  if (seg)
    axi_segment_unmap(seg);
}

static ax_segment_t *cache_take(void) {
  ax_segment_t *seg = NULL;
  if (ax_atomic_load_relaxed((ax_atomic_word *)&cache.first) && axi_trylock(&cache.lock)) {
    seg = cache.first;
    if (seg) {
      axi_segcache_link(&cache.first, seg->next);
      cache.count--;
      cache.bytes -= seg->map_size;
    }
    axi_unlock(&cache.lock);
  }
  return seg;
}

/* Unmap the entries unused for longer than the purge delay (all of them if force). A
 * trim that finds the lock taken leaves the work to the next one (unless force). */
void axi_segcache_trim(ax_segcache_t *c, enum ax_trim mode) {
  uint64_t now = axi_now_ms();
  ax_segment_t *drop = NULL;
  if (!ax_atomic_load_relaxed((ax_atomic_word *)&c->first))
    return;
  bool force = mode != AX_TRIM_DUE;
  if (mode == AX_TRIM_ALL)
    axi_lock(&c->lock);
  else if (!axi_trylock(&c->lock))
    return;
  for (ax_segment_t **at = &c->first; *at;) {
    ax_segment_t *seg = *at;
    if (force || now - seg->cached_ms >= axi_options.purge_delay_ms) {
      axi_segcache_link(at, seg->next);
      c->count--;
      c->bytes -= seg->map_size;
      seg->next = drop;
      drop = seg;
    } else {
      at = &seg->next;
    }
  }
  axi_unlock(&c->lock);
  while (drop) {
    ax_segment_t *next = drop->next;
    axi_segment_unmap(drop);
    drop = next;
  }
}

void axi_segment_cache_trim(enum ax_trim mode) { axi_segcache_trim(&cache, mode); }

/* A cached segment may come back as another kind: a new page is dirty (not known zero)
 * when any old dirty or used page overlaps it. */
static uint64_t remap_dirty(const ax_segment_t *seg, unsigned new_shift, unsigned new_n) {
  uint64_t dirty = 0;
  for (unsigned i = 0; i < seg->npages; i++) {
    if (!((seg->dirty_mask >> i) & 1))
      continue;
    uintptr_t lo = (uintptr_t)i << seg->page_shift, hi = (uintptr_t)(i + 1) << seg->page_shift;
    for (unsigned j = 0; j < new_n; j++)
      if (((uintptr_t)j << new_shift) < hi && ((uintptr_t)(j + 1) << new_shift) > lo)
        dirty |= (uint64_t)1 << j;
  }
  return dirty;
}

static ax_segment_t *segment_alloc(ax_heap_t *heap, enum ax_kind kind) {
  unsigned shift = kind_shift(kind), n = (unsigned)(AX_SEGMENT_SIZE >> shift);
  uint64_t dirty = 0;
  ax_segment_t *seg = cache_take();
  bool fresh = !seg;
  if (seg) {
    uncount_purged(seg);
    axi_thp_apply(seg, AX_SEGMENT_SIZE, kind);
    dirty = remap_dirty(seg, shift, n);
    if (kind != seg->kind && (seg->kind == AX_KIND_SMALL || kind == AX_KIND_SMALL)) {
      /* the header grew or shrank over page 0: count page 0 as dirty either way */
      dirty |= 1;
    }
  } else {
    seg = axi_segment_map(kind, AX_SEGMENT_SIZE, AX_SEGMENT_SIZE, 0);
    if (!seg)
      return NULL;
  }
  seg->kind = (uint8_t)kind;
  seg->page_shift = (uint8_t)shift;
  seg->npages = (uint16_t)n;
  seg->used_pages = 0;
  seg->free_mask = all_pages(n);
  seg->dirty_mask = dirty;
  /* A fresh mapping's descriptors are the kernel's zeroes already: writing them would fault
   * in two more OS pages a thread (issue 39: 8 KiB of a thread's 43). */
  if (!fresh || AX_TRACKING)
    memset(seg->pages, 0, n * sizeof(ax_page_t));
  seg->abandoned_next = NULL;
  if (!pagemap_register(seg)) {
    axi_segment_unmap(seg);
    return NULL;
  }
  ax_atomic_store_relaxed(&seg->inbox, AX_INBOX_CLOSED);
  ax_atomic_store_relaxed(&seg->heap, (uintptr_t)heap);
  ax_atomic_store_relaxed(&seg->owner, heap->tid);
  segq_push(&heap->segs[kind], seg);
  return seg;
}

/* ---- pages ------------------------------------------------------------------------- */

/* post: a page of `kind` in one of heap's segments, in_use, with area set to where its
 * blocks may start (they may go up to axi_page_end) and is_zero telling whether that memory
 * is known zero. */
ax_page_t *axi_segment_page_alloc(ax_heap_t *heap, enum ax_kind kind) {
  ax_segment_t *seg = heap->segs[kind].first;
  if (!seg && !(seg = segment_alloc(heap, kind)))
    return NULL;             /* the OS refused: the caller decides what to release (heap.c) */
  axi_segment_validate(seg); /* once per page taken: a stray write over the header shows */
  unsigned i = (unsigned)__builtin_ctzll(seg->free_mask);
  uint64_t bit = (uint64_t)1 << i;
  seg->free_mask &= ~bit;
  seg->used_pages++;
  if (!seg->free_mask) {
    segq_remove(&heap->segs[kind], seg);
    segq_push(&heap->segs_full, seg);
  }
  ax_page_t *page = &seg->pages[i];
  memset(page, 0, sizeof *page);
  page->in_use = 1;
  ax_atomic_store_relaxed(&page->xowner, heap->tid);
  axi_stat_add(&axi_stats.in_use, &axi_stats.in_use_peak,
               (intptr_t)(page_end(seg, i) - page_start(seg, i)));
  page->area = page_start(seg, i);
  page->is_zero = !(seg->dirty_mask & bit);
  seg->dirty_mask &= ~bit;
  AX_TRACK_NOACCESS((void *)page->area, page_end(seg, i) - page->area); /* nothing handed out */
  if (seg->purged_mask & bit) {
    seg->purged_mask &= ~bit;
    axi_stat_add(&axi_stats.os_committed, &axi_stats.os_committed_peak,
                 (intptr_t)purgeable(seg, i));
  }
  return page;
}

static void segment_release(ax_heap_t *heap, ax_segment_t *seg) {
  segq_remove(&heap->segs[seg->kind], seg);
  AX_HOOK(AX_HOOK_SEGMENT_RELEASE, seg);
  cache_put(seg);
}

/* pre: page is empty (used == 0, no block on any list) and on no queue.
 * post: the page is free in its segment; the segment may be released (do not touch it), but
 * not when keep: then it stays the heap's, its pages dirty until their purge. post: whether
 * the segment was released. */
static bool page_retire(ax_heap_t *heap, ax_page_t *page, bool keep) {
  ax_segment_t *seg = axi_segment_of(page);
  unsigned i = (unsigned)(page - seg->pages);
  uint64_t bit = (uint64_t)1 << i;
  page->in_use = 0;
  ax_atomic_store_relaxed(&page->xowner, 0);
  axi_stat_add(&axi_stats.in_use, NULL, -(intptr_t)(page_end(seg, i) - page_start(seg, i)));
  axi_page_set_capacity(page, 0); /* free() of a stale pointer into it now reports it */
  page->free = page->local_free = NULL;
  page->retired_ms = axi_now_ms();
  if (!seg->free_mask) {
    segq_remove(&heap->segs_full, seg);
    segq_push(&heap->segs[seg->kind], seg);
  }
  seg->free_mask |= bit;
  seg->dirty_mask |= bit;
  if (--seg->used_pages == 0 && !keep) {
    segment_release(heap, seg);
    return true;
  }
  if (!heap->next_purge_ms)
    heap->next_purge_ms = page->retired_ms + axi_options.purge_delay_ms;
  return false;
}

/* Whether seg would be heap's only segment of its kind with free pages. */
static bool only_of_kind(const ax_heap_t *heap, const ax_segment_t *seg) {
  const ax_segment_t *first = heap->segs[seg->kind].first;
  return first == seg ? !seg->next : !first && !seg->free_mask;
}

/* An exiting thread keeps its last empty segment of each kind (heap->keep_empty) to abandon
 * it (axi_segment_keep_on_exit). */
void axi_segment_page_retire(ax_heap_t *heap, ax_page_t *page) {
  page_retire(heap, page, heap->keep_empty && only_of_kind(heap, axi_segment_of(page)));
}

/* As axi_segment_page_retire, but a segment that empties stays the heap's when it is the
 * heap's only one of its kind with free pages (a reclaim: the thread is about to take a page,
 * and one of this segment's dirty pages costs no fault). post: whether it was released. */
bool axi_segment_page_retire_keep(ax_heap_t *heap, ax_page_t *page) {
  return page_retire(heap, page, only_of_kind(heap, axi_segment_of(page)));
}

/* Whether an exiting thread abandons its last empty segment of each kind instead of freeing
 * it: while few wait on the abandoned stack (64). The next thread adopts one as it is, with no
 * page-map registration, no descriptors cleared and its dirty pages reused (a thread that
 * started and exited cost 26,700 instructions with a segment from the cache); the purge walk
 * returns its pages after the delay, as any abandoned segment's. */
bool axi_segment_keep_on_exit(void) {
  uintptr_t out = ax_atomic_load_relaxed(&axi_stats.segments_abandoned),
            back = ax_atomic_load_relaxed(&axi_stats.segments_reclaimed);
  return out - back < 64;
}

/* Purge the dirty free pages of seg that have been free for the purge delay (all of them if
 * force), one madvise per run of adjacent pages; in a segment advised for huge pages only the
 * pages of the run's whole huge pages (axi_thp_purge_clip), the others stay dirty. post: *next
 * is the earliest time one of the others is due, if sooner. */
static void purge_segment(ax_segment_t *seg, uint64_t now, bool force, uint64_t *next) {
  uint64_t due = 0;
  for (uint64_t m = seg->dirty_mask; m; m &= m - 1) {
    unsigned i = (unsigned)__builtin_ctzll(m);
    uint64_t at = seg->pages[i].retired_ms + axi_options.purge_delay_ms;
    if (force || at <= now)
      due |= (uint64_t)1 << i;
    else if (!*next || at < *next)
      *next = at;
  }
  for (uint64_t m = due; m; m &= m - 1) /* page 0 may have nothing to give */
    if (!purgeable(seg, (unsigned)__builtin_ctzll(m)))
      due &= ~((uint64_t)1 << __builtin_ctzll(m));
  while (due) {
    unsigned i = (unsigned)__builtin_ctzll(due), j = i;
    while (j + 1 < seg->npages && ((due >> (j + 1)) & 1))
      j++;
    uint64_t run = all_pages(j + 1) & ~all_pages(i);
    due &= ~run;
    uintptr_t lo = (page_start(seg, i) + axi_os_page - 1) & ~(axi_os_page - 1);
    uintptr_t hi = page_end(seg, j) & ~(axi_os_page - 1);
    if (!axi_thp_purge_clip(seg, &lo, &hi))
      continue;
    for (unsigned k = i; k <= j; k++) /* the pages wholly inside: all of them, unclipped */
      if (page_start(seg, k) < lo || page_end(seg, k) > hi)
        run &= ~((uint64_t)1 << k);
    axi_os_purge((void *)lo, hi - lo);
    seg->dirty_mask &= ~run;
    seg->purged_mask |= run;
  }
}

/* Purge the dirty free pages of heap's segments that have been free for the purge delay
 * (all of them if force). */
void axi_segment_purge(ax_heap_t *heap, bool force) {
  uint64_t now = axi_now_ms(), next = 0;
  for (unsigned k = 0; k < AX_KIND_HUGE; k++)
    for (ax_segment_t *seg = heap->segs[k].first; seg; seg = seg->next)
      purge_segment(seg, now, force, &next);
  heap->next_purge_ms = next;
}

/* ---- abandonment ------------------------------------------------------------------- */

static ax_atomic_word abandoned; /* Treiber stack; pushes lock-free, one popper at a time */
static ax_lock_t abandoned_pop;
/* The earliest time a free page of an abandoned segment is due for its purge (0: none). An
 * exiting thread leaves its free pages dirty for the purge delay, as it would have kept them:
 * the thread that reclaims the segment reuses them without a page fault (mstress-like rounds
 * of threads: 36,700 minor faults when the exit purged them all); after the delay the purge
 * tick of any thread purges them (axi_segment_purge_abandoned). */
static ax_atomic_word abandoned_due;

/* abandoned_due = the earlier of it and t (t != 0). */
static void due_at(uint64_t t) {
  uintptr_t cur = ax_atomic_load_relaxed(&abandoned_due);
  while ((!cur || t < cur) && !ax_atomic_cas_acq_rel(&abandoned_due, &cur, t))
    ;
}

/* Purge the free pages of abandoned segments that are due (all if force): the walk holds the
 * popper's lock, so no segment leaves the list or changes meanwhile (pushes add at its head,
 * which the walk does not need). Skipped when another thread pops or walks. */
void axi_segment_purge_abandoned(bool force) {
  uintptr_t due = ax_atomic_load_relaxed(&abandoned_due);
  if (!due)
    return;
  uint64_t now = axi_now_ms(), next = 0;
  if ((!force && now < due) || !axi_trylock(&abandoned_pop))
    return;
  ax_atomic_store_relaxed(&abandoned_due, 0); /* (a push meanwhile sets it again) */
  for (ax_segment_t *seg = (ax_segment_t *)ax_atomic_load_acquire(&abandoned); seg;
       seg = seg->abandoned_next)
    purge_segment(seg, now, force, &next);
  axi_unlock(&abandoned_pop);
  if (next)
    due_at(next);
}

static void abandon(ax_segment_t *seg) {
  uint64_t due = 0; /* (read before the push: from then on the segment is the popper's) */
  for (uint64_t m = seg->dirty_mask; m; m &= m - 1) {
    uint64_t at = seg->pages[__builtin_ctzll(m)].retired_ms + axi_options.purge_delay_ms;
    due = !due || at < due ? at : due;
  }
  /* (written only where not zero: a never-used descriptor stays the kernel's zero page) */
  for (unsigned i = 0; i < seg->npages; i++) {
    ax_page_t *pg = &seg->pages[i];
    if (pg->next || pg->prev)
      pg->next = pg->prev = NULL;
    if (ax_atomic_load_relaxed(&pg->xowner))
      ax_atomic_store_relaxed(&pg->xowner, 0); /* every free is remote now */
  }
  ax_atomic_store_relaxed(&seg->owner, 0);
  ax_atomic_store_release(&seg->inbox, 0); /* open: remote frees into it come here now */
  ax_atomic_store_relaxed(&seg->heap, 0);
  uintptr_t head = ax_atomic_load_relaxed(&abandoned);
  do
    seg->abandoned_next = (ax_segment_t *)head;
  while (!ax_atomic_cas_release(&abandoned, &head, (uintptr_t)seg));
  ax_atomic_fetch_add_relaxed(&axi_stats.segments_abandoned, 1);
  if (due)
    due_at(due);
}

/* pre: the heap's pages are collected and its empty pages retired (thread exit). */
void axi_segment_abandon_all(ax_heap_t *heap) {
  for (unsigned k = 0; k < AX_KIND_HUGE; k++)
    while (heap->segs[k].first) {
      ax_segment_t *seg = heap->segs[k].first;
      segq_remove(&heap->segs[k], seg);
      abandon(seg);
    }
  while (heap->segs_full.first) {
    ax_segment_t *seg = heap->segs_full.first;
    segq_remove(&heap->segs_full, seg);
    abandon(seg);
  }
}

/* A fork child's handler, for a segment of a heap whose thread does not exist in the child
 * (its pages unpinned already, heap.c): its count of pages in use taken again from the
 * pages (the thread may have stopped between a page's flag and the segment's count), then
 * abandoned as at thread exit: no thread of the child owns it, and the next that needs a
 * page reclaims it (axi_page_reclaim). */
void axi_segment_orphan(ax_segment_t *seg) {
  uint64_t in_use = 0;
  for (unsigned i = 0; i < seg->npages; i++)
    if (seg->pages[i].in_use)
      in_use |= (uint64_t)1 << i;
  seg->used_pages = (uint32_t)__builtin_popcountll(in_use);
  seg->free_mask = all_pages(seg->npages) & ~in_use;
  abandon(seg);
}

/* Take one abandoned segment, if any and if no other thread is popping right now: it joins
 * heap's segments (its pages are the caller's to queue or retire: axi_page_reclaim).
 * post: the segment, or NULL. */
ax_segment_t *axi_segment_adopt(ax_heap_t *heap) {
  /* Waited for, not only tried: a purge walk of the stack holds the lock for its length, and
   * threads that start meanwhile and found it busy mapped a segment each (300 threads under
   * qemu: 8 adopted, 292 new segments). A pop is one CAS. Not when this thread holds it (a
   * signal handler's malloc inside our own pop or walk): then the caller maps. */
  if (!ax_atomic_load_relaxed(&abandoned))
    return NULL;
  if (!axi_trylock(&abandoned_pop)) {
    uintptr_t w = ax_atomic_load_relaxed(&abandoned_pop.word);
    if ((w & ~(AX_LOCK_FORK | AX_LOCK_WAITERS)) == axi_lock_holder())
      return NULL;
    axi_lock(&abandoned_pop);
  }
  uintptr_t head = ax_atomic_load_acquire(&abandoned);
  /* only one popper: head stays in the list until our CAS, so its link is stable */
  while (head && !ax_atomic_cas_acq_rel(&abandoned, &head,
                                        (uintptr_t)((ax_segment_t *)head)->abandoned_next))
    ;
  axi_unlock(&abandoned_pop);
  ax_segment_t *seg = (ax_segment_t *)head;
  if (!seg)
    return NULL;
  ax_atomic_fetch_add_relaxed(&axi_stats.segments_reclaimed, 1);
  for (uint64_t m = seg->dirty_mask; m; m &= m - 1) { /* its free pages wait for our purge */
    uint64_t at = seg->pages[__builtin_ctzll(m)].retired_ms + axi_options.purge_delay_ms;
    if (!heap->next_purge_ms || at < heap->next_purge_ms)
      heap->next_purge_ms = at;
  }
  ax_atomic_store_relaxed(&seg->heap, (uintptr_t)heap);
  ax_atomic_store_relaxed(&seg->owner, heap->tid);
  segq_push(seg->free_mask ? &heap->segs[seg->kind] : &heap->segs_full, seg);
  return seg;
}

/* ---- every segment ------------------------------------------------------------------ */

/* The page map's first level says which 64 GiB regions ever held a segment of these kinds, the
 * segment map which 4 MiB slots of those hold one now: a walk of every live segment that reads
 * no list a thread may have left half-updated (a fork child's, see heap.c). */
void axi_segment_foreach(void (*fn)(ax_segment_t *, void *), void *arg) {
  const unsigned w = 8 * sizeof(uintptr_t),
                 per_region = 1u << (AX_PM_L2_BITS + AX_SLICE_SHIFT - AX_SEGMENT_SHIFT);
  for (unsigned r = 0; r < (1u << AX_PM_L1_BITS); r++) {
    if (!axi_pagemap_region_used(r))
      continue;
    for (unsigned i = r * per_region; i < (r + 1) * per_region; i += w) {
      for (uintptr_t m = ax_atomic_load_relaxed(&axi_segmap[i / w]); m; m &= m - 1) {
        ax_segment_t *seg =
            (ax_segment_t *)((uintptr_t)(i + (unsigned)__builtin_ctzl(m)) << AX_SEGMENT_SHIFT);
        if (seg->kind != AX_KIND_HUGE)
          fn(seg, arg);
      }
    }
  }
}

/* Bytes of the live blocks in every page of every segment, whoever owns it (ax_ctl's
 * stats.allocated): read while their heaps change them, so exact only for pages that no other
 * thread changes meanwhile. No segment goes away during the walk (the gate above); a header
 * just mapped or being reset is skipped by its cookie and kind, and its counts bounded. */
uint64_t axi_segment_live_bytes(void) {
  axi_segments_hold();
  uint64_t bytes = 0;
  const unsigned w = 8 * sizeof(uintptr_t),
                 per_region = 1u << (AX_PM_L2_BITS + AX_SLICE_SHIFT - AX_SEGMENT_SHIFT);
  for (unsigned r = 0; r < (1u << AX_PM_L1_BITS); r++) {
    if (!axi_pagemap_region_used(r))
      continue;
    for (unsigned i = r * per_region; i < (r + 1) * per_region; i += w)
      for (uintptr_t m = ax_atomic_load_acquire(&axi_segmap[i / w]); m; m &= m - 1) {
        ax_segment_t *seg =
            (ax_segment_t *)((uintptr_t)(i + (unsigned)__builtin_ctzl(m)) << AX_SEGMENT_SHIFT);
        if (ax_peek(&seg->cookie) != ((uintptr_t)seg ^ axi_cookie_key))
          continue;
        unsigned kind = ax_peek(&seg->kind), n = ax_peek(&seg->npages);
        if (kind >= AX_KIND_HUGE || n > AX_MAX_PAGES)
          continue;
        for (unsigned k = 0; k < n; k++) {
          const ax_page_t *page = &seg->pages[k];
          if (!ax_peek(&page->in_use))
            continue;
          uint32_t used = ax_peek(&page->used), pinned = ax_peek(&page->pinned);
          uint32_t cap = ax_peek(&page->capacity);
          uint32_t live = used - pinned <= cap ? used - pinned : 0;
          bytes += (uint64_t)live * ax_peek(&page->block_size);
        }
      }
  }
  axi_segments_release();
  return bytes;
}

/* ---- fork ------------------------------------------------------------------------- */

void axi_segment_fork_prepare(void) {
  axi_lock_for_fork(&cache.lock);
  axi_lock_for_fork(&abandoned_pop);
}

/* The walks of the parent's other threads (axi_segment_live_bytes) do not go on in the child:
 * left counted, they would keep every unmap of the child waiting. */
void axi_segment_fork_child(void) { ax_atomic_store_relaxed(&walkers, 0); }

void axi_segment_fork_release(void) {
  axi_unlock_after_fork(&abandoned_pop);
  axi_unlock_after_fork(&cache.lock);
}
