/* SPDX-License-Identifier: MIT */
/* calloc returns zeroed memory: fresh, reused after a dirty free, for every class size and
 * its neighbours, and for huge blocks (whose mappings are cached and reused). */
#include <stdint.h>
#include <string.h>

#include "testutil.h"

#define MIB ((size_t)1 << 20)

static void check_zero(void *p, size_t n, const char *what) {
  CHECKF(p != NULL, "%s: calloc(%zu) returned NULL", what, n);
  CHECKF(((uintptr_t)p & 15) == 0, "%s: calloc(%zu) = %p misaligned", what, n, p);
  CHECKF(malloc_usable_size(p) >= n, "%s: usable %zu < %zu", what, malloc_usable_size(p), n);
  CHECKF(all_zero(p, n), "%s: calloc(%zu) = %p is not all zero", what, n, p);
}

/* Dirty a block of size n, free it, calloc the same size: must be zero, several times
 * and with different factorisations of n. */
static void reuse_one(size_t n) {
  for (int r = 0; r < 3; r++) {
    void *d = malloc(n);
    CHECK(d != NULL);
    memset(d, 0xAA, malloc_usable_size(d));
    free(d);
    void *p;
    if (r == 0)
      p = calloc(1, n);
    else if (r == 1)
      p = calloc(n, 1);
    else
      p = (n % 4 == 0) ? calloc(n / 4, 4) : calloc(1, n);
    check_zero(p, n, "reuse");
    memset(p, 0xAA, malloc_usable_size(p)); /* leave it dirty for the next round */
    free(p);
  }
}

/* Many dirty blocks of one size freed, then as many callocs: all zero. */
static void reuse_many(size_t n, int count) {
  void *ps[64];
  for (int i = 0; i < count; i++) {
    ps[i] = malloc(n);
    CHECK(ps[i] != NULL);
    memset(ps[i], 0xAA, malloc_usable_size(ps[i]));
  }
  for (int i = 0; i < count; i++)
    free(ps[i]);
  for (int i = 0; i < count; i++) {
    ps[i] = calloc(1, n);
    check_zero(ps[i], n, "reuse_many");
    memset(ps[i], 0xAA, n);
  }
  for (int i = count - 1; i >= 0; i--)
    free(ps[i]);
}

static void test_classes(void) {
  for (unsigned c = 1; c < AX_NUM_CLASSES; c++) {
    size_t cs = ax_class_size(c);
    CHECK(cs != 0);
    for (size_t n = cs - 1; n <= cs + 1; n++) {
      if (n == 0)
        continue;
      void *p = calloc(1, n); /* may or may not be fresh memory */
      check_zero(p, n, "first");
      free(p);
      reuse_one(n);
      int count = (int)scaled(n <= 64 * 1024 ? 64 : 8);
      reuse_many(n, count);
    }
  }
}

static void test_huge(void) {
  size_t sizes[] = {2 * MIB, 5 * MIB, 33 * MIB, MIB + 1, 3 * MIB + 17};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t n = sizes[i];
    void *p = calloc(1, n);
    check_zero(p, n, "huge fresh");
    memset(p, 0xAA, malloc_usable_size(p));
    free(p); /* a dirty huge mapping, possibly cached */
    for (int r = 0; r < 3; r++) {
      p = calloc(n / 16, 16);
      check_zero(p, n / 16 * 16, "huge reuse");
      memset(p, 0xAA, malloc_usable_size(p));
      free(p);
    }
  }
  /* a cached dirty mapping reused for a somewhat smaller request */
  void *p = malloc(6 * MIB);
  CHECK(p != NULL);
  memset(p, 0xAA, malloc_usable_size(p));
  free(p);
  for (size_t n = 6 * MIB - 4096; n >= 4 * MIB; n -= MIB / 2) {
    p = calloc(1, n);
    check_zero(p, n, "huge smaller reuse");
    memset(p, 0xAA, malloc_usable_size(p));
    free(p);
  }
  /* several dirty huge blocks freed together, then calloc'ed back */
  void *hs[4];
  for (int i = 0; i < 4; i++) {
    hs[i] = malloc(2 * MIB + (size_t)i * 4096);
    CHECK(hs[i] != NULL);
    memset(hs[i], 0xAA, malloc_usable_size(hs[i]));
  }
  for (int i = 0; i < 4; i++)
    free(hs[i]);
  for (int i = 0; i < 4; i++) {
    hs[i] = calloc(1, 2 * MIB + (size_t)i * 4096);
    check_zero(hs[i], 2 * MIB + (size_t)i * 4096, "huge batch reuse");
  }
  for (int i = 0; i < 4; i++)
    free(hs[i]);
}

/* Pages purged by malloc_trim are zero again, and must still read as zero through calloc;
 * pages that were only partly dirtied must not be mistaken for zero. */
static void test_after_trim(void) {
  enum { N = 256 };
  static void *ps[N];
  for (int i = 0; i < N; i++) {
    ps[i] = malloc(4000);
    CHECK(ps[i] != NULL);
    memset(ps[i], 0xAA, 4000);
  }
  for (int i = 0; i < N; i += 2)
    free(ps[i]); /* pages stay partly used: no purge */
  malloc_trim(0);
  for (int i = 0; i < N; i += 2) {
    ps[i] = calloc(4000, 1);
    check_zero(ps[i], 4000, "after partial trim");
  }
  for (int i = 0; i < N; i++)
    free(ps[i]);
  malloc_trim(0);
  for (int i = 0; i < N; i++) {
    ps[i] = calloc(1, 4000);
    check_zero(ps[i], 4000, "after full trim");
    memset(ps[i], 0xAA, 4000);
  }
  for (int i = 0; i < N; i++)
    free(ps[i]);
}

/* realloc'd blocks are dirty when freed; calloc afterwards must still zero. */
static void test_after_realloc(void) {
  for (size_t n = 16; n <= 256 * 1024; n *= 2) {
    char *p = malloc(n / 2);
    CHECK(p != NULL);
    memset(p, 0xAA, n / 2);
    p = realloc(p, n);
    CHECK(p != NULL);
    memset(p, 0xAA, malloc_usable_size(p));
    free(p);
    p = calloc(1, n);
    check_zero(p, n, "after realloc");
    free(p);
  }
}

int main(void) {
  check_axmalloc_active();
  test_classes();
  test_huge();
  test_after_trim();
  test_after_realloc();
  printf("t_calloc: OK\n");
  return 0;
}
