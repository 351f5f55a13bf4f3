/* SPDX-License-Identifier: MIT */
/* The page map (pagemap.h): one entry per 64 KiB slice, two levels.
 *
 * Second-level tables are mapped on demand and never unmapped, so a reader that loaded a
 * table pointer can always follow it. Entries are written by the thread that maps or
 * unmaps a segment, before the segment's first block is handed out and before its memory
 * goes back to the OS; readers (free from any thread) only look up slices of blocks they
 * hold, whose entries are stable while the block lives.
 */
#include "pagemap.h"

#include "os.h"

#define L2_N ((size_t)1 << AX_PM_L2_BITS)
#define L1_N ((size_t)1 << AX_PM_L1_BITS)

/* The shared table of zeros (8 MiB of BSS that is never written: no memory) and the first
 * level, every entry of which starts on it, biased as axi_pagemap_get expects (pagemap.h):
 * the fast path needs no NULL test for it. */
static ax_page_t *empty_l2[L2_N];
#define BIAS(i) ((uintptr_t)(i) << (AX_PM_L2_BITS + 3))
#define E1(i) ((uintptr_t)empty_l2 - BIAS(i))
#define E4(i) E1(4 * (i)), E1(4 * (i) + 1), E1(4 * (i) + 2), E1(4 * (i) + 3)
#define E16(i) E4(4 * (i)), E4(4 * (i) + 1), E4(4 * (i) + 2), E4(4 * (i) + 3)
#define E64(i) E16(4 * (i)), E16(4 * (i) + 1), E16(4 * (i) + 2), E16(4 * (i) + 3)
#define E256(i) E64(4 * (i)), E64(4 * (i) + 1), E64(4 * (i) + 2), E64(4 * (i) + 3)
#define E1024(i) E256(4 * (i)), E256(4 * (i) + 1), E256(4 * (i) + 2), E256(4 * (i) + 3)
_Static_assert(L1_N == 4096, "the initializer below writes 4096 entries");
uintptr_t axi_pagemap[L1_N] = {E1024(0), E1024(1), E1024(2), E1024(3)};

/* post: the second-level table of slice s's region, mapped if need be; NULL if the OS has
 * no memory for it. Two threads may race to map one: the loser unmaps its copy. */
static ax_page_t **l2_for(uintptr_t s) {
  uintptr_t i = (s >> AX_PM_L2_BITS) & (L1_N - 1);
  ax_atomic_word *at = (ax_atomic_word *)&axi_pagemap[i];
  uintptr_t l2 = ax_atomic_load_acquire(at) + BIAS(i);
  if (l2 != (uintptr_t)empty_l2)
    return (ax_page_t **)l2;
  uintptr_t fresh = (uintptr_t)axi_os_map(L2_N * sizeof(ax_page_t *));
  if (!fresh)
    return NULL;
  uintptr_t expect = (uintptr_t)empty_l2 - BIAS(i);
  if (ax_atomic_cas_acq_rel(at, &expect, fresh - BIAS(i)))
    return (ax_page_t **)fresh;
  axi_os_unmap((void *)fresh, L2_N * sizeof(ax_page_t *));
  return (ax_page_t **)(expect + BIAS(i));
}

/* The table of slice s's region as it is (the shared zeros if none). */
static ax_page_t **l2_of(uintptr_t s) {
  uintptr_t i = (s >> AX_PM_L2_BITS) & (L1_N - 1);
  return (ax_page_t **)(ax_atomic_load_acquire((ax_atomic_word *)&axi_pagemap[i]) + BIAS(i));
}

bool axi_pagemap_set(uintptr_t start, size_t len, ax_page_t *page) {
  for (uintptr_t s = start >> AX_SLICE_SHIFT, end = (start + len) >> AX_SLICE_SHIFT; s < end; s++) {
    ax_page_t **l2 = page ? l2_for(s) : l2_of(s);
    if (!l2)
      return false;
    if (l2 != empty_l2) /* clearing a slice that was never set: nothing to do */
      ax_poke_release(&l2[s & (L2_N - 1)], page);
  }
  return true;
}

/* Whether region i (64 GiB: slices i << AX_PM_L2_BITS ..) has a table of its own, that is,
 * whether a segment of a kind the page map covers was ever mapped there (tables stay). */
bool axi_pagemap_region_used(unsigned i) {
  return l2_of((uintptr_t)i << AX_PM_L2_BITS) != empty_l2;
}
