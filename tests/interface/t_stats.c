/* SPDX-License-Identifier: MIT */
/* ax_stats_get: the counters move the way the allocations say and are self-consistent. */
#include <pthread.h>
#include <string.h>

#include "testutil.h"

#define MIB ((size_t)1 << 20)

static ax_stats_t s0, s1, s2;

static unsigned class_of(size_t n) {
  for (unsigned c = 1; c < AX_NUM_CLASSES; c++)
    if (ax_class_size(c) >= n)
      return c;
  return 0;
}

#define U(x) ((unsigned long long)(x))

static void check_consistent(const ax_stats_t *s) {
  CHECKF(s->os_reserved >= s->os_committed, "reserved %llu < committed %llu", U(s->os_reserved),
         U(s->os_committed));
  CHECK(s->os_reserved_peak >= s->os_reserved);
  CHECK(s->os_committed_peak >= s->os_committed);
  CHECK(s->os_reserved_peak >= s->os_committed_peak);
  CHECK(s->mallocs >= s->huge_allocs);
  CHECK(s->os_mmap_calls >= 1);
  CHECK(s->segments_live >= 1); /* this thread has live small blocks (stdio, the tests) */
  CHECK(s->heaps_live >= 1);
  CHECK(s->segments_reclaimed <= s->segments_abandoned);
  CHECK(s->huge_cache_hits <= s->huge_allocs);
  uint64_t sum = 0;
  for (unsigned c = 1; c < AX_NUM_CLASSES; c++)
    sum += s->class_mallocs[c];
  CHECKF(sum + s->huge_allocs <= s->mallocs, "class mallocs %llu + huge %llu > mallocs %llu",
         U(sum), U(s->huge_allocs), U(s->mallocs));
}

static void test_class_counters(void) {
  enum { N = 1000 };
  static void *ps[N];
  unsigned c = class_of(100);
  CHECK(ax_class_size(c) == 112);
  ax_stats_get(&s0);
  for (int i = 0; i < N; i++) {
    ps[i] = malloc(100);
    CHECK(ps[i] != NULL);
  }
  ax_stats_get(&s1);
  for (int i = 0; i < N; i++)
    free(ps[i]);
  ax_stats_get(&s2);
  CHECKF(s1.class_mallocs[c] >= s0.class_mallocs[c] + N, "class_mallocs[%u] %llu -> %llu", c,
         U(s0.class_mallocs[c]), U(s1.class_mallocs[c]));
  CHECKF(s1.mallocs >= s0.mallocs + N, "mallocs %llu -> %llu", U(s0.mallocs), U(s1.mallocs));
  CHECKF(s1.class_live[c] == s0.class_live[c] + N, "class_live[%u] %llu -> %llu", c,
         U(s0.class_live[c]), U(s1.class_live[c]));
  CHECKF(s2.class_live[c] == s0.class_live[c], "class_live[%u] after free %llu, before %llu", c,
         U(s2.class_live[c]), U(s0.class_live[c]));
  CHECK(s2.mallocs >= s1.mallocs); /* monotone */
  CHECK(s2.class_mallocs[c] >= s1.class_mallocs[c]);
  /* other classes did not get these blocks */
  CHECK(s1.class_mallocs[c - 1] - s0.class_mallocs[c - 1] < N);
  CHECK(s1.class_mallocs[c + 1] - s0.class_mallocs[c + 1] < N);
  check_consistent(&s0);
  check_consistent(&s1);
  check_consistent(&s2);

  /* every class counts its own blocks */
  for (unsigned k = 1; k < AX_NUM_CLASSES; k++) {
    ax_stats_get(&s0);
    void *p = malloc(ax_class_size(k));
    ax_stats_get(&s1);
    CHECK(p != NULL);
    CHECKF(s1.class_mallocs[k] >= s0.class_mallocs[k] + 1, "class %u: class_mallocs did not grow",
           k);
    CHECKF(s1.class_live[k] == s0.class_live[k] + 1, "class %u: class_live did not grow", k);
    free(p);
  }
}

static void test_huge_counters(void) {
  ax_stats_get(&s0);
  char *p = malloc(5 * MIB);
  CHECK(p != NULL);
  memset(p, 1, 5 * MIB);
  ax_stats_get(&s1);
  CHECK(s1.huge_allocs == s0.huge_allocs + 1);
  CHECK(s1.mallocs >= s0.mallocs + 1);
  CHECK(s1.os_reserved >= 5 * MIB);
  CHECK(s1.os_committed >= 5 * MIB);
  CHECK(s1.os_reserved_peak >= 5 * MIB);
  check_consistent(&s1);
  free(p);

  /* repeated malloc/free of one huge size is served from the mapping cache */
  ax_stats_get(&s0);
  for (int i = 0; i < 10; i++) {
    p = malloc(4 * MIB);
    CHECK(p != NULL);
    p[0] = 1;
    free(p);
  }
  ax_stats_get(&s1);
  CHECK(s1.huge_allocs == s0.huge_allocs + 10);
  CHECKF(s1.huge_cache_hits > s0.huge_cache_hits, "huge cache hits %llu -> %llu",
         U(s0.huge_cache_hits), U(s1.huge_cache_hits));
  CHECKF(s1.os_mmap_calls - s0.os_mmap_calls < 10, "10 huge malloc/free took %llu mmaps",
         U(s1.os_mmap_calls - s0.os_mmap_calls));

  /* a huge mapping of a size that is no multiple of a segment takes one mmap: reserved a
   * segment larger and trimmed to alignment, not first tried at its own size (a second
   * mmap and an munmap whenever that landed unaligned, which is most of the time) */
  malloc_trim(0); /* the mapping cache is empty: the next huge malloc maps */
  ax_stats_get(&s0);
  p = malloc(5 * MIB + 12345);
  CHECK(p != NULL);
  ax_stats_get(&s1);
  free(p);
  CHECKF(s1.os_mmap_calls - s0.os_mmap_calls == 1 && s1.os_munmap_calls - s0.os_munmap_calls <= 2,
         "a huge malloc took %llu mmaps and %llu munmaps", U(s1.os_mmap_calls - s0.os_mmap_calls),
         U(s1.os_munmap_calls - s0.os_munmap_calls));

  /* growing a huge block uses mremap */
  ax_stats_get(&s0);
  p = malloc(2 * MIB);
  CHECK(p != NULL);
  for (size_t n = 3 * MIB; n <= 48 * MIB; n += 9 * MIB) {
    p = realloc(p, n);
    CHECK(p != NULL);
    p[n - 1] = 1;
  }
  ax_stats_get(&s1);
  free(p);
  CHECKF(s1.os_mremap_calls > s0.os_mremap_calls, "huge realloc growth made no mremap call");
  check_consistent(&s1);
}

static void *thread_allocs(void *arg) {
  for (int i = 0; i < 500; i++)
    free(malloc(64 + (size_t)i));
  return arg;
}

/* Counters of a thread that has exited are still in the totals. */
static void test_thread_merge(void) {
  ax_stats_get(&s0);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, thread_allocs, NULL) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  ax_stats_get(&s1);
  CHECKF(s1.mallocs >= s0.mallocs + 500, "mallocs %llu -> %llu across an exited thread",
         U(s0.mallocs), U(s1.mallocs));
  check_consistent(&s1);
}

int main(void) {
  check_axmalloc_active();
  test_class_counters();
  test_huge_counters();
  test_thread_merge();
  printf("t_stats: OK\n");
  return 0;
}
