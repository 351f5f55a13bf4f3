/* SPDX-License-Identifier: MIT */
/* Alignment: aligned_alloc, posix_memalign, memalign (and the ax_* twins) for every power of
 * two up to 16 MiB and a spread of sizes; alignments of a segment and more (4 MiB .. 1 GiB)
 * with realloc, usable size and free; bad alignments and alignments no address space holds;
 * valloc/pvalloc; churn. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define MIB ((size_t)1 << 20)

enum {
  F_ALIGNED_ALLOC,
  F_POSIX_MEMALIGN,
  F_MEMALIGN,
  F_AX_ALIGNED_ALLOC,
  F_AX_POSIX_MEMALIGN,
  F_AX_MEMALIGN,
  F_COUNT
};
static const char *fname[F_COUNT] = {"aligned_alloc",    "posix_memalign",    "memalign",
                                     "ax_aligned_alloc", "ax_posix_memalign", "ax_memalign"};

static void *alloc_with(int f, size_t align, size_t size) {
  void *p = NULL;
  int r;
  switch (f) {
  case F_ALIGNED_ALLOC:
    return aligned_alloc(align, size);
  case F_MEMALIGN:
    return memalign(align, size);
  case F_AX_ALIGNED_ALLOC:
    return ax_aligned_alloc(align, size);
  case F_AX_MEMALIGN:
    return ax_memalign(align, size);
  case F_POSIX_MEMALIGN:
    r = posix_memalign(&p, align, size);
    break;
  default:
    r = ax_posix_memalign(&p, align, size);
    break;
  }
  CHECKF(r == 0 || p == NULL, "posix_memalign failed (%d) but set *out", r);
  return p;
}

static int is_posix(int f) { return f == F_POSIX_MEMALIGN || f == F_AX_POSIX_MEMALIGN; }

static void check_aligned(void *p, int f, size_t align, size_t size) {
  CHECKF(p != NULL, "%s(%zu, %zu) returned NULL", fname[f], align, size);
  size_t a = align < 16 ? 16 : align; /* every block is 16-byte aligned anyway */
  CHECKF(((uintptr_t)p & (a - 1)) == 0, "%s(%zu, %zu) = %p misaligned", fname[f], align, size, p);
  size_t us = malloc_usable_size(p);
  CHECKF(us >= size, "%s(%zu, %zu): usable %zu", fname[f], align, size, us);
  CHECK(us == ax_usable_size(p));
  memset(p, 0x3c, us);
}

static void test_all_alignments(void) {
  for (int f = 0; f < F_COUNT; f++) {
    for (size_t align = 1; align <= 16 * MIB; align *= 2) {
      if (is_posix(f) && align < sizeof(void *))
        continue;
      size_t sizes[] = {1, 7, align - 1, align, align + 1, 3 * align, 100000};
      /* the ax_* twins are the same code: one large size each is enough */
      int nsizes = (f >= F_AX_ALIGNED_ALLOC && align > 4096) || align > 2 * MIB ? 2 : 7;
      for (int s = 0; s < nsizes; s++) {
        void *p = alloc_with(f, align, sizes[s]);
        check_aligned(p, f, align, sizes[s]);
        free(p);
      }
      /* several at once, so they are not all the same recycled block */
      void *ps[8];
      for (int i = 0; i < 8; i++) {
        ps[i] = alloc_with(f, align, 24);
        check_aligned(ps[i], f, align, 24);
      }
      for (int i = 0; i < 8; i++)
        free(ps[i]);
    }
  }
}

static void test_bad_alignments(void) {
  size_t not_pow2[] = {0, 3, 24, 48, 100, 4095, 4097, ((size_t)1 << 20) + 16, SIZE_MAX};
  for (size_t i = 0; i < sizeof not_pow2 / sizeof not_pow2[0]; i++) {
    size_t a = not_pow2[i];
    errno = 0;
    CHECKF(aligned_alloc(a, 64) == NULL, "aligned_alloc(%zu) succeeded", a);
    CHECKF(errno == EINVAL, "aligned_alloc(%zu): errno %d", a, errno);
    errno = 0;
    CHECKF(ax_aligned_alloc(a, 64) == NULL, "ax_aligned_alloc(%zu) succeeded", a);
    CHECKF(errno == EINVAL, "ax_aligned_alloc(%zu): errno %d", a, errno);
  }
  /* posix_memalign: not a power of two, or not a multiple of sizeof(void *) */
  size_t bad_posix[] = {0, 1, 2, 4, 3, 12, 24, 48, 100, 4097, SIZE_MAX};
  for (size_t i = 0; i < sizeof bad_posix / sizeof bad_posix[0]; i++) {
    size_t a = bad_posix[i];
    if (a == sizeof(void *))
      continue;
    void *out = (void *)0x1234;
    int r = posix_memalign(&out, a, 64);
    CHECKF(r == EINVAL, "posix_memalign(align %zu) returned %d", a, r);
    CHECKF(out == (void *)0x1234, "posix_memalign(align %zu) changed *out", a);
    out = (void *)0x1234;
    r = ax_posix_memalign(&out, a, 64);
    CHECKF(r == EINVAL, "ax_posix_memalign(align %zu) returned %d", a, r);
    CHECK(out == (void *)0x1234);
  }
  /* powers of two no address space holds (2^48 and more): ENOMEM at once */
  for (size_t a = (size_t)1 << 48; a != 0; a <<= 3) {
    errno = 0;
    CHECK(aligned_alloc(a, 64) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(memalign(a, 64) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(ax_aligned_alloc(a, 64) == NULL && errno == ENOMEM);
    void *out = (void *)0x1234;
    int r = posix_memalign(&out, a, 64);
    CHECKF(r == ENOMEM, "posix_memalign(%zu) returned %d", a, r);
    CHECK(out == (void *)0x1234);
    r = ax_posix_memalign(&out, a, 64);
    CHECK(r == ENOMEM && out == (void *)0x1234);
  }
  /* memalign rounds up to a power of two; above 2^63 there is none: EINVAL (glibc) */
  size_t top = (size_t)1 << 63;
  errno = 0;
  CHECK(memalign(top, 64) == NULL && errno == ENOMEM);
  errno = 0;
  CHECK(memalign(top - 1, 64) == NULL && errno == ENOMEM);
  size_t over[] = {top + 1, top + 4096, top + (top >> 1), SIZE_MAX};
  for (size_t i = 0; i < sizeof over / sizeof over[0]; i++) {
    size_t a = over[i];
    errno = 0;
    CHECKF(memalign(a, 64) == NULL && errno == EINVAL, "memalign(%#zx): errno %d", a, errno);
    errno = 0;
    CHECK(ax_memalign(a, 64) == NULL && errno == EINVAL);
  }
}

/* A segment (4 MiB) of alignment and more: the block starts one segment into its mapping,
 * its header in the segment before. Everything a huge block does must work: contents,
 * usable size, realloc both ways, free. */
static void test_segment_alignments(void) {
  size_t aligns[] = {4 * MIB, 8 * MIB, 64 * MIB, (size_t)1 << 30};
  for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
    size_t align = aligns[i];
    for (int f = 0; f < 3; f++) {
      size_t sizes[] = {2, 4096, 3 * MIB, align + 1};
      for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        char *p = alloc_with(f, align, n);
        CHECKF(p != NULL, "%s(%zu MiB, %zu) failed", fname[f], align / MIB, n);
        CHECKF(((uintptr_t)p & (align - 1)) == 0, "%s(%zu MiB) = %p", fname[f], align / MIB, p);
        size_t us = malloc_usable_size(p);
        CHECK(us >= n && us == ax_usable_size(p));
        p[0] = 1, p[n - 1] = 2;
        char *q = realloc(p, n + 5 * MIB); /* may move: keeps the bytes, not the alignment */
        CHECK(q != NULL && q[0] == 1 && q[n - 1] == 2);
        q = realloc(q, n); /* shrink */
        CHECK(q != NULL && q[0] == 1 && q[n - 1] == 2);
        free(q);
      }
    }
    /* several at once: distinct, none overlapping */
    char *ps[4];
    for (int k = 0; k < 4; k++) {
      CHECK((ps[k] = aligned_alloc(align, MIB)) != NULL && ((uintptr_t)ps[k] & (align - 1)) == 0);
      memset(ps[k], k + 1, MIB);
    }
    for (int k = 0; k < 4; k++) {
      CHECK(ps[k][0] == k + 1 && ps[k][MIB - 1] == k + 1);
      free(ps[k]);
    }
  }
}

static void test_valloc(void) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t sizes[] = {1, 100, page - 1, page, page + 1, 3 * page + 5, 2 * MIB + 3};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t n = sizes[i];
    void *p = valloc(n);
    CHECKF(p != NULL && ((uintptr_t)p & (page - 1)) == 0, "valloc(%zu) = %p", n, p);
    CHECK(malloc_usable_size(p) >= n);
    memset(p, 1, malloc_usable_size(p));
    void *q = pvalloc(n);
    CHECKF(q != NULL && ((uintptr_t)q & (page - 1)) == 0, "pvalloc(%zu) = %p", n, q);
    size_t rounded = (n + page - 1) / page * page;
    CHECKF(malloc_usable_size(q) >= rounded, "pvalloc(%zu): usable %zu < %zu", n,
           malloc_usable_size(q), rounded);
    memset(q, 2, rounded);
    CHECK(((uint8_t *)p)[0] == 1 && ((uint8_t *)p)[n - 1] == 1);
    free(p);
    free(q);
  }
}

/* Allocate many aligned blocks, free a random half, allocate again: never a misaligned or
 * overlapping block. */
static void test_churn(void) {
  enum { N = 3000 };
  static void *blk[N];
  static size_t al[N], len[N];
  uint64_t rs = 42;
  int rounds = (int)scaled(6);
  for (int i = 0; i < N; i++)
    blk[i] = NULL;
  for (int round = 0; round < rounds; round++) {
    for (int i = 0; i < N; i++) {
      if (blk[i])
        continue;
      uint64_t r = rnd_next(&rs);
      al[i] = (size_t)1 << (r % 17); /* 1 B .. 64 KiB */
      if (r % 97 == 0)
        al[i] = (size_t)1 << (18 + r % 4); /* sometimes 256 KiB .. 2 MiB */
      len[i] = 1 + (r >> 20) % (r % 5 == 0 ? 20000 : 600);
      int f = (int)((r >> 40) % 3);
      if (f == F_POSIX_MEMALIGN && al[i] < sizeof(void *))
        al[i] = sizeof(void *);
      blk[i] = alloc_with(f, al[i], len[i]);
      check_aligned(blk[i], f, al[i], len[i]);
      memset(blk[i], (int)(i & 0xff), len[i]);
    }
    for (int i = 0; i < N; i++) {
      size_t a = al[i] < 16 ? 16 : al[i];
      CHECKF(((uintptr_t)blk[i] & (a - 1)) == 0, "round %d: block %d misaligned", round, i);
      const uint8_t *b = blk[i];
      for (size_t k = 0; k < len[i]; k++)
        CHECKF(b[k] == (i & 0xff), "round %d: block %d overwritten at %zu", round, i, k);
      if (rnd_next(&rs) & 1) {
        free(blk[i]);
        blk[i] = NULL;
      }
    }
  }
  for (int i = 0; i < N; i++)
    free(blk[i]);
}

int main(void) {
  check_axmalloc_active();
  test_all_alignments();
  test_bad_alignments();
  test_segment_alignments();
  test_valloc();
  test_churn();
  printf("t_align: OK\n");
  return 0;
}
