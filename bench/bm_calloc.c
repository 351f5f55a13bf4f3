/* SPDX-License-Identifier: MIT */
/* bm_calloc: calloc of 4 KiB .. 64 MiB (powers of 4), then free:
 *   calloc/fresh     calloc+free and nothing else: the allocator may know the memory is
 *                    still zero (fresh pages or a fresh mmap) and skip zeroing it;
 *   calloc/recycled  malloc, memset 0xA5 (dirty), free, then calloc the same size, free:
 *                    the block calloc gets back is dirty and must be zeroed;
 *   calloc/dirty     the recycled cycle without the calloc (malloc, memset, free, malloc,
 *                    free): subtract it from calloc/recycled to get calloc's own share.
 * The cycle is timed whole rather than with pause/resume, whose timer reads would cost more
 * than a 4 KiB calloc. calloc's result is read at both ends. Bytes are the calloc size;
 * the time is wall-clock (page faults count). */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static void bm_fresh(bench_state *st) {
  size_t n = (size_t)bench_arg0(st);
  while (bench_run_batch(st, 1)) {
    volatile char *p = calloc(1, n);
    (void)p[0];
    (void)p[n - 1];
    free((void *)p);
  }
  bench_set_bytes(st, bench_iterations(st) * (long)n);
}

static void bm_recycled(bench_state *st) {
  size_t n = (size_t)bench_arg0(st);
  while (bench_run_batch(st, 1)) {
    char *d = malloc(n);
    memset(d, 0xA5, n);
    bench_do_not_optimize(d);
    free(d);
    volatile char *p = calloc(1, n);
    (void)p[0];
    (void)p[n - 1];
    free((void *)p);
  }
  bench_set_bytes(st, bench_iterations(st) * (long)n);
}

static void bm_dirty(bench_state *st) {
  size_t n = (size_t)bench_arg0(st);
  while (bench_run_batch(st, 1)) {
    char *d = malloc(n);
    memset(d, 0xA5, n);
    bench_do_not_optimize(d);
    free(d);
    volatile char *p = malloc(n);
    bench_do_not_optimize((void *)p);
    free((void *)p);
  }
  bench_set_bytes(st, bench_iterations(st) * (long)n);
}

int main(int argc, char **argv) {
  bench_real_time(bench_args(bench_register("calloc/fresh", bm_fresh), 4096, 64 << 20, 4));
  bench_real_time(bench_args(bench_register("calloc/recycled", bm_recycled), 4096, 64 << 20, 4));
  bench_real_time(bench_args(bench_register("calloc/dirty", bm_dirty), 4096, 64 << 20, 4));
  bench_default_min_time(0.2);
  return bench_main(argc, argv);
}
