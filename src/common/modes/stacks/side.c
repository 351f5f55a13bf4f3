/* SPDX-License-Identifier: MIT */
/* A side word for every block, found from its address alone (side.h): a two-level directory of
 * the address space's regions, each region's side array mapped when a block of it is first
 * recorded. The leak checker keeps a live block's size and stack id there (leak.c), checked
 * mode the ids of the stacks that allocated and freed it (check.c). Nothing here runs unless
 * one of them is on.
 */
#include "modes/stacks/side.h"

#include "os.h"

ax_atomic_word axi_side_dir[AX_SIDE_L1];
/* (complemented: see side.h) */
ax_atomic_word axi_side_lo, axi_side_hi = ~(uintptr_t)0, axi_side_max;

/* [p, p + size) is in the span of recorded blocks, and size counts in its maximum: for each
 * region that gets a side array, and each huge block (the rest of them are in their regions,
 * and found through the page map). */
AX_NOINLINE void axi_side_span_add(uintptr_t p, size_t size) {
  uintptr_t end = p + (size ? size : 1), v = ax_atomic_load_relaxed(&axi_side_lo);
  while (~p > v && !ax_atomic_cas_acq_rel(&axi_side_lo, &v, ~p))
    ;
  v = ax_atomic_load_relaxed(&axi_side_hi);
  while (~end < v && !ax_atomic_cas_acq_rel(&axi_side_hi, &v, ~end))
    ;
  v = ax_atomic_load_relaxed(&axi_side_max);
  while (size > v && !ax_atomic_cas_acq_rel(&axi_side_max, &v, size))
    ;
}

/* A zeroed table of n words, published at *at unless another thread published one first. */
static ax_atomic_word *table_at(ax_atomic_word *at, size_t n) {
  uintptr_t t = ax_atomic_load_acquire(at);
  if (t)
    return (ax_atomic_word *)t;
  void *mine = axi_os_map(n * sizeof(ax_atomic_word));
  if (!mine)
    return NULL;
  axi_os_thp_advise(mine, n * sizeof(ax_atomic_word), false); /* a touched word: 4 KiB, not 2 MiB */
  if (ax_atomic_cas_acq_rel(at, &t, (uintptr_t)mine))
    return mine;
  axi_os_unmap(mine, n * sizeof(ax_atomic_word));
  return (ax_atomic_word *)t;
}

/* The side word of the block at p, its region's tables mapped; NULL when there is no memory
 * for them. pre: its region had no side array (axi_side_made). */
ax_atomic_word *axi_side_map(uintptr_t p) {
  /* (before any block of it is recorded) */
  axi_side_span_add(p & ~AX_SEGMENT_MASK, AX_SEGMENT_SIZE);
  ax_atomic_word *l2 = table_at(&axi_side_dir[(p >> 36) & (AX_SIDE_L1 - 1)], AX_SIDE_L2);
  ax_atomic_word *side =
      l2 ? table_at(&l2[(p >> AX_SEGMENT_SHIFT) & (AX_SIDE_L2 - 1)], AX_SIDE_WORDS) : NULL;
  return side ? side + ((p & AX_SEGMENT_MASK) >> 4) : NULL;
}

void axi_side_set(uintptr_t p, uint64_t v) {
  ax_atomic_word *w = v ? axi_side_made(p) : axi_side_word(p);
  if (w)
    ax_atomic_store_relaxed(w, v);
}

uint64_t axi_side_get(uintptr_t p) {
  ax_atomic_word *w = axi_side_word(p);
  return w ? ax_atomic_load_relaxed(w) : 0;
}
