/* SPDX-License-Identifier: MIT */
/* Segments (segment.c): the segment map, carving room, pages taken and retired, the segment cache,
 * abandoning and adopting, purging. Layer: segments (docs/design/02-segments.md). */
#ifndef AX_SEGMENT_H
#define AX_SEGMENT_H

#include "print.h"
#include "state.h"

/* The segment map: one bit per 4 MiB of the 48-bit address space (8 MiB of zero pages
 * until used), set for the start of every live segment. free() consults it before
 * touching a segment header, so a foreign pointer is reported, never followed. */
#define AX_MAP_BITS (1u << (48 - AX_SEGMENT_SHIFT))
AXI_HIDDEN extern ax_atomic_word axi_segmap[AX_MAP_BITS / (8 * sizeof(uintptr_t))];

static inline bool axi_segmap_has(uintptr_t seg) {
  uintptr_t i = seg >> AX_SEGMENT_SHIFT;
  if (ax_unlikely(i >= AX_MAP_BITS))
    return false;
  const unsigned w = 8 * sizeof(uintptr_t);
  return (ax_atomic_load_relaxed(&axi_segmap[i / w]) >> (i % w)) & 1;
}

/* segment.c */
AXI_HIDDEN void axi_segment_validate(const ax_segment_t *seg);
AXI_HIDDEN bool axi_segment_open_to(ax_segment_t *seg, uintptr_t end);
/* Blocks up to end (an address in seg, a small, medium or large segment) may be carved:
 * their memory is open (segment.c's guards). post: false when the OS refused. */
static inline bool axi_segment_open(ax_segment_t *seg, uintptr_t end) {
  return end - (uintptr_t)seg <= seg->open_end || axi_segment_open_to(seg, end);
}
/* The cheap part of axi_segment_validate, for paths that read the header often. */
static inline void axi_segment_check_cookie(const ax_segment_t *seg) {
  if (ax_unlikely(seg->cookie != ((uintptr_t)seg ^ axi_cookie_key)))
    axi_corrupted(seg);
}
/* A page's fast_cap for `capacity` carved blocks (see ax_page_t): checked mode stores 0,
 * which fails every block-start test of the fast paths, so that every free and realloc
 * leaves them for check.c: the default mode pays nothing for the switch. */
static inline void axi_page_set_capacity(ax_page_t *page, uint32_t capacity) {
  ax_poke(&page->capacity, capacity); /* (read by other threads' batch walks: remote.c) */
  ax_atomic_store_relaxed(&page->fast_cap, axi_slow_only() ? 0 : capacity);
}
/* pre: block_size > 0. Sets div_inv and div_shift for axi_is_block. */
static inline void axi_page_set_divisor(ax_page_t *page, uint32_t block_size) {
  unsigned s = (unsigned)__builtin_ctz(block_size);
  uint64_t odd = block_size >> s, inv = odd; /* Newton: each step doubles the good bits */
  for (int i = 0; i < 5; i++)
    inv *= 2 - odd * inv;
  page->div_inv = inv;
  page->div_shift = (uint8_t)s;
}
AXI_HIDDEN void axi_page_validate(const ax_segment_t *seg, const ax_page_t *page);
AXI_HIDDEN uintptr_t axi_page_start(const ax_segment_t *seg, unsigned i);
AXI_HIDDEN uintptr_t axi_page_end(const ax_page_t *page);
AXI_HIDDEN ax_page_t *axi_segment_page_alloc(ax_heap_t *heap, enum ax_kind kind);
AXI_HIDDEN void axi_segment_page_retire(ax_heap_t *heap, ax_page_t *page);
AXI_HIDDEN bool axi_segment_page_retire_keep(ax_heap_t *heap, ax_page_t *page);
AXI_HIDDEN bool axi_segment_keep_on_exit(void);
AXI_HIDDEN void axi_segmap_set(ax_segment_t *seg, bool on);
/* Between hold and release no segment is unmapped, moved or joined: one that is still in the
 * segment map and the page map after hold stays mapped until release (its unmapper waits).
 * For reads of other heaps' segments (statistics, the double-free seek); keep them short. */
AXI_HIDDEN void axi_segments_hold(void);
AXI_HIDDEN void axi_segments_release(void);
/* Calls fn on every small, medium and large segment in the segment map, in address order.
 * pre: no other thread maps or unmaps one meanwhile (a fork child's handler, a test). */
AXI_HIDDEN void axi_segment_foreach(void (*fn)(ax_segment_t *, void *), void *arg);
AXI_HIDDEN uint64_t axi_segment_live_bytes(void); /* every page's live blocks (ax_ctl) */
AXI_HIDDEN ax_segment_t *axi_segment_map(enum ax_kind kind, size_t map_size, size_t align,
                                         size_t off);
AXI_HIDDEN void axi_segment_unmap(ax_segment_t *seg);
AXI_HIDDEN void axi_segment_split_off(ax_segment_t *seg, size_t map_size, enum ax_thp_advice thp);
AXI_HIDDEN void axi_segment_join(ax_segment_t *seg);
AXI_HIDDEN void axi_segment_hide_meta(ax_segment_t *seg, bool hide);
AXI_HIDDEN void axi_segment_abandon_all(ax_heap_t *heap);
AXI_HIDDEN void axi_segment_orphan(ax_segment_t *seg);
AXI_HIDDEN ax_segment_t *axi_segment_adopt(ax_heap_t *heap);
AXI_HIDDEN void axi_segment_purge(ax_heap_t *heap, bool force);
AXI_HIDDEN void axi_segment_purge_abandoned(bool force);
/* A link that may be cache->first, which is read without the lock: written atomically. */
static inline void axi_segcache_link(ax_segment_t **at, ax_segment_t *seg) {
  ax_atomic_store_relaxed((ax_atomic_word *)at, (uintptr_t)seg);
}
/* Drops what mode says of cache (segment.c; huge.c's cache of mappings uses it too). */
AXI_HIDDEN void axi_segcache_trim(ax_segcache_t *cache, enum ax_trim mode);
AXI_HIDDEN void axi_segment_cache_trim(enum ax_trim mode);
AXI_HIDDEN void axi_segment_fork_prepare(void);
AXI_HIDDEN void axi_segment_fork_child(void);
AXI_HIDDEN void axi_segment_fork_release(void);

#endif
