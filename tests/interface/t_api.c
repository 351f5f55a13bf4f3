/* SPDX-License-Identifier: MIT */
/* Basic semantics: size classes, usable sizes, malloc(0), free(NULL), huge blocks, the ax_*
 * entry points against the overridden malloc family. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define MIB ((size_t)1 << 20)

/* The class table the contract gives: 16-byte steps to 128 B (classes 1..8), then 4
 * evenly spaced classes per power of two up to 1 MiB (class 60). */
static size_t expected_class_size(unsigned c) {
  if (c >= 1 && c <= 8)
    return 16 * (size_t)c;
  unsigned k = (c - 9) / 4, j = (c - 9) % 4;
  size_t base = (size_t)128 << k;
  return base + (j + 1) * (base / 4);
}

/* Smallest class size >= n (n in 1..1 MiB). */
static size_t class_for(size_t n) {
  for (unsigned c = 1; c < AX_NUM_CLASSES; c++)
    if (ax_class_size(c) >= n)
      return ax_class_size(c);
  return 0;
}

static void check_block(void *p, size_t n) {
  CHECKF(p != NULL, "malloc(%zu) returned NULL", n);
  CHECKF(((uintptr_t)p & 15) == 0, "malloc(%zu) = %p is not 16-byte aligned", n, p);
  size_t us = malloc_usable_size(p);
  CHECKF(us >= n, "malloc_usable_size(malloc(%zu)) = %zu", n, us);
  CHECKF(us == ax_usable_size(p), "malloc_usable_size %zu != ax_usable_size %zu (n=%zu)", us,
         ax_usable_size(p), n);
  memset(p, 0x5c, us); /* the whole usable size is ours to write */
}

static void test_class_table(void) {
  for (unsigned c = 1; c < AX_NUM_CLASSES; c++) {
    CHECKF(ax_class_size(c) == expected_class_size(c), "ax_class_size(%u) = %zu, expected %zu", c,
           ax_class_size(c), expected_class_size(c));
    CHECK(ax_class_size(c) % 16 == 0);
    if (c > 1)
      CHECK(ax_class_size(c) > ax_class_size(c - 1));
  }
  CHECK(ax_class_size(8) == 128);
  CHECK(ax_class_size(60) == MIB);
  CHECK(ax_class_size(AX_NUM_CLASSES) == 0);
  CHECK(ax_class_size(1000) == 0);
  CHECK(ax_class_size((unsigned)-1) == 0);
}

static void test_sizes(void) {
  /* every size up to 2 KiB, then each class size and its neighbours */
  for (size_t n = 1; n <= 2048; n++) {
    void *p = malloc(n);
    check_block(p, n);
    CHECKF(malloc_usable_size(p) == class_for(n), "usable(malloc(%zu)) = %zu, class size %zu", n,
           malloc_usable_size(p), class_for(n));
    free(p);
  }
  for (unsigned c = 1; c < AX_NUM_CLASSES; c++) {
    size_t cs = ax_class_size(c);
    for (size_t n = cs - 1; n <= cs + 1; n++) {
      if (n == 0)
        continue;
      void *p = malloc(n);
      check_block(p, n);
      if (n <= MIB)
        CHECKF(malloc_usable_size(p) == class_for(n), "usable(malloc(%zu)) = %zu, class %zu", n,
               malloc_usable_size(p), class_for(n));
      free(p);
    }
  }
}

static void test_zero_and_null(void) {
  enum { N = 100 };
  void *ps[N];
  for (int i = 0; i < N; i++) {
    ps[i] = malloc(0);
    CHECK(ps[i] != NULL);
    CHECK(((uintptr_t)ps[i] & 15) == 0);
    memset(ps[i], 0x11, malloc_usable_size(ps[i]));
    for (int j = 0; j < i; j++)
      CHECKF(ps[i] != ps[j], "malloc(0) returned %p twice", ps[i]);
  }
  for (int i = 0; i < N; i++)
    free(ps[i]);
  /* calloc with a zero factor is a unique pointer too */
  void *a = calloc(0, 16), *b = calloc(16, 0), *c = calloc(0, 0);
  CHECK(a && b && c && a != b && b != c && a != c);
  free(a);
  free(b);
  free(c);
  void *z = ax_malloc(0);
  CHECK(z != NULL);
  ax_free(z);

  free(NULL);
  ax_free(NULL);
  CHECK(malloc_usable_size(NULL) == 0);
  CHECK(ax_usable_size(NULL) == 0);
}

static void test_huge(void) {
  ax_info_t info;
  ax_info(&info);
  size_t page = info.page_size; /* the OS page, or AXMALLOC_PAGE_SIZE */
  CHECK(page >= (size_t)sysconf(_SC_PAGESIZE) && page % (size_t)sysconf(_SC_PAGESIZE) == 0);
  size_t sizes[] = {MIB + 1, MIB + 16, 2 * MIB - 1, 2 * MIB, 3 * MIB + 12345, 17 * MIB};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t n = sizes[i];
    ax_stats_t s0, s1;
    ax_stats_get(&s0);
    char *p = malloc(n);
    ax_stats_get(&s1);
    check_block(p, n);
    /* its own mapping, rounded up to whole pages: less than a page of slack; one from the
     * mapping cache (the heap profiler's sampled blocks of 64 KiB .. 1 MiB fill it too) may
     * be up to twice as big */
    size_t usable = malloc_usable_size(p);
    size_t slack = s1.huge_cache_hits > s0.huge_cache_hits ? n + page : page;
    CHECKF(usable >= n && usable - n < slack, "huge malloc(%zu): usable %zu, page %zu", n, usable,
           page);
    CHECK(s1.huge_allocs == s0.huge_allocs + 1);
    CHECK(s1.mallocs >= s0.mallocs + 1);
    free(p);
  }
  /* exactly 1 MiB is the last class, not huge (unless the heap profiler sampled it: a sampled
   * block of 64 KiB .. 1 MiB gets a mapping of its own) */
  ax_stats_t s0, s1;
  ax_stats_get(&s0);
  void *p = malloc(MIB);
  ax_stats_get(&s1);
  check_block(p, MIB);
  CHECK(info.prof_sample ? malloc_usable_size(p) >= MIB : malloc_usable_size(p) == MIB);
  CHECK(info.prof_sample || s1.huge_allocs == s0.huge_allocs);
  free(p);
}

/* The ax_* names and the overridden names are one allocator: blocks cross freely. */
static void test_ax_mix(void) {
  for (size_t n = 1; n <= 4 * MIB; n = n * 3 + 5) {
    void *p = ax_malloc(n);
    check_block(p, n);
    CHECK(ax_usable_size(p) == malloc_usable_size(p));
    free(p);
    p = malloc(n);
    check_block(p, n);
    p = ax_realloc(p, n + 100);
    check_block(p, n + 100);
    ax_free(p);
    p = ax_calloc(n, 1);
    CHECK(p && all_zero(p, n));
    free(p);
  }
}

/* Live blocks are distinct: consecutive mallocs of one size never overlap. */
static void test_distinct(void) {
  enum { N = 1000 };
  static char *ps[N];
  for (size_t n = 8; n <= 8192; n *= 4) {
    for (int i = 0; i < N; i++) {
      ps[i] = malloc(n);
      check_block(ps[i], n);
      memset(ps[i], i & 0xff, n);
    }
    for (int i = 0; i < N; i++) {
      for (size_t k = 0; k < n; k++)
        CHECKF((uint8_t)ps[i][k] == (i & 0xff), "block %d of size %zu overwritten at %zu", i, n, k);
      free(ps[i]);
    }
  }
}

int main(void) {
  check_axmalloc_active();
  test_class_table();
  test_sizes();
  test_zero_and_null();
  test_huge();
  test_ax_mix();
  test_distinct();
  printf("t_api: OK\n");
  return 0;
}
