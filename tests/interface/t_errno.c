/* SPDX-License-Identifier: MIT */
/* errno: free never changes it (small, medium, huge, NULL, batches that purge, a cross-thread
 * free); failures set ENOMEM: overflowing calloc/reallocarray products and any size above
 * PTRDIFF_MAX, for every entry point; a failed realloc leaves the old block untouched. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "testutil.h"

/* the point here is to pass sizes no object can have */
#pragma GCC diagnostic ignored "-Walloc-size-larger-than="

#define MIB ((size_t)1 << 20)
#define SENTINEL 12345

static void free_keeps_errno(void *p) {
  errno = SENTINEL;
  free(p);
  CHECKF(errno == SENTINEL, "free(%p) changed errno to %d", p, errno);
}

static void test_free_errno(void) {
  size_t sizes[] = {0,          1,   16,      100,     1000,        8192,    64 * 1024,
                    500 * 1024, MIB, MIB + 1, 2 * MIB, 7 * MIB + 3, 40 * MIB};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    void *p = malloc(sizes[i]);
    CHECK(p != NULL);
    memset(p, 1, sizes[i]);
    free_keeps_errno(p);
  }
  free_keeps_errno(NULL);
  errno = SENTINEL;
  ax_free(NULL);
  CHECK(errno == SENTINEL);

  /* batches: whole pages and segments become empty (purge, segment release) */
  enum { N = 1024 };
  static void *ps[N];
  size_t bsz[] = {48, 4000, 64 * 1024};
  for (int b = 0; b < 3; b++) {
    for (int i = 0; i < N; i++) {
      ps[i] = malloc(bsz[b]);
      CHECK(ps[i] != NULL);
      memset(ps[i], 2, bsz[b]);
    }
    for (int i = 0; i < N; i++)
      free_keeps_errno(ps[i]);
  }
  /* many different huge sizes freed in a row: more than a mapping cache holds, so some are
   * unmapped */
  void *hs[12];
  for (int i = 0; i < 12; i++) {
    hs[i] = malloc(2 * MIB + (size_t)i * 300 * 1024);
    CHECK(hs[i] != NULL);
    memset(hs[i], 3, 4096);
  }
  for (int i = 0; i < 12; i++)
    free_keeps_errno(hs[i]);
  /* realloc-shrunk and aligned blocks */
  void *p = malloc(5 * MIB);
  p = realloc(p, 2 * MIB + 5);
  CHECK(p != NULL);
  free_keeps_errno(p);
  p = aligned_alloc(4096, 10000);
  CHECK(p != NULL);
  free_keeps_errno(p);
  p = aligned_alloc(8 << 20, 100);
  CHECK(p != NULL);
  free_keeps_errno(p);
  /* after trim too (freed memory already purged) */
  p = malloc(64 * 1024);
  malloc_trim(0);
  free_keeps_errno(p);
}

/* A free from a thread that does not own the block keeps that thread's errno. */
static void *remote_free(void *arg) {
  void **ps = arg;
  for (int i = 0; ps[i]; i++) {
    errno = SENTINEL;
    free(ps[i]);
    if (errno != SENTINEL)
      return (void *)1;
  }
  return NULL;
}

static void test_remote_free_errno(void) {
  static void *ps[512 + 1];
  for (int i = 0; i < 512; i++) {
    ps[i] = malloc(i % 8 == 7 ? 3 * MIB : 16 + (size_t)i * 40);
    CHECK(ps[i] != NULL);
  }
  ps[512] = NULL;
  pthread_t t;
  void *ret = (void *)2;
  CHECK(pthread_create(&t, NULL, remote_free, ps) == 0);
  CHECK(pthread_join(t, &ret) == 0);
  CHECKF(ret == NULL, "a cross-thread free changed errno");
}

#define EXPECT_ENOMEM(expr)                                                                        \
  do {                                                                                             \
    errno = 0;                                                                                     \
    void *r_ = (expr);                                                                             \
    CHECKF(r_ == NULL, "%s returned %p", #expr, r_);                                               \
    CHECKF(errno == ENOMEM, "%s: errno %d, expected ENOMEM", #expr, errno);                        \
  } while (0)

static void test_overflow(void) {
  const size_t big = (size_t)PTRDIFF_MAX + 1;
  const size_t half = SIZE_MAX / 2 + 1;
  /* calloc products that overflow */
  EXPECT_ENOMEM(calloc(half, 2));
  EXPECT_ENOMEM(calloc(2, half));
  EXPECT_ENOMEM(calloc(SIZE_MAX, SIZE_MAX));
  EXPECT_ENOMEM(calloc((size_t)1 << 32, (size_t)1 << 32));
  EXPECT_ENOMEM(calloc(SIZE_MAX / 16 + 1, 16));
  EXPECT_ENOMEM(ax_calloc(half, 2));
  /* products that fit in size_t but exceed PTRDIFF_MAX */
  EXPECT_ENOMEM(calloc(big / 2, 2));
  EXPECT_ENOMEM(calloc(1, big));
  /* sizes above PTRDIFF_MAX, and those whose rounding up would wrap */
  size_t huge_sizes[] = {big,           big + 1,         SIZE_MAX,
                         SIZE_MAX - 15, SIZE_MAX - 4095, SIZE_MAX - (4 << 20) + 1};
  for (size_t i = 0; i < sizeof huge_sizes / sizeof huge_sizes[0]; i++) {
    size_t n = huge_sizes[i];
    EXPECT_ENOMEM(malloc(n));
    EXPECT_ENOMEM(ax_malloc(n));
    EXPECT_ENOMEM(calloc(1, n));
    EXPECT_ENOMEM(calloc(n, 1));
    EXPECT_ENOMEM(realloc(NULL, n));
    EXPECT_ENOMEM(aligned_alloc(16, n));
    EXPECT_ENOMEM(aligned_alloc(4096, n));
    EXPECT_ENOMEM(aligned_alloc((size_t)8 << 20, n));
    EXPECT_ENOMEM(ax_aligned_alloc(64, n));
    EXPECT_ENOMEM(memalign(64, n));
    EXPECT_ENOMEM(valloc(n));
    EXPECT_ENOMEM(pvalloc(n));
    void *out = (void *)0x5678;
    errno = 0;
    int r = posix_memalign(&out, 64, n);
    CHECKF(r == ENOMEM && errno == ENOMEM, "posix_memalign(64, %zu) returned %d", n, r);
    CHECK(out == (void *)0x5678);
    errno = 0;
    r = ax_posix_memalign(&out, 4096, n);
    CHECKF(r == ENOMEM && errno == ENOMEM, "ax_posix_memalign(4096, %zu) returned %d", n, r);
    CHECK(out == (void *)0x5678);
  }
  /* not representable in memory at all, though not above PTRDIFF_MAX */
  EXPECT_ENOMEM(malloc((size_t)PTRDIFF_MAX));
  EXPECT_ENOMEM(malloc((size_t)PTRDIFF_MAX - 2 * MIB));
  EXPECT_ENOMEM(calloc(1, (size_t)PTRDIFF_MAX - 4095));
}

/* A failing realloc/reallocarray returns NULL with ENOMEM and leaves the block as it was. */
static void test_failed_realloc_keeps_block(void) {
  const size_t big = (size_t)PTRDIFF_MAX + 1;
  size_t sizes[] = {100, 5000, 300 * 1024, 3 * MIB};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t n = sizes[i];
    char *p = malloc(n);
    CHECK(p != NULL);
    size_t us = malloc_usable_size(p);
    pat_fill(p, 0, n, 9);
    EXPECT_ENOMEM(realloc(p, big));
    EXPECT_ENOMEM(realloc(p, SIZE_MAX));
    EXPECT_ENOMEM(realloc(p, SIZE_MAX - 15));
    EXPECT_ENOMEM(ax_realloc(p, big));
    EXPECT_ENOMEM(reallocarray(p, SIZE_MAX / 2, 3));
    EXPECT_ENOMEM(reallocarray(p, (size_t)1 << 33, (size_t)1 << 33));
    EXPECT_ENOMEM(reallocarray(p, big / 4, 4));
    EXPECT_ENOMEM(ax_reallocarray(p, 3, SIZE_MAX / 2));
    CHECKF(pat_find_bad(p, 0, n, 9) == PAT_OK, "failed realloc changed the block of %zu", n);
    CHECK(malloc_usable_size(p) == us);
    p = realloc(p, n + 1); /* still a live, working block */
    CHECK(p != NULL && pat_find_bad(p, 0, n, 9) == PAT_OK);
    free(p);
  }
  EXPECT_ENOMEM(reallocarray(NULL, SIZE_MAX / 2, 3));
  EXPECT_ENOMEM(ax_reallocarray(NULL, (size_t)1 << 40, (size_t)1 << 40));
}

int main(void) {
  check_axmalloc_active();
  test_free_errno();
  test_remote_free_errno();
  test_overflow();
  test_failed_realloc_keeps_block();
  printf("t_errno: OK\n");
  return 0;
}
