/* SPDX-License-Identifier: MIT */
/* bm_st: the single-threaded path. st/churn allocates 4096 blocks of one size (16 B ..
 * 1 KiB), frees every other one (half-empty pages), allocates those again (refilling
 * them), then frees all (draining the pages empty); the next iteration refills them. One
 * item is one malloc+free pair. Run the binary twice, plain and with AXMALLOC_FORCE_MT=1,
 * to compare plain loads and stores with atomics.
 * Every benchmark here must stay on one thread: Google Benchmark runs a one-thread
 * benchmark on the main thread, while a second thread would make the process
 * multi-threaded for good. */
#include <stdlib.h>

#include "bench.h"

#define N 4096

static void bm_churn(bench_state *st) {
  size_t n = (size_t)bench_arg0(st);
  static void *slot[N];
  while (bench_run_batch(st, 1)) {
    for (int i = 0; i < N; i++) {
      slot[i] = malloc(n);
      *(char *)slot[i] = (char)i;
    }
    for (int i = 0; i < N; i += 2)
      free(slot[i]);
    for (int i = 0; i < N; i += 2) {
      slot[i] = malloc(n);
      *(char *)slot[i] = (char)i;
    }
    bench_do_not_optimize(slot);
    for (int i = 0; i < N; i++)
      free(slot[i]);
  }
  bench_set_items(st, bench_iterations(st) * (N + N / 2));
}

int main(int argc, char **argv) {
  bench_real_time(bench_args(bench_register("st/churn", bm_churn), 16, 1024, 4));
  return bench_main(argc, argv);
}
