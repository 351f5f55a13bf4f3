/* SPDX-License-Identifier: MIT */
/* bm_facade: the cost of the C facade itself. "facade/c_batch" is an empty loop body (one
 * bench_do_not_optimize) through bench_run_batch; "facade/raw_cpp" and
 * "facade/raw_cpp_batch" (bench_shim.cc) are the same loop written directly in C++
 * against Google Benchmark. Equal ns per iteration mean the facade costs nothing per
 * iteration: the C/C++ boundary is crossed once per batch. */
#include "bench.h"

#define BATCH 1000

static void bm_c_batch(bench_state *st) {
  void *p = st;
  while (bench_run_batch(st, BATCH))
    for (int i = 0; i < BATCH; i++)
      bench_do_not_optimize(p);
  bench_set_items(st, bench_iterations(st));
}

int main(int argc, char **argv) {
  bench_register("facade/c_batch", bm_c_batch);
  bench_register_facade_baselines();
  return bench_main(argc, argv);
}
