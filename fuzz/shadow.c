/* SPDX-License-Identifier: MIT */
/* The shadow model: block patterns, the live-interval set, and the checks made on every
 * block that enters or leaves it. */
#define _GNU_SOURCE
#include "shadow.h"

#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <axmalloc.h>

fz_block_t fz_slots[FZ_SLOTS];
int fz_plant;
size_t fz_live_bytes;

static uint64_t seed_counter;
static int nlive; /* live intervals (below) */

/* ---- failures ------------------------------------------------------------------------ */

void (*fz_fail_report)(void);

void fz_fail(const char *fmt, ...) {
  /* vfprintf to stderr: unbuffered, so the message is out before the trap even when
   * the heap is what broke (it allocates nothing for a plain format). */
  va_list ap;
  va_start(ap, fmt);
  fputs("fuzz_alloc: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  if (fz_fail_report) /* the totals so far: libFuzzer ends a crashed run without exit handlers */
    fz_fail_report();
  __builtin_trap();
}

void fz_shadow_reset(void) {
  memset(fz_slots, 0, sizeof fz_slots);
  fz_live_bytes = 0;
  seed_counter = 0;
  nlive = 0;
}

uint64_t fz_next_seed(void) { return ++seed_counter * 0xD1B54A32D192ED03ull; }

/* ---- patterns ------------------------------------------------------------------------ */

/* Word k of the pattern: a counter through a mixer, so a copy shifted by any number of
 * bytes or words, or taken from another block, does not match. */
static inline uint64_t pattern_word(uint64_t seed, size_t k) {
  uint64_t x = seed + k * 0x9E3779B97F4A7C15ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return x;
}

unsigned char fz_pattern_byte(uint64_t seed, size_t i) {
  return (unsigned char)(pattern_word(seed, i >> 3) >> ((i & 7) * 8));
}

/* Fill or check p[lo, hi) with the pattern. Blocks are 16-byte aligned, so offset
 * alignment is address alignment: whole words in the middle, bytes at the edges (the
 * byte formula is the little-endian view of the words; both targets are little-endian). */
static size_t range_op(unsigned char *p, uint64_t seed, size_t lo, size_t hi, bool fill) {
  size_t i = lo;
  for (; i < hi && (i & 7); i++) {
    if (fill)
      p[i] = fz_pattern_byte(seed, i);
    else if (p[i] != fz_pattern_byte(seed, i))
      return i;
  }
  for (; i + 8 <= hi; i += 8) {
    uint64_t w = pattern_word(seed, i >> 3), have;
    if (fill) {
      memcpy(p + i, &w, 8);
      continue;
    }
    memcpy(&have, p + i, 8);
    if (have != w) {
      while (p[i] == fz_pattern_byte(seed, i))
        i++;
      return i;
    }
  }
  for (; i < hi; i++) {
    if (fill)
      p[i] = fz_pattern_byte(seed, i);
    else if (p[i] != fz_pattern_byte(seed, i))
      return i;
  }
  return SIZE_MAX;
}

void fz_range_fill(unsigned char *p, uint64_t seed, size_t lo, size_t hi) {
  range_op(p, seed, lo, hi, true);
}

size_t fz_range_check(const unsigned char *p, uint64_t seed, size_t lo, size_t hi) {
  return range_op((unsigned char *)p, seed, lo, hi, false);
}

/* One piece [a, b) of the covered set, clipped to [lo, hi). */
static size_t piece_op(unsigned char *p, uint64_t seed, size_t a, size_t b, size_t lo, size_t hi,
                       bool fill) {
  a = a > lo ? a : lo;
  b = b < hi ? b : hi;
  return a < b ? range_op(p, seed, a, b, fill) : SIZE_MAX;
}

/* The covered bytes of a block of len usable bytes, req of them requested, intersected with
 * [lo, hi). Which bytes are covered depends on the offset alone, but for the two tails, so
 * after a realloc the covered bytes below min(old, new) - FZ_SAMPLE are the same set
 * whatever the old and new sizes. */
static size_t cover_op(unsigned char *p, size_t len, size_t req, uint64_t seed, size_t lo,
                       size_t hi, bool fill) {
  if (hi > len)
    hi = len;
  size_t bad = piece_op(p, seed, 0, FZ_FULL_CHECK, lo, hi, fill);
  for (size_t k = FZ_FULL_CHECK; k < hi && bad == SIZE_MAX; k += FZ_STRIDE)
    bad = piece_op(p, seed, k, k + FZ_SAMPLE, lo, hi, fill);
  if (bad == SIZE_MAX)
    bad = piece_op(p, seed, len > FZ_SAMPLE ? len - FZ_SAMPLE : 0, len, lo, hi, fill);
  if (bad == SIZE_MAX)
    bad = piece_op(p, seed, req > FZ_SAMPLE ? req - FZ_SAMPLE : 0, req, lo, hi, fill);
  return bad;
}

void fz_cover_fill(unsigned char *p, size_t len, size_t req, uint64_t seed, size_t lo, size_t hi) {
  cover_op(p, len, req, seed, lo, hi, true);
}

size_t fz_cover_check(const unsigned char *p, size_t len, size_t req, uint64_t seed, size_t lo,
                      size_t hi) {
  return cover_op((unsigned char *)p, len, req, seed, lo, hi, false);
}

size_t fz_find_nonzero(const unsigned char *p, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    if (w)
      break;
  }
  for (; i < n; i++)
    if (p[i])
      return i;
  return SIZE_MAX;
}

/* ---- live intervals ------------------------------------------------------------------ */

/* Live blocks sorted by address, as [start, end) with end = start + max(usable, 1):
 * at most FZ_SLOTS entries, so binary search and memmove are plenty. */
typedef struct interval {
  uintptr_t start, end;
  int slot;
} interval_t;
static interval_t live[FZ_SLOTS];

/* post: index of the first interval whose start is >= a. */
static int lower_bound(uintptr_t a) {
  int lo = 0, hi = nlive;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (live[mid].start < a)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void interval_insert(uintptr_t start, uintptr_t end, int slot) {
  int i = lower_bound(start);
  FZ_CHECK(i == 0 || live[i - 1].end <= start,
           "block %#lx..%#lx (slot %d) overlaps live block %#lx..%#lx (slot %d)",
           (unsigned long)start, (unsigned long)end, slot, (unsigned long)live[i - 1].start,
           (unsigned long)live[i - 1].end, live[i - 1].slot);
  FZ_CHECK(i == nlive || end <= live[i].start,
           "block %#lx..%#lx (slot %d) overlaps live block %#lx..%#lx (slot %d)",
           (unsigned long)start, (unsigned long)end, slot, (unsigned long)live[i].start,
           (unsigned long)live[i].end, live[i].slot);
  memmove(&live[i + 1], &live[i], (size_t)(nlive - i) * sizeof live[0]);
  live[i] = (interval_t){start, end, slot};
  nlive++;
}

static void interval_remove(uintptr_t start) {
  int i = lower_bound(start);
  FZ_CHECK(i < nlive && live[i].start == start, "shadow: no live interval at %#lx",
           (unsigned long)start);
  memmove(&live[i], &live[i + 1], (size_t)(nlive - i - 1) * sizeof live[0]);
  nlive--;
}

/* ---- blocks entering and leaving ---------------------------------------------------- */

void fz_adopt(int slot, const fz_block_t *b) {
  fz_block_t *s = &fz_slots[slot];
  FZ_CHECK(s->p == NULL, "shadow: slot %d is not empty", slot);
  uintptr_t a = (uintptr_t)b->p;
  FZ_CHECK(b->p != NULL, "allocation of %zu bytes (slot %d) returned NULL", b->req, slot);
  FZ_CHECK(a % 16 == 0, "block %p (%zu bytes) is not 16-byte aligned", (void *)b->p, b->req);
  FZ_CHECK(a % b->align == 0, "block %p (%zu bytes) is not aligned to %zu", (void *)b->p, b->req,
           b->align);
  size_t usable = malloc_usable_size(b->p);
  FZ_CHECK(usable >= b->req, "block %p: usable size %zu < requested %zu", (void *)b->p, usable,
           b->req);
  FZ_CHECK(ax_usable_size(b->p) == usable, "block %p: ax_usable_size %zu != malloc_usable_size %zu",
           (void *)b->p, ax_usable_size(b->p), usable);
  interval_insert(a, a + (usable ? usable : 1) + (fz_plant == FZ_PLANT_OVERLAP ? 16 : 0), slot);
  *s = *b;
  s->usable = usable;
  fz_live_bytes += usable;
}

static void check_block(int slot, const fz_block_t *s, const char *why) {
  size_t usable = malloc_usable_size(s->p) + (fz_plant == FZ_PLANT_USABLE);
  FZ_CHECK(usable == s->usable, "%s: block %p (slot %d, %zu bytes): usable size changed %zu -> %zu",
           why, (void *)s->p, slot, s->req, s->usable, usable);
  size_t bad = fz_cover_check(s->p, s->usable, s->req, s->seed, 0, s->usable);
  FZ_CHECK(bad == SIZE_MAX,
           "%s: block %p (slot %d, %zu bytes, usable %zu) corrupted at offset %zu: "
           "%#04x, expected %#04x",
           why, (void *)s->p, slot, s->req, s->usable, bad, s->p[bad],
           fz_pattern_byte(s->seed, bad));
}

fz_block_t fz_release(int slot, const char *why) {
  fz_block_t b = fz_slots[slot];
  FZ_CHECK(b.p != NULL, "shadow: slot %d is empty", slot);
  check_block(slot, &b, why);
  interval_remove((uintptr_t)b.p);
  fz_live_bytes -= b.usable;
  fz_slots[slot].p = NULL;
  return b;
}

void fz_check_slot(int slot, const char *why) {
  FZ_CHECK(fz_slots[slot].p != NULL, "shadow: slot %d is empty", slot);
  check_block(slot, &fz_slots[slot], why);
}

void fz_check_all(const char *why) {
  for (int i = 0; i < FZ_SLOTS; i++)
    if (fz_slots[i].p)
      check_block(i, &fz_slots[i], why);
}
