/* SPDX-License-Identifier: MIT */
/* The seed corpus: small inputs, each written with the encoder below from the encoding
 * in ops.h, that together reach every operation, every size category, valid and invalid
 * alignments, and the hand-off paths. `fuzz_replay --make-corpus fuzz/corpus` rewrites
 * fuzz/corpus/ (the files are committed; regenerate them when ops.h changes). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <axmalloc.h>

#include "fuzz_alloc.h"

#define MIB ((size_t)1 << 20)

typedef struct enc {
  unsigned char b[4096];
  size_t n;
} enc_t;

/* ---- the encoder ---------------------------------------------------------------------- */

static void put(enc_t *e, unsigned v) {
  if (e->n < sizeof e->b)
    e->b[e->n++] = (unsigned char)v;
}
static void put16(enc_t *e, unsigned v) {
  put(e, v & 0xFF);
  put(e, v >> 8 & 0xFF);
}
static void put24(enc_t *e, uint32_t v) {
  put16(e, v & 0xFFFF);
  put(e, v >> 16 & 0xFF);
}

/* An operation and its slot (the ops that take one first). */
static void op(enc_t *e, int opcode, int slot) {
  put(e, (unsigned)opcode);
  put(e, (unsigned)slot);
}

/* Exactly n bytes, through the narrowest category that holds it. */
static void sz(enc_t *e, size_t n) {
  if (n < 32) {
    put(e, FZ_SZ_TINY << 5 | (unsigned)n);
  } else if (n <= 1024) {
    put(e, FZ_SZ_SMALL << 5);
    put16(e, (unsigned)n);
  } else if (n <= (128 << 10)) {
    put(e, FZ_SZ_MEDIUM << 5);
    put24(e, (uint32_t)n);
  } else if (n <= MIB) {
    put(e, FZ_SZ_LARGE << 5);
    put24(e, (uint32_t)n);
  } else if (n < MIB + 32768) {
    put(e, FZ_SZ_BIG << 5 | FZ_SZ_BIG_U16);
    put16(e, (unsigned)(n - MIB));
  } else { /* huge: whole MiB plus a multiple of 16 below 1 MiB */
    size_t m = n / MIB > 8 ? 8 : n / MIB;
    put(e, FZ_SZ_BIG << 5 | FZ_SZ_BIG_HUGE | (unsigned)(m - 1));
    put16(e, (unsigned)((n - m * MIB) / 16));
  }
}
/* ax_class_size(c) + delta, delta index into the decoder's class_delta table. */
static void sz_class(enc_t *e, unsigned c, unsigned delta_index) {
  put(e, FZ_SZ_CLASS << 5 | delta_index);
  put(e, c - 1);
}
/* 1 MiB + the decoder's mib_delta[i]. */
static void sz_mib(enc_t *e, unsigned i) { put(e, FZ_SZ_BIG << 5 | i); }
/* 2^k + d, k <= 20, -2 <= d <= 2. */
static void sz_pow2(enc_t *e, unsigned k, int d) {
  put(e, FZ_SZ_POW2 << 5 | k);
  put(e, (unsigned)(d + 2));
}
static void al_pow2(enc_t *e, unsigned k) { put(e, k); }
static void al_odd(enc_t *e, unsigned i) { put(e, 0xE0 | i); }
static void cnt(enc_t *e, unsigned c) { put(e, c - 1); } /* 1..16 */

/* ---- the seeds ------------------------------------------------------------------------ */

static void s_tiny(enc_t *e) {
  for (unsigned n = 0; n < 32; n++)
    op(e, FZ_OP_MALLOC, (int)n), sz(e, n);
  for (int s = 0; s < 32; s += 2)
    op(e, FZ_OP_FREE, s);
}

static void s_small(enc_t *e) {
  static const size_t n[] = {32, 48, 100, 128, 129, 200, 256, 500, 512, 640, 1000, 1024};
  for (int i = 0; i < 12; i++)
    op(e, FZ_OP_MALLOC, i), sz(e, n[i]);
  for (int i = 0; i < 12; i++)
    op(e, FZ_OP_FREE_SIZED, i), put(e, (unsigned)i);
}

static void s_classes(enc_t *e, unsigned first) {
  for (unsigned c = first, s = 0; c <= AX_NUM_CLASSES - 1 && s < 40; c += 3)
    for (unsigned d = 0; d < 7; d += 3)
      op(e, FZ_OP_MALLOC, (int)s++ % 64), sz_class(e, c, d);
  for (unsigned c = 1; c <= 40; c += 3) /* the small-class category, calloc'ed */
    op(e, FZ_OP_CALLOC, (int)c), cnt(e, 1), put(e, FZ_SZ_SMALL_CLASS << 5 | (c % 7)), put(e, c);
}
static void s_classes_low(enc_t *e) { s_classes(e, 1); }
static void s_classes_high(enc_t *e) { s_classes(e, 30); }

static void s_medium(enc_t *e) {
  static const size_t n[] = {1025, 4096, 8191, 8192, 8193, 20000, 65536, 131071, 131072};
  for (int i = 0; i < 9; i++)
    op(e, FZ_OP_MALLOC, i), sz(e, n[i]);
  for (int i = 8; i >= 0; i--)
    op(e, FZ_OP_FREE, i);
}

static void s_mib(enc_t *e) {
  for (unsigned i = 0; i < 8; i++)
    op(e, FZ_OP_MALLOC, (int)i), sz_mib(e, i);
  op(e, FZ_OP_MALLOC, 8), sz(e, MIB - 100);
  op(e, FZ_OP_MALLOC, 9), sz(e, MIB + 100);
  for (int i = 0; i < 10; i += 3)
    op(e, FZ_OP_FREE_SIZED, i), put(e, 0);
}

static void s_huge(enc_t *e) {
  for (unsigned m = 1; m <= 8; m++)
    op(e, FZ_OP_MALLOC, (int)m), sz(e, m * MIB + 4096 * m);
  for (int i = 1; i <= 8; i += 2)
    op(e, FZ_OP_FREE, i);
  op(e, FZ_OP_MALLOC, 1), sz(e, 3 * MIB); /* from the mapping cache */
}

static void s_pow2(enc_t *e) {
  for (unsigned k = 0; k <= 20; k++)
    op(e, FZ_OP_MALLOC, (int)k), sz_pow2(e, k, (int)(k % 5) - 2);
}

static void s_calloc(enc_t *e) {
  static const size_t n[] = {0, 1, 16, 100, 1024, 5000, 70000, 500000};
  for (int i = 0; i < 8; i++)
    op(e, FZ_OP_MALLOC, i), sz(e, n[i]);
  for (int i = 0; i < 8; i++) /* reuse the blocks just freed: not known to be zero */
    op(e, FZ_OP_CALLOC, i), cnt(e, 1 + (unsigned)i % 3), sz(e, n[i]);
}

static void s_calloc_huge(enc_t *e) {
  op(e, FZ_OP_MALLOC, 0), sz(e, 4 * MIB);
  op(e, FZ_OP_FREE, 0);
  op(e, FZ_OP_CALLOC, 1), cnt(e, 1), sz(e, 4 * MIB); /* a cached, dirty mapping */
  op(e, FZ_OP_CALLOC, 2), cnt(e, 3), sz(e, MIB);
  op(e, FZ_OP_CALLOC, 3), cnt(e, 16), sz(e, 65536);
}

static void s_calloc_overflow(enc_t *e) {
  op(e, FZ_OP_CALLOC, 0), put(e, 0xFF), sz(e, 2);
  op(e, FZ_OP_CALLOC, 1), put(e, 0xFF), sz(e, 0);
  op(e, FZ_OP_CALLOC, 2), put(e, 0xFE), sz(e, 100);
  op(e, FZ_OP_CALLOC, 3), put(e, 0xFF), sz(e, 1);
}

static void s_realloc_grow(enc_t *e) {
  static const size_t n[] = {1,      20,  100,     1000,    9000,    100000,
                             600000, MIB, MIB + 1, 3 * MIB, 6 * MIB, 8 * MIB};
  for (int i = 0; i < 12; i++)
    op(e, FZ_OP_REALLOC, 5), sz(e, n[i]);
}

static void s_realloc_shrink(enc_t *e) {
  static const size_t n[] = {8 * MIB, 5 * MIB, 2 * MIB, MIB, 700000, 300000,
                             100000,  5000,    1000,    300, 40,     1};
  for (int i = 0; i < 12; i++)
    op(e, FZ_OP_REALLOC, 7), sz(e, n[i]);
  op(e, FZ_OP_REALLOC, 7), sz(e, 0); /* frees, returns NULL */
}

static void s_realloc_mix(enc_t *e) {
  op(e, FZ_OP_REALLOC, 0), sz(e, 0); /* realloc(NULL, 0) */
  op(e, FZ_OP_REALLOC, 1), sz(e, 64);
  op(e, FZ_OP_MALLOC, 2), sz(e, 64); /* neighbour: growing in place must not hit it */
  op(e, FZ_OP_REALLOC, 1), sz(e, 65);
  op(e, FZ_OP_REALLOC, 1), sz(e, 33);
  op(e, FZ_OP_REALLOC, 1), sz(e, 31);
  op(e, FZ_OP_REALLOC, 1), sz(e, 2 * MIB);
  op(e, FZ_OP_REALLOC, 1), sz(e, 2 * MIB + 4096);
  op(e, FZ_OP_REALLOC, 1), sz(e, 10);
  op(e, FZ_OP_REALLOCARRAY, 3), cnt(e, 16), sz(e, 1000);
  op(e, FZ_OP_REALLOCARRAY, 3), cnt(e, 4), sz(e, 9);
  op(e, FZ_OP_REALLOCARRAY, 3), put(e, 0xFF), sz(e, 4); /* overflow: block kept */
  op(e, FZ_OP_REALLOCARRAY, 3), put(e, 0xFE), sz(e, 4); /* 0 bytes: frees */
}

static void s_aligned(enc_t *e, int opcode) {
  for (unsigned k = 0; k <= 21; k++)
    op(e, opcode, (int)k), al_pow2(e, k), sz(e, k % 3 ? 100 * k : (size_t)1 << k);
  for (unsigned i = 0; i < 16; i++) /* odd alignments: fail or round, by call */
    op(e, opcode, 30 + (int)i), al_odd(e, i), sz(e, 64);
  op(e, opcode, 50), al_pow2(e, 22), sz(e, 64); /* 4 MiB: the header one segment before */
  op(e, opcode, 51), al_pow2(e, 21), sz(e, 3 * MIB);
  op(e, opcode, 52), al_pow2(e, 12), sz(e, MIB + 1);
  for (int i = 0; i < 22; i += 2)
    op(e, FZ_OP_FREE_SIZED, i), put(e, (unsigned)i / 2);
}
static void s_aligned_alloc(enc_t *e) { s_aligned(e, FZ_OP_ALIGNED_ALLOC); }
static void s_posix_memalign(enc_t *e) { s_aligned(e, FZ_OP_POSIX_MEMALIGN); }
static void s_memalign(enc_t *e) { s_aligned(e, FZ_OP_MEMALIGN); }

static void s_valloc(enc_t *e) {
  static const size_t n[] = {0, 1, 4095, 4096, 4097, 70000, MIB, 2 * MIB + 1};
  for (int i = 0; i < 8; i++) {
    op(e, FZ_OP_VALLOC, i), put(e, 0), sz(e, n[i]);
    op(e, FZ_OP_VALLOC, 10 + i), put(e, 1), sz(e, n[i]);
  }
}

static void s_usable(enc_t *e) {
  static const size_t n[] = {0, 24, 1000, 9000, 200000, MIB + 16, 5 * MIB};
  for (int i = 0; i < 7; i++)
    op(e, FZ_OP_MALLOC, i), sz(e, n[i]), op(e, FZ_OP_USABLE, i);
  for (int i = 0; i < 7; i++)
    op(e, FZ_OP_FREE_SIZED, i), put(e, 1); /* with the usable size */
}

static void s_handoff_free(enc_t *e) {
  for (int i = 0; i < 24; i++)
    op(e, FZ_OP_MALLOC, i), sz(e, 16 + 48 * (size_t)i);
  op(e, FZ_OP_HANDOFF_FREE, 0), put(e, 7);
  op(e, FZ_OP_HANDOFF_FREE, 10), put(e, 3);
  for (int i = 0; i < 8; i++) /* reuse what the remote frees gave back */
    op(e, FZ_OP_MALLOC, i), sz(e, 16 + 48 * (size_t)i);
}

static void s_handoff_realloc(enc_t *e) {
  op(e, FZ_OP_MALLOC, 0), sz(e, 100);
  op(e, FZ_OP_HANDOFF_REALLOC, 0), sz(e, 5000);
  op(e, FZ_OP_HANDOFF_REALLOC, 0), sz(e, 2 * MIB);
  op(e, FZ_OP_REALLOC, 0), sz(e, 3 * MIB);
  op(e, FZ_OP_HANDOFF_REALLOC, 0), sz(e, 50);
  op(e, FZ_OP_HANDOFF_REALLOC, 1), sz(e, 70); /* from NULL */
  op(e, FZ_OP_HANDOFF_REALLOC, 0), sz(e, 0);
}

static void s_handoff_alloc(enc_t *e) {
  for (int i = 0; i < 16; i++)
    op(e, FZ_OP_HANDOFF_ALLOC, i), put(e, (unsigned)i), sz(e, 24 + 1000 * (size_t)i);
  op(e, FZ_OP_HANDOFF_ALLOC, 16), put(e, 1), sz(e, 2 * MIB);
  for (int i = 0; i < 17; i += 2) /* remote frees into the helper's pages */
    op(e, FZ_OP_FREE, i);
}

static void s_thread_exit(enc_t *e) {
  for (int i = 0; i < 12; i++)
    op(e, FZ_OP_HANDOFF_ALLOC, i), put(e, 0), sz(e, 40 + 3000 * (size_t)i);
  put(e, FZ_OP_THREAD_RESTART); /* abandons the helper's segments */
  for (int i = 0; i < 12; i += 2)
    op(e, FZ_OP_FREE, i);
  for (int i = 20; i < 40; i++) /* new pages: maybe reclaimed from the abandoned ones */
    op(e, FZ_OP_MALLOC, i), sz(e, 40 + 3000 * (size_t)(i % 12));
  op(e, FZ_OP_HANDOFF_FREE, 20), put(e, 7);
  put(e, FZ_OP_THREAD_RESTART);
  put(e, FZ_OP_TRIM);
}

static void s_trim(enc_t *e) {
  for (int i = 0; i < 30; i++)
    op(e, FZ_OP_MALLOC, i), sz(e, i % 2 ? 300 : 70000);
  for (int i = 0; i < 30; i += 3)
    op(e, FZ_OP_FREE, i);
  op(e, FZ_OP_MALLOC, 40), sz(e, 4 * MIB);
  op(e, FZ_OP_FREE, 40);
  put(e, FZ_OP_TRIM);
  op(e, FZ_OP_CALLOC, 0), cnt(e, 1), sz(e, 70000); /* purged memory */
}

/* Blocks freed while the page still has fresh ones wait on local_free; trim joins them to
 * the free list, and calloc must not take them for known-zero memory (found by the
 * fuzzer: page_collect_all left the page's is_zero set). */
static void s_trim_calloc(enc_t *e) {
  op(e, FZ_OP_MALLOC, 0), sz(e, 11);
  op(e, FZ_OP_MALLOC, 2), sz(e, 7);
  op(e, FZ_OP_MALLOC, 0), sz(e, 2); /* frees the first block */
  op(e, FZ_OP_MALLOC, 0), sz(e, 4); /* frees the third */
  put(e, FZ_OP_TRIM);
  for (int i = 10; i < 14; i++)
    op(e, FZ_OP_CALLOC, i), cnt(e, 1), sz(e, 10);
}

static void s_bad(enc_t *e) {
  op(e, FZ_OP_MALLOC, 1), sz(e, 100);
  for (unsigned k = 0; k < FZ_BAD_KINDS; k++) {
    put(e, FZ_OP_BAD), put(e, k), put(e, 1), put16(e, 2 * k + 1);
    put(e, FZ_OP_BAD), put(e, k), put(e, 2), put16(e, 6 * k);
  }
}

/* Same size class filled, half freed, refilled: local free lists, page reuse. */
static void s_page_churn(enc_t *e) {
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 64; i++)
      op(e, FZ_OP_MALLOC, i), sz_class(e, 20, 0);
    for (int i = round % 2; i < 64; i += 2)
      op(e, FZ_OP_FREE, i);
  }
}

static void s_large_pages(enc_t *e) {
  for (int i = 0; i < 6; i++)
    op(e, FZ_OP_MALLOC, i), sz(e, 200000 + 100000 * (size_t)i);
  for (int i = 0; i < 6; i++)
    op(e, FZ_OP_FREE, i), op(e, FZ_OP_MALLOC, i + 10), sz(e, 900000);
}

/* Pseudo-random operation mixes (any byte string is a valid input). */
static uint64_t rnd_state;
static unsigned rnd(void) {
  rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
  return (unsigned)(rnd_state >> 33);
}
static void s_random(enc_t *e, uint64_t seed) {
  rnd_state = seed;
  while (e->n < 600)
    put(e, rnd() & 0xFF);
}
static void s_random1(enc_t *e) { s_random(e, 1); }
static void s_random2(enc_t *e) { s_random(e, 2); }
static void s_random3(enc_t *e) { s_random(e, 3); }
static void s_random4(enc_t *e) { s_random(e, 4); }

static const struct {
  const char *name;
  void (*make)(enc_t *);
} seeds[] = {
    {"tiny", s_tiny},
    {"small", s_small},
    {"classes_low", s_classes_low},
    {"classes_high", s_classes_high},
    {"medium", s_medium},
    {"one_mib", s_mib},
    {"huge", s_huge},
    {"pow2", s_pow2},
    {"calloc", s_calloc},
    {"calloc_huge", s_calloc_huge},
    {"calloc_overflow", s_calloc_overflow},
    {"realloc_grow", s_realloc_grow},
    {"realloc_shrink", s_realloc_shrink},
    {"realloc_mix", s_realloc_mix},
    {"aligned_alloc", s_aligned_alloc},
    {"posix_memalign", s_posix_memalign},
    {"memalign", s_memalign},
    {"valloc", s_valloc},
    {"usable", s_usable},
    {"handoff_free", s_handoff_free},
    {"handoff_realloc", s_handoff_realloc},
    {"handoff_alloc", s_handoff_alloc},
    {"thread_exit", s_thread_exit},
    {"trim", s_trim},
    {"trim_calloc", s_trim_calloc},
    {"bad", s_bad},
    {"page_churn", s_page_churn},
    {"large_pages", s_large_pages},
    {"random1", s_random1},
    {"random2", s_random2},
    {"random3", s_random3},
    {"random4", s_random4},
};

int fz_write_corpus(const char *dir) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    perror(dir);
    return 1;
  }
  size_t total = 0, count = sizeof seeds / sizeof seeds[0];
  for (size_t i = 0; i < count; i++) {
    static enc_t e;
    e.n = 0;
    seeds[i].make(&e);
    char path[4096];
    snprintf(path, sizeof path, "%s/seed-%02zu-%s", dir, i, seeds[i].name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(e.b, 1, e.n, f) != e.n || fclose(f) != 0) {
      perror(path);
      return 1;
    }
    total += e.n;
  }
  printf("fuzz_replay: wrote %zu seeds, %zu bytes, to %s\n", count, total, dir);
  return 0;
}
