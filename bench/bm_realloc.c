/* SPDX-License-Identifier: MIT */
/* bm_realloc: realloc growth patterns. One iteration is one whole chain, from malloc to
 * free; one item is one realloc call. After each call the program writes the grown part
 * (one byte per 4 KiB, which makes it resident, as a program filling its buffer would),
 * so an allocator that copies moves real pages. The time is wall-clock.
 *   realloc/double  16 B, 32 B, .. 64 MiB (22 reallocs);
 *   realloc/plus16  16 B, 32 B, 48 B, .. 64 KiB in steps of 16 bytes (4095 reallocs);
 *   realloc/pages   4096*k - 8 then 4096*k + 8 for k = 1 .. 64: each step crosses a page
 *                   boundary (128 reallocs);
 *   realloc/huge    1 MiB, 2 MiB, .. 256 MiB (8 reallocs): the mremap range. */
#include <stdlib.h>

#include "bench.h"

#define PAGE 4096

/* Write the bytes [from, to) of p, one per page, and the last one. */
static char *use(char *p, size_t from, size_t to) {
  for (size_t i = from; i < to; i += PAGE)
    p[i] = (char)i;
  p[to - 1] = 1;
  bench_do_not_optimize(p);
  return p;
}

static void grow_chain(bench_state *st, size_t first, size_t last, int doubling, size_t step) {
  long reallocs = 0;
  while (bench_run_batch(st, 1)) {
    size_t n = first;
    char *p = use(malloc(n), 0, n);
    while (n < last) {
      size_t m = doubling ? n * 2 : n + step;
      p = use(realloc(p, m), n, m);
      n = m;
      reallocs++;
    }
    free(p);
  }
  bench_set_items(st, reallocs);
}

static void bm_double(bench_state *st) { grow_chain(st, 16, 64 << 20, 1, 0); }
static void bm_plus16(bench_state *st) { grow_chain(st, 16, 64 << 10, 0, 16); }
static void bm_huge(bench_state *st) { grow_chain(st, 1 << 20, 256 << 20, 1, 0); }

static void bm_pages(bench_state *st) {
  long reallocs = 0;
  while (bench_run_batch(st, 1)) {
    size_t n = 16;
    char *p = use(malloc(n), 0, n);
    for (size_t k = 1; k <= 64; k++) {
      size_t below = PAGE * k - 8, above = PAGE * k + 8;
      p = use(realloc(p, below), n, below);
      p = use(realloc(p, above), below, above);
      n = above;
      reallocs += 2;
    }
    free(p);
  }
  bench_set_items(st, reallocs);
}

int main(int argc, char **argv) {
  bench_real_time(bench_register("realloc/double", bm_double));
  bench_real_time(bench_register("realloc/plus16", bm_plus16));
  bench_real_time(bench_register("realloc/pages", bm_pages));
  bench_real_time(bench_register("realloc/huge", bm_huge));
  return bench_main(argc, argv);
}
