/* SPDX-License-Identifier: MIT */
/* Huge blocks (> AX_LARGE_MAX): one mapping each, starting with a segment header so that
 * free() finds them like any other block. A small cache keeps recently freed mappings so
 * that repeated large malloc/free pays neither mmap nor page faults. realloc resizes them with
 * mremap, which moves page tables instead of bytes: in place when the address space above is
 * free, else by moving the mapping. A block that has to move for a growth moves to a mapping
 * with inaccessible address space reserved after it (PROT_NONE, about as much again as the
 * block); its next growths give back the part they need and mremap grows the block over it in
 * place, so it keeps its address and its huge-page alignment. The reservation goes back at
 * free, at a shrink by more than half, when the block outgrows it, and when the OS refuses a
 * mapping; it is address space only (os_reserved), never resident (os_committed). See
 * "growth in reserved address space" below and docs/design/02-segments.md.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "huge.h"

#include "bulk.h"
#include "hooks.h"
#include "lock.h"
#include "os.h"
#include "segment.h"
#include "state.h"
#include "thp.h"
#include "track.h"

/* Cached mappings stay resident until unused for the purge delay. Large entries are
 * worth it: wl_bigbuf (2 threads, 64 MiB buffers prefaulted and copied, 4 rounds) pays
 * every page fault again in each round when its buffers are unmapped at free. */
#define AX_HUGE_CACHE_MAX 8                         /* cached mappings */
#define AX_HUGE_CACHE_BYTES ((size_t)1 << 30)       /* ...and their total size */
#define AX_HUGE_CACHE_ENTRY_MAX ((size_t)256 << 20) /* larger ones are unmapped at once */

static ax_segcache_t cache;

/* Set once the OS has refused a mapping (axi_huge_pack_tight): address space is short, so a
 * block may no longer hold more of a cached mapping than it needs. */
static bool tight;

static size_t page_round(size_t n) { return (n + axi_os_page - 1) & ~(axi_os_page - 1); }

/* seg's mapping was resized from old to now bytes (in place or moved): its counters follow.
 * in_use is the caller's. */
static void resized(ax_segment_t *seg, size_t old, size_t now) {
  seg->map_size = now;
  axi_thp_resized(seg, (intptr_t)now - (intptr_t)old);
  axi_stat_add(&axi_stats.os_reserved, &axi_stats.os_reserved_peak, (intptr_t)now - (intptr_t)old);
  axi_stat_add(&axi_stats.os_committed, &axi_stats.os_committed_peak,
               (intptr_t)now - (intptr_t)old);
}

/* Move the mapping of seg (old bytes) to a fresh segment-aligned reservation of need bytes.
 * The segment map forgets the old address before the move gives the range back: from then
 * on another thread may map a segment there, and a late clear would remove that one from the
 * map (t_race_remap stops a thread right after the move). post: the new address, or NULL with
 * the block where it was. */
static ax_segment_t *huge_move(ax_segment_t *seg, size_t old, size_t need) {
  ax_segment_t *target = axi_os_map_aligned(need, AX_SEGMENT_SIZE, 0);
  if (!target)
    return NULL;
  axi_segmap_set(seg, false);
  if (!axi_os_move(seg, old, need, target)) {
    axi_segmap_set(seg, true);
    axi_os_unmap(target, need);
    return NULL;
  }
  AX_HOOK(AX_HOOK_HUGE_MOVED, seg);
  AX_TRACK_SHOW_META(seg, AX_HUGE_OFFSET);    /* unmapped by the move */
  AX_TRACK_HIDE_META(target, AX_HUGE_OFFSET); /* (its kind is the moved header's) */
  target->cookie = (uintptr_t)target ^ axi_cookie_key;
  axi_segmap_set(target, true);
  return target;
}

/* Resize the mapping of seg from old to need bytes: in place when the kernel can, otherwise
 * by moving its page tables (huge_move). The counters follow; in_use is the caller's.
 * post: the segment (maybe moved), or NULL with the mapping as it was. */
static ax_segment_t *huge_resize(ax_segment_t *seg, size_t old, size_t need) {
  ax_segment_t *moved = seg;
  if (!axi_os_remap(seg, old, need) && !(moved = huge_move(seg, old, need)))
    return NULL;
  resized(moved, old, need);
  return moved;
}

/* ---- growth in reserved address space ----------------------------------------------------
 * A block that realloc grows and that cannot grow where it is (the address space above it is
 * taken: mmap places mappings top down, so it usually is) moves its page tables to a mapping
 * with a reservation after it: inaccessible address space (PROT_NONE: no memory, and no commit
 * charge until opened), up to about twice the block, aligned as a fresh mapping of its size
 * would be. The growths that fit there take the next part in place (resv_grow: that part is
 * unmapped and the block's mapping grows over it by mremap, its huge-page advice with it), so
 * the block keeps its address and its alignment, and a growth in it opens whole huge pages
 * where the block is advised (grow_round), which fault in as huge pages: a block moved to a
 * plain mapping of its size keeps the 4 KiB pages of its partly used last huge page for good.
 * A reservation goes back to the OS when its block shrinks by more than half (a smaller shrink
 * keeps the block as it is: alloc.c), is freed (before the mapping is cached or unmapped),
 * grows past it (the next move takes a new one), and when address space runs short: a refused
 * mapping gives every one back (axi_huge_pack_tight) and none is made after; under RLIMIT_AS
 * none is made that would take more than half of what is left. It counts in os_reserved
 * (stats.mapped and stats.retained: address space), never in os_committed (stats.resident)
 * nor in the block's usable size. Blocks with a reservation are listed in a table of
 * AX_RESERVE_SLOTS, so that a refused mapping can find them; a full table gives up its oldest
 * entry's. The table, a block's reserve_end and, while it has one, its map_size change under
 * resv_lock only: another thread may give the reservation back (a refused mapping, a full
 * table). Its owner makes one only by a realloc, and gives it back before the mapping is cached
 * or unmapped, so the table names live mappings only. A fork child inherits the reservations
 * with the mappings, and the table with them (resv_lock is taken around fork). The profiler's
 * slot segments never take one: their realloc is the profiler's. */
#define AX_RESERVE_SLOTS 64
#define AX_RESERVE_MAX ((size_t)1 << 30) /* the most address space a reservation adds */

static ax_lock_t resv_lock;
static ax_segment_t *resv[AX_RESERVE_SLOTS];
static unsigned resv_next; /* the entry a full table gives up next */

static size_t resv_end(const ax_segment_t *seg) {
  return (size_t)seg->reserve_end << AX_SEGMENT_SHIFT;
}

/* seg leaves the table: it has no reservation now. pre: resv_lock is held. */
static void resv_unlist(ax_segment_t *seg) {
  for (unsigned i = 0; i < AX_RESERVE_SLOTS; i++)
    if (resv[i] == seg)
      resv[i] = NULL;
  ax_poke(&seg->reserve_end, (uint16_t)0);
}

/* seg's reservation [from, its end) goes back to the OS. pre: resv_lock is held. */
static void resv_drop(ax_segment_t *seg, size_t from) {
  size_t tail = resv_end(seg) - from;
  if (tail)
    axi_os_unmap((char *)seg + from, tail);
  axi_stat_add(&axi_stats.os_reserved, NULL, -(intptr_t)tail);
  resv_unlist(seg);
}

/* seg's reservation, if it has one, goes back to the OS. */
static void resv_release(ax_segment_t *seg) {
  if (!ax_peek(&seg->reserve_end)) /* (only its owner makes one) */
    return;
  axi_lock(&resv_lock);
  if (seg->reserve_end) /* (another thread may have given it back) */
    resv_drop(seg, seg->map_size);
  axi_unlock(&resv_lock);
}

/* Address space is short: every reservation goes back to the OS, and none is made from now
 * on (a lock held elsewhere leaves them to their blocks' frees). */
void axi_huge_pack_tight(void) {
  tight = true;
  if (!axi_trylock(&resv_lock))
    return;
  for (unsigned i = 0; i < AX_RESERVE_SLOTS; i++)
    if (resv[i])
      resv_drop(resv[i], resv[i]->map_size);
  axi_unlock(&resv_lock);
}

static size_t round_up(size_t n, size_t unit) { return (n + unit - 1) & ~(unit - 1); }

/* What a growth of seg to need bytes (a multiple of the OS page) opens where its mapping is
 * advised (and huge pages are no bigger than a segment): up to the next huge page, so that the
 * growth's last huge page faults in as one, when the block is growing again (whole: it has, or
 * just outgrew, a reservation: growths of vectors fill it) or when that wastes at most an eighth
 * (axi_thp_round's rule: a block's first growth may be its last). Else need. wl_vecgrow's
 * page faults: 177k rounding no growth, 76k rounding every one, 112k so (122k before the
 * reservations); but rounding every one cost wl_bitset +17% peak RSS (12.9 -> 15.0 MB: each
 * 2.5 MB bitset, grown once past 1 MiB, took 4 MiB), and so it is as before. */
static size_t grow_round(const ax_segment_t *seg, size_t need, bool whole) {
  size_t hp = axi_thp_size();
  if (seg->thp != AX_THP_ADV_HUGE || !hp || hp > AX_SEGMENT_SIZE)
    return need;
  return whole ? round_up(need, hp) : axi_thp_round(need);
}

/* Grow seg to need bytes inside its reservation (opened up to grow_round's). That part
 * goes back to the OS and the block's mapping grows over it in place (mremap): an mprotect of
 * the part would make a mapping of its own, which the kernel does not merge into a moved one
 * (its page offset is the old address's) and which mremap cannot then grow or move with the
 * block. Another thread may map something in the part between the two calls: then the block
 * stays as it was and the rest of the reservation goes too.
 * post: true with map_size set; false when it has none, or need does not fit in it, or the
 * kernel refused: the mapping is as it was. */
static bool resv_grow(ax_segment_t *seg, size_t need) {
  if (!ax_peek(&seg->reserve_end))
    return false;
  bool grown = false;
  axi_lock(&resv_lock);
  size_t end = resv_end(seg), old = seg->map_size;
  if (need <= end) { /* (0 when given back meanwhile) */
    size_t to = grow_round(seg, need, true);
    to = to < end ? to : end;
    axi_os_unmap((char *)seg + old, to - old);
    if ((grown = axi_os_remap(seg, old, to))) {
      seg->map_size = to; /* (os_reserved holds it already) */
      axi_thp_resized(seg, (intptr_t)(to - old));
      axi_stat_add(&axi_stats.os_committed, &axi_stats.os_committed_peak, (intptr_t)(to - old));
      if (to == end)
        resv_unlist(seg);
    } else {
      axi_stat_add(&axi_stats.os_reserved, NULL, -(intptr_t)(to - old));
      resv_drop(seg, to);
    }
  }
  axi_unlock(&resv_lock);
  return grown;
}

/* List seg, whose mapping reserves up to end bytes, in the table. pre: resv_lock is held. */
static void resv_list(ax_segment_t *seg, size_t end) {
  unsigned i = 0;
  while (i < AX_RESERVE_SLOTS && resv[i])
    i++;
  if (i == AX_RESERVE_SLOTS) { /* full: the oldest gives its reservation up */
    i = resv_next++ % AX_RESERVE_SLOTS;
    resv_drop(resv[i], resv[i]->map_size);
  }
  resv[i] = seg;
  ax_poke(&seg->reserve_end, (uint16_t)(end >> AX_SEGMENT_SHIFT));
  if (tight) /* (made while a refused mapping gave the others back) */
    resv_drop(seg, seg->map_size);
}

/* Move seg's mapping (old bytes) to a fresh reservation of about twice need bytes, need of
 * them opened, as huge_move moves it. post: the new address, with map_size and the counters
 * set, or NULL with the block where it was: no reservation may be made (address space is
 * short, or the kernel refused it). */
static ax_segment_t *resv_move(ax_segment_t *seg, size_t old, size_t need) {
  size_t hp = axi_thp_size(), extra = need < AX_RESERVE_MAX ? need : AX_RESERVE_MAX;
  /* aligned as axi_huge_alloc aligns a fresh mapping of its size: 32 and 512 MiB huge pages */
  size_t align =
      seg->thp == AX_THP_ADV_HUGE && hp > AX_SEGMENT_SIZE && need >= hp ? hp : AX_SEGMENT_SIZE;
  if (tight || seg->prof_slots || need > AX_ADDRESS_LIMIT / 4)
    return NULL;
  size_t end = round_up(need + extra, align), open = need;
  if (end - 1 > ((size_t)UINT16_MAX << AX_SEGMENT_SHIFT) - 1)
    return NULL; /* (more than 256 GiB: reserve_end cannot say where it ends) */
  /* under RLIMIT_AS: the block's growth, and the reservation only if it leaves as much free */
  size_t room = axi_os_address_room();
  if (room < end || room - end < end - open)
    return NULL;
  char *target = axi_os_reserve_aligned(end, align, 0);
  if (!target)
    return NULL;
  axi_segmap_set(seg, false); /* (as huge_move) */
  if (!axi_os_move(seg, old, open, target)) {
    axi_segmap_set(seg, true);
    axi_os_unmap(target, end);
    return NULL;
  }
  AX_HOOK(AX_HOOK_HUGE_MOVED, seg);
  AX_TRACK_SHOW_META(seg, AX_HUGE_OFFSET);
  ax_segment_t *moved = (ax_segment_t *)target;
  AX_TRACK_HIDE_META(moved, AX_HUGE_OFFSET);
  moved->cookie = (uintptr_t)moved ^ axi_cookie_key;
  resized(moved, old, open);
  axi_stat_add(&axi_stats.os_reserved, &axi_stats.os_reserved_peak, (intptr_t)(end - open));
  axi_lock(&resv_lock);
  resv_list(moved, end);
  axi_unlock(&resv_lock);
  axi_segmap_set(moved, true);
  return moved;
}

/* Grow seg's mapping from old to need bytes: in place when the kernel can, else moved to a
 * reservation (resv_move) or, when none may be made, to a mapping of need bytes (huge_move).
 * post: the segment (maybe moved) with map_size and the counters set, or NULL with the mapping
 * as it was. */
static ax_segment_t *huge_grow(ax_segment_t *seg, size_t old, size_t need) {
  if (axi_os_remap(seg, old, need)) {
    resized(seg, old, need);
    return seg;
  }
  ax_segment_t *moved = resv_move(seg, old, need);
  if (!moved && (moved = huge_move(seg, old, need)))
    resized(moved, old, need);
  return moved;
}

/* ---- the mapping cache ----------------------------------------------------------------- */
/* Freed huge mappings wait here, resident, until unused for the purge delay (trim). A
 * request takes the entry that serves it with the least work: one that fits (holds it,
 * wastes at most an eighth) as it is; else the smallest larger one, cut down to the
 * request and its tail beyond the next segment boundary cached again; else the largest one, grown,
 * so that only what it lacks faults in. A mapping freed next to a cached one joins it, so splits do
 * not fragment the cache for good. Measured with malloc-large (20 live blocks of 5-25 MiB replaced
 * at random, each zeroed by the program): a 2x best fit missed one request in ten and faulted in
 * all of it (948k page faults per run); trimming instead of splitting, 1.37M. */

/* A cached mapping serves need bytes as it is when it is at most twice as big; once address
 * space is short, at most an eighth bigger (as a size class may). A bigger one is cut down
 * (cache_fit). */
static bool fits(size_t sz, size_t need) {
  return sz >= need && sz - need <= (tight ? need / 8 : need);
}

/* Lower is better: fits as is, then cut down (by what is cut), then grown (by what is added). */
static uint64_t cost(size_t sz, size_t need) {
  if (sz >= need)
    return fits(sz, need) ? sz - need : ((uint64_t)1 << 62) + (sz - need);
  return ((uint64_t)1 << 63) + (need - sz);
}

static ax_segment_t *cache_take(size_t need) {
  ax_segment_t *best = NULL, **best_at = NULL;
  if (!ax_atomic_load_relaxed((ax_atomic_word *)&cache.first) || !axi_trylock(&cache.lock))
    return NULL;
  for (ax_segment_t **at = &cache.first; *at; at = &(*at)->next)
    if (!best || cost((*at)->map_size, need) < cost(best->map_size, need)) {
      best = *at;
      best_at = at;
    }
  if (best) {
    axi_segcache_link(best_at, best->next);
    cache.bytes -= best->map_size;
    cache.count--;
  }
  axi_unlock(&cache.lock);
  return best;
}

/* Unlink *at from the cache. pre: the lock is held. */
static ax_segment_t *cache_unlink(ax_segment_t **at) {
  ax_segment_t *seg = *at;
  axi_segcache_link(at, seg->next);
  cache.bytes -= seg->map_size;
  cache.count--;
  return seg;
}

/* pre: the lock is held. */
static void cache_link(ax_segment_t *seg, uint64_t cached_ms) {
  seg->cached_ms = cached_ms;
  seg->next = cache.first;
  axi_segcache_link(&cache.first, seg);
  cache.bytes += seg->map_size;
  cache.count++;
}

/* Cache seg, joined with the cached mappings right before and after it. post: false when
 * it did not fit (the caller unmaps it). */
static bool cache_put(ax_segment_t *seg) {
  if (!axi_trylock(&cache.lock))
    return false;
  for (ax_segment_t **at = &cache.first; *at;) {
    ax_segment_t *e = *at;
    if ((char *)e + e->map_size == (char *)seg) { /* e is right before seg: e takes it */
      cache_unlink(at);
      e->map_size += seg->map_size;
      axi_segment_join(seg);
      seg = e;
      at = &cache.first;                                   /* seg grew: look again */
    } else if ((char *)seg + seg->map_size == (char *)e) { /* e is right after seg */
      cache_unlink(at);
      seg->map_size += e->map_size;
      axi_segment_join(e);
      at = &cache.first;
    } else {
      at = &e->next;
    }
  }
  bool kept = seg->map_size <= AX_HUGE_CACHE_ENTRY_MAX && cache.count < AX_HUGE_CACHE_MAX &&
              cache.bytes + seg->map_size <= AX_HUGE_CACHE_BYTES;
  if (kept)
    cache_link(seg, axi_now_ms());
  axi_unlock(&cache.lock);
  return kept;
}

/* A block of need bytes keeps head bytes of its mapping; once address space is short
 * (tight) it keeps only need, and the rest goes back to the OS. post: the bytes it keeps. */
static size_t keep_head(ax_segment_t *seg, size_t need, size_t head) {
  if (!tight || head <= need) /* need is a multiple of the OS page */
    return head;
  axi_os_unmap((char *)seg + need, head - need);
  axi_thp_resized(seg, -(intptr_t)(head - need));
  axi_stat_add(&axi_stats.os_reserved, NULL, -(intptr_t)(head - need));
  axi_stat_add(&axi_stats.os_committed, NULL, -(intptr_t)(head - need));
  return need;
}

/* A cached mapping taken for a block of need bytes. One that is too big is split at the
 * segment boundary after need, and the rest, a segment or more, cached again. What lies
 * between need and that boundary stays with the block: giving it back, then faulting it in
 * again for the next bigger request, doubled malloc-large's page faults (2.16M against 188k).
 * Once address space is short it goes back to the OS (under RLIMIT_AS, blocks of 2 MiB that
 * each held 4 MiB lost t_oom_cxx its last block). One that is too small is grown
 * (in place, or by moving page tables): only what it lacks faults in.
 * post: the mapping to use, or NULL: map a fresh one. */
static ax_segment_t *cache_fit(ax_segment_t *seg, size_t need) {
  size_t sz = seg->map_size;
  if (sz < need) {
    ax_segment_t *grown = huge_resize(seg, sz, need);
    if (!grown)
      axi_segment_unmap(seg);
    return grown;
  }
  if (fits(sz, need))
    return seg;
  size_t head = (need + AX_SEGMENT_MASK) & ~AX_SEGMENT_MASK;
  if (sz >= head + AX_SEGMENT_SIZE) {
    ax_segment_t *tail = (ax_segment_t *)((char *)seg + head);
    axi_segment_split_off(tail, sz - head, (enum ax_thp_advice)seg->thp);
    if (!cache_put(tail))
      axi_segment_unmap(tail);
  } else {
    head = sz;
  }
  seg->map_size = keep_head(seg, need, head);
  return seg;
}

/* Grow seg's mapping in place over the cached mapping right after it, when that one holds
 * what the block lacks: no system call, and its pages are resident already (realloc/double
 * and realloc/huge: a block that took the head of a cached mapping grows into its tail,
 * where mremap would have found the tail in the way and moved the block to fresh pages).
 * The rest, from the segment boundary after need on, stays cached.
 * post: whether seg now holds need bytes (map_size set). */
static bool grow_over_cached(ax_segment_t *seg, size_t need) {
  char *end = (char *)seg + seg->map_size;
  if (!ax_atomic_load_relaxed((ax_atomic_word *)&cache.first) || !axi_trylock(&cache.lock))
    return false;
  ax_segment_t **at = &cache.first;
  while (*at && (char *)*at != end)
    at = &(*at)->next;
  ax_segment_t *next = *at;
  bool grown = next && seg->map_size + next->map_size >= need;
  if (grown) {
    uint64_t cached_ms = next->cached_ms;
    size_t total = seg->map_size + cache_unlink(at)->map_size;
    axi_segment_join(next);
    size_t head = (need + AX_SEGMENT_MASK) & ~AX_SEGMENT_MASK;
    if (total >= head + AX_SEGMENT_SIZE) { /* joined mappings have no cached neighbour */
      ax_segment_t *tail = (ax_segment_t *)((char *)seg + head);
      axi_segment_split_off(tail, total - head, (enum ax_thp_advice)seg->thp);
      cache_link(tail, cached_ms);
    } else {
      head = total;
    }
    seg->map_size = head;
  }
  axi_unlock(&cache.lock);
  if (grown) /* (the OS calls of the tight case are made without the lock) */
    seg->map_size = keep_head(seg, need, seg->map_size);
  return grown;
}

void axi_huge_cache_trim(enum ax_trim mode) { axi_segcache_trim(&cache, mode); }

/* Zero [p, p + size) of a mapping: whole OS pages by handing them back to the kernel,
 * the ragged ends (and everything, should madvise refuse) with the bulk kernel.
 * pre: p 16-byte aligned. */
static void huge_zero(char *p, size_t size) {
  size_t n = (size + 15) & ~(size_t)15;
  /* three samples: a block read only at its ends has its middle still unmapped */
  if (axi_os_resident(p) && axi_os_resident(p + n / 2) && axi_os_resident(p + n - 1)) {
    axi_bulk_zero(p, n);
    return;
  }
  char *lo = (char *)(((uintptr_t)p + axi_os_page - 1) & ~(axi_os_page - 1));
  char *hi = (char *)(((uintptr_t)p + n) & ~(axi_os_page - 1));
  if (hi <= lo || !axi_os_zero_pages(lo, (size_t)(hi - lo))) {
    axi_bulk_zero(p, n);
    return;
  }
  axi_bulk_zero(p, (size_t)(lo - p));
  axi_bulk_zero(hi, (size_t)(p + n - hi));
}

static void *huge_setup(ax_segment_t *seg, uintptr_t off) {
  seg->kind = AX_KIND_HUGE;
  seg->page_shift = AX_HUGE_PAGE_SHIFT;
  seg->npages = 1;
  seg->used_pages = 1;
  seg->free_mask = seg->dirty_mask = seg->purged_mask = 0;
  seg->prof = NULL; /* not sampled (prof.c) */
  ax_page_t *page = &seg->pages[0];
  memset(page, 0, sizeof *page);
  page->in_use = 1;
  page->used = 1;
  page->area = (uintptr_t)seg + off; /* fast_cap stays 0: free() takes the irregular path */
  return (void *)page->area;
}

/* Where the block starts in its mapping. Up to half a segment of alignment it is `align`
 * bytes in (the mapping is segment-aligned). A block aligned to a segment or more would be
 * the first byte of its segment-map slot, where the header belongs: it starts one segment
 * in instead, in a mapping placed so that this is aligned, with the header in the slot
 * before (axi_huge_aligned_header). Only that header page of the first segment is touched. */
static uintptr_t block_offset(size_t align) {
  return align >= AX_SEGMENT_SIZE ? AX_SEGMENT_SIZE
         : align > AX_HUGE_OFFSET ? align
                                  : AX_HUGE_OFFSET;
}

/* The mapping is segment-aligned; past one segment of alignment it starts one segment
 * before a multiple of align (block_offset). */
static size_t map_align_of(size_t align) {
  return align > AX_SEGMENT_SIZE ? align : AX_SEGMENT_SIZE;
}

/* pre: align a power of two. post: whether some address space could hold the mapping. */
bool axi_huge_possible(size_t size, size_t align) {
  uintptr_t off = block_offset(align);
  size_t map_align = map_align_of(align);
  return map_align <= AX_ADDRESS_LIMIT - off && size <= AX_ADDRESS_LIMIT - off - map_align;
}

/* pre: align is a power of two.
 * post: a block of size bytes aligned to align (zeroed if zero), or NULL with ENOMEM. A
 * request no address space can hold fails at once, without a system call. */
void *axi_huge_alloc(ax_heap_t *heap, size_t size, size_t align, bool zero) {
  if (!axi_huge_possible(size, align)) {
    errno = ENOMEM;
    return NULL;
  }
  uintptr_t off = block_offset(align);
  size_t map_align = map_align_of(align);
  size_t map_off = align > AX_SEGMENT_SIZE ? AX_SEGMENT_SIZE : 0;
  /* (a block of 0 bytes is inside it too) */
  size_t need = axi_thp_round(page_round(off + (size ? size : 1)));
  /* cached mappings are segment-aligned: they serve up to one segment of alignment */
  ax_segment_t *seg = align <= AX_SEGMENT_SIZE ? cache_take(need) : NULL;
  size_t reused = seg ? seg->map_size : 0; /* bytes of the mapping that are not fresh */
  if (seg)
    seg = cache_fit(seg, need);
  bool fresh = seg == NULL;
  if (fresh && map_off == 0 && axi_thp_align(need) > map_align) /* (32 and 512 MiB ones) */
    seg = axi_segment_map(AX_KIND_HUGE, need, axi_thp_align(need), 0);
  if (fresh && !seg && !(seg = axi_segment_map(AX_KIND_HUGE, need, map_align, map_off))) {
    /* the OS refused: the caller decides what to release (heap.c) */
    errno = ENOMEM;
    return NULL;
  }
  if (fresh)
    axi_thp_fresh(seg, need);
  else
    ax_atomic_fetch_add_relaxed(&axi_stats.huge_cache_hits, 1);
  heap->stats.huge_allocs++;
  heap->stats.huge_bytes += seg->map_size - off;
  ax_atomic_fetch_add_relaxed(&axi_stats.huge_live, seg->map_size - off);
  axi_stat_add(&axi_stats.in_use, &axi_stats.in_use_peak, (intptr_t)seg->map_size);
  void *p = huge_setup(seg, off);
  /* a fresh mapping reads as zero; a cached one was no-access since its free */
  AX_TRACK_MALLOC(p, seg->map_size - off, fresh);
  /* A fresh mapping is zero: calloc touches none of its pages. A cached one that was
   * used (its first, middle and last pages are resident) is zeroed with the bulk kernel, which is
   * far cheaper than faulting it in again (bm_calloc/recycled, 4 MiB: 29x slower than glibc
   * when its pages were given back); one that was never touched gives its pages back, so
   * that zeroing does not fault it in (bm_calloc/fresh, 64 MiB: 900 us, glibc 10 us). */
  if (zero && !fresh) { /* a grown mapping's new tail is fresh: zero */
    size_t old = reused > off ? reused - off : 0, n = size < old ? size : old;
    huge_zero(p, n);
    AX_TRACK_DEFINED(p, size); /* madvise'd pages read as zero: memcheck cannot know */
  }
  return p;
}

/* A huge block aligned to a segment or more is the first byte of a segment-map slot whose
 * bit is clear; its header is the segment before (block_offset).
 * post: that header (its block may be freed already: the caller checks in_use), or NULL
 * when p is no such block. */
ax_segment_t *axi_huge_aligned_header(const void *p) {
  uintptr_t a = (uintptr_t)p;
  if ((a & AX_SEGMENT_MASK) || a < AX_SEGMENT_SIZE || !axi_segmap_has(a - AX_SEGMENT_SIZE))
    return NULL;
  ax_segment_t *seg = (ax_segment_t *)(a - AX_SEGMENT_SIZE);
  axi_segment_validate(seg);
  return seg->kind == AX_KIND_HUGE && seg->pages[0].area == a ? seg : NULL;
}

/* The calling thread's counts for ax_ctl's thread.deallocated and thread.allocated (ctl.c);
 * none for a thread without a heap (axi_heap_empty is every such thread's). */
static void huge_count_freed(size_t freed, size_t made) {
  ax_heap_t *heap = axi_tls_heap;
  if (heap != &axi_heap_empty) {
    heap->stats.huge_freed_bytes += freed;
    heap->stats.huge_bytes += made;
  }
}

void axi_huge_free(ax_segment_t *seg) {
  AX_TRACK_FREE((void *)seg->pages[0].area);
  seg->pages[0].in_use = 0; /* a second free of it is now an invalid pointer */
  size_t usable = seg->map_size - (seg->pages[0].area - (uintptr_t)seg);
  huge_count_freed(usable, 0);
  ax_atomic_fetch_add_relaxed(&axi_stats.huge_live, -(uintptr_t)usable);
  axi_stat_add(&axi_stats.in_use, NULL, -(intptr_t)seg->map_size);
  resv_release(seg); /* (cached mappings and unmapped ones have none) */
  if (!cache_put(seg))
    axi_segment_unmap(seg);
}

/* Resize a huge block: keep it when the new size fits and does not waste more than half;
 * grow it inside its reservation, or over a cached mapping right after it, or let the kernel
 * grow it (in place, or by moving page tables, to a reservation when one may be made: see
 * above); shrink it in place, its reservation given back.
 * post: the block (maybe moved), or NULL with the old block untouched. */
void *axi_huge_realloc(ax_segment_t *seg, void *p, size_t size) {
  uintptr_t off = (uintptr_t)p - (uintptr_t)seg;
  if (size > PTRDIFF_MAX - off - AX_SEGMENT_SIZE)
    return NULL;
  size_t need = page_round(off + size), old = seg->map_size;
  if (need <= old && need >= old / 2)
    return p;
  ax_segment_t *moved = seg;
  bool growing = ax_peek(&seg->reserve_end) != 0; /* (before resv_grow or resv_release) */
  if (need > old && resv_grow(seg, need)) {
    need = seg->map_size;
  } else {
    resv_release(seg); /* a shrink, or a growth past it: the next move takes a new one */
    if (need > old)
      need = grow_round(seg, need, growing);
    if (need > old && grow_over_cached(seg, need))
      need = seg->map_size;
    else if (!(moved = need > old ? huge_grow(seg, old, need) : huge_resize(seg, old, need)))
      return NULL;
    need = moved->map_size;
  }
  moved->pages[0].area = (uintptr_t)moved + off;
  if (need > old) /* what thp.c advises now (a block made before auto's first probe, or since
                   * the probes changed their mind: one madvise then, none otherwise) */
    axi_thp_apply(moved, need, AX_KIND_HUGE);
#if AX_TRACKING
  if (moved == seg) { /* memcheck knows a checked block by its requested size */
    AX_TRACK_RESIZE(p, old - off, need - off);
  } else { /* the kernel moved the pages: their contents stay valid, memcheck's view not */
    AX_TRACK_FREE(p);
    AX_TRACK_MALLOC((char *)moved + off, need - off, 0);
    AX_TRACK_DEFINED((char *)moved + off, (old < need ? old : need) - off);
  }
#endif
  axi_stat_add(&axi_stats.in_use, &axi_stats.in_use_peak, (intptr_t)need - (intptr_t)old);
  huge_count_freed(old - off, need - off); /* a resize: the old block freed, a new one made */
  ax_atomic_fetch_add_relaxed(&axi_stats.huge_live, (uintptr_t)(need - old));
  return (char *)moved + off;
}

void axi_huge_fork_prepare(void) {
  axi_lock_for_fork(&cache.lock);
  axi_lock_for_fork(&resv_lock);
}
void axi_huge_fork_release(void) {
  axi_unlock_after_fork(&resv_lock);
  axi_unlock_after_fork(&cache.lock);
}
