/* SPDX-License-Identifier: MIT */
/* Random intervals for the samplers (sample.c): the heap profiler's and guarded sampling's.
 * Layer: base (docs/design/00-base.md). */
#ifndef AX_SAMPLE_H
#define AX_SAMPLE_H

#include "types.h"

/* xorshift64*: one state per heap, its thread alone draws from it. pre: *state != 0. */
static inline uint64_t axi_rng_next(uint64_t *state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545f4914f6cdd1dull;
}
/* An exponential draw with the given mean, from *state. */
AXI_HIDDEN double axi_exp_draw(uint64_t *state, double mean);
/* floor(axi_exp_draw(state, mean) / size), saturated at limit: the allocations of size bytes
 * before the next sampled one, when every byte has the same chance 1/mean. */
AXI_HIDDEN uint64_t axi_skip_draw(uint64_t *state, double mean, size_t size, uint64_t limit);

/* Guarded sampling's countdown of class c in heap (types.h, ax_guard_heap_t): floor(X / class
 * size) blocks before its next guarded one, X exponential of mean axi_guard_mean; RECHECK
 * while that is 0 (ax_ctl may set it), PENDING for a class above a page (never guarded). */
#define AX_GUARD_RECHECK ((int64_t)1 << 20)
#define AX_GUARD_PENDING (INT64_MAX / 4)
AXI_HIDDEN void axi_guard_draw(ax_heap_t *heap, unsigned c);
#endif
