/* SPDX-License-Identifier: MIT */
/* Many blocks: 1e5 blocks of random sizes 1..4096, each filled with a pattern derived from
 * its index; no two live blocks overlap (checked by address and by content); freed in random
 * order with every pattern verified first; then a steady-state alloc/free mix. */
#include <stdint.h>
#include <string.h>

#include "testutil.h"

struct blk {
  uint8_t *p;
  size_t n;
};

static uint32_t tag_of(size_t i) { return (uint32_t)(i * 2654435761u); }

static void fill(struct blk *b, size_t i) { pat_fill(b->p, 0, b->n, tag_of(i)); }

static void verify(const struct blk *b, size_t i, const char *when) {
  size_t bad = pat_find_bad(b->p, 0, b->n, tag_of(i));
  CHECKF(bad == PAT_OK, "%s: block %zu (%p, %zu bytes) overwritten at byte %zu", when, i,
         (void *)b->p, b->n, bad);
}

static int by_addr(const void *a, const void *b) {
  const struct blk *x = a, *y = b;
  return x->p < y->p ? -1 : x->p > y->p;
}

static void check_no_overlap(struct blk *v, size_t n) {
  struct blk *s = malloc(n * sizeof *s);
  CHECK(s != NULL);
  memcpy(s, v, n * sizeof *s);
  qsort(s, n, sizeof *s, by_addr);
  for (size_t i = 0; i + 1 < n; i++)
    CHECKF(s[i].p + malloc_usable_size(s[i].p) <= s[i + 1].p,
           "blocks overlap: %p (+%zu usable) and %p", (void *)s[i].p, malloc_usable_size(s[i].p),
           (void *)s[i + 1].p);
  free(s);
}

int main(void) {
  check_axmalloc_active();
  size_t n = scaled(100000);
  if (n < 1000)
    n = 1000;
  struct blk *v = malloc(n * sizeof *v);
  size_t *order = malloc(n * sizeof *order);
  CHECK(v != NULL && order != NULL);
  uint64_t rs = 0xC0FFEE;

  for (size_t i = 0; i < n; i++) {
    v[i].n = 1 + rnd_next(&rs) % 4096;
    v[i].p = malloc(v[i].n);
    CHECKF(v[i].p != NULL, "malloc(%zu) failed at block %zu", v[i].n, i);
    CHECK(((uintptr_t)v[i].p & 15) == 0);
    CHECK(malloc_usable_size(v[i].p) >= v[i].n);
    fill(&v[i], i);
  }
  check_no_overlap(v, n);

  /* free in random order, verifying each block before it goes */
  for (size_t i = 0; i < n; i++)
    order[i] = i;
  for (size_t i = n - 1; i > 0; i--) {
    size_t j = rnd_next(&rs) % (i + 1);
    size_t t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (size_t k = 0; k < n; k++) {
    size_t i = order[k];
    verify(&v[i], i, "before free");
    free(v[i].p);
    v[i].p = NULL;
  }

  /* steady state: a random slot is freed (verified) or refilled; a full check now and then */
  size_t live = n / 10, ops = scaled(200000);
  for (size_t i = 0; i < live; i++)
    v[i].p = NULL;
  for (size_t op = 0; op < ops; op++) {
    size_t i = rnd_next(&rs) % live;
    if (v[i].p) {
      verify(&v[i], i, "steady state");
      free(v[i].p);
      v[i].p = NULL;
    } else {
      uint64_t r = rnd_next(&rs);
      v[i].n = 1 + r % (r & 0x10000 ? 4096 : 256);
      v[i].p = malloc(v[i].n);
      CHECK(v[i].p != NULL);
      fill(&v[i], i);
    }
    if (op % 50000 == 49999) {
      size_t m = 0;
      for (size_t j = 0; j < live; j++)
        if (v[j].p) {
          verify(&v[j], j, "steady state sweep");
          order[m++] = j;
        }
      struct blk *s = malloc(m * sizeof *s + 1);
      CHECK(s != NULL);
      for (size_t j = 0; j < m; j++)
        s[j] = v[order[j]];
      check_no_overlap(s, m);
      free(s);
    }
  }
  for (size_t i = 0; i < live; i++)
    if (v[i].p) {
      verify(&v[i], i, "final");
      free(v[i].p);
    }
  free(order);
  free(v);
  printf("t_churn: OK\n");
  return 0;
}
