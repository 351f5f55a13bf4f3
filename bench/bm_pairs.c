/* SPDX-License-Identifier: MIT */
/* bm_pairs: malloc+free pairs of one size, 8 B .. 1 MiB (powers of 8), in three free
 * orders, each thread on its own blocks (1, 2 and 4 threads):
 *   pairs/lifo    malloc, write one byte, free at once;
 *   pairs/fifo    a ring of 1024 live blocks: free the oldest, allocate its successor;
 *   pairs/random  1024 live blocks: free a random one (xorshift), allocate in its place.
 * The 1024 blocks are allocated before the timer starts and freed after it stops. One item
 * is one malloc+free pair; the time is wall-clock (items/s is over all threads). */
#include <stdint.h>
#include <stdlib.h>

#include "bench.h"

#define BATCH 256
#define LIVE 1024 /* power of two */

static void bm_lifo(bench_state *st) {
  size_t n = (size_t)bench_arg0(st);
  while (bench_run_batch(st, BATCH))
    for (int i = 0; i < BATCH; i++) {
      char *p = malloc(n);
      p[0] = (char)i;
      bench_do_not_optimize(p);
      free(p);
    }
  bench_set_items(st, bench_iterations(st));
}

static void fill(void **slot, size_t n) {
  for (int i = 0; i < LIVE; i++) {
    slot[i] = malloc(n);
    *(char *)slot[i] = 1;
  }
}

static void drain(void **slot) {
  for (int i = 0; i < LIVE; i++)
    free(slot[i]);
}

static void bm_fifo(bench_state *st) {
  size_t n = (size_t)bench_arg0(st);
  void *slot[LIVE];
  unsigned head = 0;
  fill(slot, n);
  while (bench_run_batch(st, BATCH))
    for (int i = 0; i < BATCH; i++) {
      unsigned k = head++ & (LIVE - 1);
      free(slot[k]);
      char *p = malloc(n);
      p[0] = (char)i;
      bench_do_not_optimize(p);
      slot[k] = p;
    }
  drain(slot);
  bench_set_items(st, bench_iterations(st));
}

static void bm_random(bench_state *st) {
  size_t n = (size_t)bench_arg0(st);
  void *slot[LIVE];
  uint64_t x = 0x9E3779B97F4A7C15u * (uint64_t)(bench_thread_index(st) + 1);
  fill(slot, n);
  while (bench_run_batch(st, BATCH))
    for (int i = 0; i < BATCH; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      unsigned k = (unsigned)(x >> 32) & (LIVE - 1);
      free(slot[k]);
      char *p = malloc(n);
      p[0] = (char)i;
      bench_do_not_optimize(p);
      slot[k] = p;
    }
  drain(slot);
  bench_set_items(st, bench_iterations(st));
}

static void reg(const char *name, bench_fn fn) {
  bench_handle *h = bench_real_time(bench_args(bench_register(name, fn), 8, 1 << 20, 8));
  bench_threads(bench_threads(bench_threads(h, 1), 2), 4);
}

int main(int argc, char **argv) {
  reg("pairs/lifo", bm_lifo);
  reg("pairs/fifo", bm_fifo);
  reg("pairs/random", bm_random);
  bench_default_min_time(0.1); /* 63 runs */
  return bench_main(argc, argv);
}
