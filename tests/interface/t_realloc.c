/* SPDX-License-Identifier: MIT */
/* realloc: NULL and zero arguments, contents preserved (min(old, new) bytes) across every
 * size-class boundary, into and out of huge sizes, and huge growth step by step. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "testutil.h"

#define MIB ((size_t)1 << 20)

/* Resize p (holding `old` pattern bytes tagged seed) to n; checks the kept prefix and
 * fills the new tail, so the result holds n pattern bytes. */
static char *resize(char *p, size_t old, size_t n, uint32_t seed) {
  char *q = realloc(p, n);
  CHECKF(q != NULL, "realloc(%p, %zu) from %zu returned NULL", (void *)p, n, old);
  CHECKF(((uintptr_t)q & 15) == 0, "realloc -> %p misaligned", (void *)q);
  CHECKF(malloc_usable_size(q) >= n, "realloc to %zu: usable %zu", n, malloc_usable_size(q));
  size_t keep = old < n ? old : n;
  size_t bad = pat_find_bad(q, 0, keep, seed);
  CHECKF(bad == PAT_OK, "realloc %zu -> %zu lost byte %zu of %zu kept", old, n, bad, keep);
  if (n > old)
    pat_fill(q, old, n, seed);
  return q;
}

static ax_stats_t s0, s1;

static void test_null_and_zero(void) {
  /* realloc(NULL, n) is malloc(n): a new live block of n's class. While the heap profiler
   * samples, the block may be a sampled one, in a slot of its own: class_live counts the
   * blocks in the class's pages, so the counts are checked without it (the sizes still are). */
  ax_info_t info;
  ax_info(&info);
  bool counts = info.prof_sample == 0;
  unsigned c = 1;
  while (ax_class_size(c) < 100)
    c++;
  ax_stats_get(&s0);
  char *p = realloc(NULL, 100);
  ax_stats_get(&s1);
  CHECK(p != NULL);
  CHECK(counts ? malloc_usable_size(p) == ax_class_size(c) : malloc_usable_size(p) >= 100);
  CHECKF(!counts || s1.class_live[c] == s0.class_live[c] + 1,
         "realloc(NULL, 100): live %llu -> %llu", (unsigned long long)s0.class_live[c],
         (unsigned long long)s1.class_live[c]);
  memset(p, 1, 100);

  /* realloc(p, 0) frees p and returns NULL (glibc): the class's live count drops */
  ax_stats_get(&s0);
  void *r = realloc(p, 0);
  ax_stats_get(&s1);
  CHECK(r == NULL);
  CHECKF(!counts || s1.class_live[c] + 1 == s0.class_live[c],
         "realloc(p, 0) did not free: live %llu -> %llu", (unsigned long long)s0.class_live[c],
         (unsigned long long)s1.class_live[c]);

  /* same for a huge block: its mapping is released or cached, not kept live */
  p = malloc(3 * MIB);
  CHECK(p != NULL);
  CHECK(realloc(p, 0) == NULL);

  /* realloc(NULL, 0) behaves like malloc(0): a unique freeable pointer */
  void *a = realloc(NULL, 0), *b = realloc(NULL, 0);
  CHECK(a != NULL && b != NULL && a != b);
  free(a);
  free(b);
}

/* Grow then shrink through every class size and its neighbours. */
static void test_class_sweep(void) {
  size_t sizes[3 * AX_NUM_CLASSES];
  int ns = 0;
  for (unsigned c = 1; c < AX_NUM_CLASSES; c++)
    for (size_t n = ax_class_size(c) - 1; n <= ax_class_size(c) + 1; n++)
      if (n)
        sizes[ns++] = n;
  uint32_t seed = 1;
  char *p = malloc(1);
  CHECK(p != NULL);
  pat_fill(p, 0, 1, seed);
  size_t old = 1;
  for (int i = 0; i < ns; i++) {
    p = resize(p, old, sizes[i], seed);
    old = sizes[i];
  }
  for (int i = ns - 1; i >= 0; i--) {
    p = resize(p, old, sizes[i], seed);
    old = sizes[i];
  }
  free(p);

  /* every class to every class boundary, both ways, with one fresh block per pair (kept
   * to small/medium targets so the work stays bounded) */
  seed = 2;
  for (unsigned a = 1; a < AX_NUM_CLASSES; a += 3) {
    for (unsigned b = 1; b < AX_NUM_CLASSES; b += 5) {
      size_t na = ax_class_size(a), nb = ax_class_size(b) + (b & 1);
      char *q = malloc(na);
      CHECK(q != NULL);
      pat_fill(q, 0, na, seed);
      q = resize(q, na, nb, seed);
      q = resize(q, nb, na - 1, seed);
      free(q);
      seed++;
    }
  }
}

/* Random sizes, with neighbouring blocks alive so an in-place grow cannot spill over them. */
static void test_random(void) {
  enum { LIVE = 64 };
  char *blk[LIVE];
  size_t len[LIVE];
  uint32_t seed[LIVE];
  uint64_t rs = 0x1234567;
  for (int i = 0; i < LIVE; i++) {
    len[i] = 1 + rnd_next(&rs) % 5000;
    seed[i] = (uint32_t)i + 100;
    blk[i] = malloc(len[i]);
    CHECK(blk[i] != NULL);
    pat_fill(blk[i], 0, len[i], seed[i]);
  }
  size_t iters = scaled(3000);
  for (size_t it = 0; it < iters; it++) {
    int i = (int)(rnd_next(&rs) % LIVE);
    uint64_t r = rnd_next(&rs);
    size_t n;
    switch (r % 16) {
    case 0:
      n = 1 + (r >> 8) % (3 * MIB);
      break; /* anything up to huge */
    case 1:
    case 2:
      n = len[i] + 1;
      break; /* tiny growth */
    case 3:
      n = len[i] > 1 ? len[i] - 1 : 1;
      break; /* tiny shrink */
    case 4:
      n = len[i] / 2 + 1;
      break; /* halve */
    default:
      n = 1 + (r >> 8) % 70000;
      break; /* small/medium */
    }
    blk[i] = resize(blk[i], len[i], n, seed[i]);
    len[i] = n;
    if (it % 256 == 0) /* neighbours intact */
      for (int j = 0; j < LIVE; j++)
        CHECKF(pat_find_bad(blk[j], 0, len[j], seed[j]) == PAT_OK, "block %d corrupted", j);
  }
  for (int i = 0; i < LIVE; i++) {
    CHECK(pat_find_bad(blk[i], 0, len[i], seed[i]) == PAT_OK);
    free(blk[i]);
  }
}

static void test_huge_transitions(void) {
  size_t steps[] = {1000, 3 * MIB, 40 * MIB, 100, 2 * MIB + 1, MIB, 5 * MIB, 7000, 1};
  uint32_t seed = 77;
  char *p = NULL;
  size_t old = 0;
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    p = resize(p, old, steps[i], seed);
    old = steps[i];
  }
  free(p);

  /* a huge block shrunk a bit, then a lot, keeps its prefix */
  p = malloc(20 * MIB);
  CHECK(p != NULL);
  pat_fill(p, 0, 20 * MIB, 78);
  p = resize(p, 20 * MIB, 19 * MIB + 5, 78);
  p = resize(p, 19 * MIB + 5, 2 * MIB, 78);
  p = resize(p, 2 * MIB, 4096, 78);
  free(p);
}

/* Grow a 2 MiB block step by step to 64 MiB (in place or by mremap), checking all of its
 * contents after every step; a second live huge block must stay intact. */
static void test_huge_growth(void) {
  size_t limit = scaled(64) * MIB;
  if (limit < 8 * MIB)
    limit = 8 * MIB;
  char *other = malloc(3 * MIB);
  CHECK(other != NULL);
  pat_fill(other, 0, 3 * MIB, 91);
  size_t old = 2 * MIB;
  char *p = malloc(old);
  CHECK(p != NULL);
  pat_fill(p, 0, old, 90);
  int step = 0;
  while (old < limit) {
    size_t n = old + old / 4 + (size_t)step * 4097; /* odd sizes, not page multiples */
    if (n > limit)
      n = limit;
    p = resize(p, old, n, 90);
    old = n;
    step++;
  }
  CHECK(old == limit);
  CHECK(pat_find_bad(other, 0, 3 * MIB, 91) == PAT_OK);
  /* and step back down */
  while (old > 2 * MIB) {
    size_t n = old - old / 3;
    p = resize(p, old, n, 90);
    old = n;
  }
  free(p);
  free(other);
}

/* A block that outgrows its class moves with room to spare (at least 1.5 times its old
 * class), so growing it byte by byte copies it a few times, not once per class; a step
 * that asks for more than that gets what it asks for. */
static void test_growth_slack(void) {
  unsigned c = 1;
  while (ax_class_size(c) < 5000)
    c++;
  size_t old = ax_class_size(c);
  char *p = malloc(old);
  CHECK(p != NULL && malloc_usable_size(p) == old);
  pat_fill(p, 0, old, 31);
  p = resize(p, old, old + 1, 31);
  CHECKF(malloc_usable_size(p) >= old + old / 2, "%zu -> %zu: usable %zu, want >= %zu", old,
         old + 1, malloc_usable_size(p), old + old / 2);
  size_t mid = malloc_usable_size(p);
  p = resize(p, old + 1, 4 * mid, 31);
  unsigned d = 1;
  while (ax_class_size(d) < 4 * mid)
    d++;
  CHECKF(malloc_usable_size(p) == ax_class_size(d), "-> %zu: usable %zu, class %zu", 4 * mid,
         malloc_usable_size(p), ax_class_size(d));
  free(p);

  /* byte-sized steps from 64 B to 64 KiB: far fewer moves than classes crossed */
  p = malloc(64);
  CHECK(p != NULL);
  pat_fill(p, 0, 64, 32);
  unsigned moves = 0;
  for (size_t n = 65; n <= 65536; n += 61) {
    char *before = p;
    p = resize(p, n - 61, n, 32);
    moves += p != before;
  }
  unsigned classes = 0;
  for (unsigned k = 1; k < AX_NUM_CLASSES; k++)
    classes += ax_class_size(k) > 64 && ax_class_size(k) <= 65536;
  CHECKF(moves * 2 <= classes, "64 B -> 64 KiB: %u moves over %u classes", moves, classes);
  free(p);
}

/* A huge block that took the head of a cached mapping grows over the cached rest in place:
 * no mremap, the same address, its contents kept. */
static void test_huge_grow_over_cached(void) {
  char *big = malloc(64 * MIB);
  CHECK(big != NULL);
  memset(big, 1, 64 * MIB);
  free(big); /* cached */
  ax_stats_get(&s0);
  char *q = malloc(8 * MIB); /* the head of the cached mapping; the rest cached again */
  ax_stats_get(&s1);
  CHECKF(s1.huge_cache_hits == s0.huge_cache_hits + 1, "8 MiB after a cached 64 MiB: %llu hits",
         (unsigned long long)(s1.huge_cache_hits - s0.huge_cache_hits));
  pat_fill(q, 0, 8 * MIB, 33);
  char *r = resize(q, 8 * MIB, 32 * MIB + 100, 33);
  ax_stats_get(&s0);
  CHECKF(r == q, "grown over the cached rest: %p -> %p", (void *)q, (void *)r);
  CHECKF(s0.os_mremap_calls == s1.os_mremap_calls && s0.os_mmap_calls == s1.os_mmap_calls,
         "grown over the cached rest: %llu mremap, %llu mmap calls",
         (unsigned long long)(s0.os_mremap_calls - s1.os_mremap_calls),
         (unsigned long long)(s0.os_mmap_calls - s1.os_mmap_calls));
  /* and past what the cache holds: an ordinary resize, contents still kept */
  r = resize(r, 32 * MIB + 100, 80 * MIB, 33);
  free(r);
}

static void test_reallocarray(void) {
  char *p = reallocarray(NULL, 10, 10);
  CHECK(p != NULL);
  pat_fill(p, 0, 100, 5);
  p = reallocarray(p, 1000, 100);
  CHECK(p != NULL && malloc_usable_size(p) >= 100000);
  CHECK(pat_find_bad(p, 0, 100, 5) == PAT_OK);
  pat_fill(p, 100, 100000, 5);
  p = ax_reallocarray(p, 3, 40);
  CHECK(p != NULL && malloc_usable_size(p) >= 120);
  CHECK(pat_find_bad(p, 0, 120, 5) == PAT_OK);
  free(p);
}

int main(void) {
  check_axmalloc_active();
  test_null_and_zero();
  test_class_sweep();
  test_random();
  test_huge_transitions();
  test_huge_growth();
  test_growth_slack();
  test_huge_grow_over_cached();
  test_reallocarray();
  printf("t_realloc: OK\n");
  return 0;
}
