/* SPDX-License-Identifier: MIT */
/* A side word for every block (side.c), found from its address alone: the leak checker keeps a
 * live block's size and stack there, checked mode the stacks that allocated and freed it.
 * Layer: stacks, the floor of the modes (docs/design/09-modes.md). */
#ifndef AX_STACKS_SIDE_H
#define AX_STACKS_SIDE_H

#include "atomic.h"
#include "types.h"

/* Each block has one word: a directory of the 4 MiB regions of the 48-bit address space (4,096
 * tables of 16,384 regions), each region's side array one word per 16 bytes (2 MiB, mapped when
 * a block of the region is first recorded, never unmapped: a segment mapped again at the
 * address finds it). What a word holds is its mode's (leak_gate.h, check.c); 0: nothing recorded.
 * The allocating thread writes it, whichever thread frees it clears it: a block has one owner
 * at a time (the program's hand-off, or the allocator's lists, orders the two), so no lock and
 * no atomic RMW. A huge block starts 256 bytes into its header's region, or at a region's start
 * when aligned to one: its word is at index 16 or 0, where no block of a page ever starts (the
 * header). */
#define AX_SIDE_L1 ((size_t)1 << (48 - 36))
#define AX_SIDE_L2 ((size_t)1 << (36 - AX_SEGMENT_SHIFT))
#define AX_SIDE_WORDS (AX_SEGMENT_SIZE >> 4)
AXI_HIDDEN extern ax_atomic_word axi_side_dir[AX_SIDE_L1];
/* Every block ever recorded lies in [lo, hi) (each region with a side array, each huge block
 * axi_side_span_add was told of), and none is bigger than max bytes: the leak scan's first test
 * of a word, and how far back a huge block's header may be (leak_scan.c). Each only grows, by
 * CAS. lo and hi complemented (a static program's data is a root: they must name no block);
 * none yet: lo ~0, hi 0. */
AXI_HIDDEN extern ax_atomic_word axi_side_lo, axi_side_hi, axi_side_max;

/* The side array of the region at r (NULL: none yet). Any thread. */
static inline ax_atomic_word *axi_side_array(uintptr_t r) {
  uintptr_t l2 = ax_atomic_load_acquire(&axi_side_dir[(r >> 36) & (AX_SIDE_L1 - 1)]);
  if (!l2)
    return NULL;
  return (ax_atomic_word *)ax_atomic_load_acquire(
      &((ax_atomic_word *)l2)[(r >> AX_SEGMENT_SHIFT) & (AX_SIDE_L2 - 1)]);
}
/* The side word of the block at p (NULL: its region has no side array). */
static inline ax_atomic_word *axi_side_word(uintptr_t p) {
  ax_atomic_word *side = axi_side_array(p);
  return side ? side + ((p & AX_SEGMENT_MASK) >> 4) : NULL;
}

/* [p, p + size) is in the span of recorded blocks, and size counts in its maximum. */
AXI_HIDDEN void axi_side_span_add(uintptr_t p, size_t size);
AXI_HIDDEN ax_atomic_word *axi_side_map(uintptr_t p);
/* The side word of the block at p, its region's tables mapped if need be; NULL when there is
 * no memory for them (the block then goes unrecorded). */
static inline ax_atomic_word *axi_side_made(uintptr_t p) {
  ax_atomic_word *w = axi_side_word(p);
  if (ax_likely(w != NULL))
    return w;
  return axi_side_map(p);
}

/* The side word of the block at p set to v (0: cleared), its tables mapped if need be; and
 * read (0: none). */
AXI_HIDDEN void axi_side_set(uintptr_t p, uint64_t v);
AXI_HIDDEN uint64_t axi_side_get(uintptr_t p);

#endif
