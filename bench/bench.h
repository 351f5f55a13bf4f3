/* SPDX-License-Identifier: MIT */
/* bench.h: a C facade over Google Benchmark (Debian libbenchmark-dev 1.7.1). Every
 * benchmark in bench/ is written in C against this header; bench_shim.cc, the one C++
 * file, implements it. The benchmarks call plain malloc/free and are run under LD_PRELOAD
 * of each allocator, so nothing here links axmalloc.
 *
 *   static void bm_pair(bench_state *st) {
 *     size_t n = (size_t)bench_arg0(st);
 *     while (bench_run_batch(st, 256))          // one C/C++ crossing per 256 iterations
 *       for (int i = 0; i < 256; i++) {
 *         void *p = malloc(n);
 *         bench_do_not_optimize(p);
 *         free(p);
 *       }
 *     bench_set_items(st, bench_iterations(st));
 *   }
 *   int main(int argc, char **argv) {
 *     bench_real_time(bench_args(bench_register("pair", bm_pair), 8, 1 << 20, 4));
 *     return bench_main(argc, argv);
 *   }
 *
 * The handle functions return their handle, so they nest as above. Register everything
 * before bench_main. bench_run_batch may overshoot: after the loop, bench_iterations(st)
 * is the number of iterations that really ran (a multiple of the batch), the number to
 * base items and bytes on. Counters set by several threads are summed. */
#ifndef AX_BENCH_H
#define AX_BENCH_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bench_state bench_state;   /* benchmark::State, opaque */
typedef struct bench_handle bench_handle; /* benchmark::internal::Benchmark, opaque */
typedef void (*bench_fn)(bench_state *st);

/* ---- registration (before bench_main) ---------------------------------------------- */
/* pre: name is copied; fn runs once per run, in each of the run's threads. */
bench_handle *bench_register(const char *name, bench_fn fn);
/* Arguments lo, lo*mult, lo*mult^2, ..., hi (hi always included): RangeMultiplier + Range. */
bench_handle *bench_args(bench_handle *h, long lo, long hi, int mult);
bench_handle *bench_arg(bench_handle *h, long v);                  /* one more argument value */
bench_handle *bench_threads(bench_handle *h, int n);               /* one more thread count */
bench_handle *bench_thread_range(bench_handle *h, int lo, int hi); /* lo, 2lo, .., hi */
/* Report wall-clock time (and rates over it) instead of the threads' summed CPU time:
 * what every allocator comparison should use (page faults, sleeping consumers). */
bench_handle *bench_real_time(bench_handle *h);

/* ---- inside a benchmark ------------------------------------------------------------- */
long bench_arg0(const bench_state *st);
int bench_thread_index(const bench_state *st); /* 0 .. bench_threads_n - 1 */
int bench_threads_n(const bench_state *st);
/* KeepRunningBatch(n): true while another batch of n iterations is to run. */
bool bench_run_batch(bench_state *st, long n);
long bench_iterations(const bench_state *st);  /* iterations run so far by this thread */
void bench_set_items(bench_state *st, long n); /* items processed by this thread, total */
void bench_set_bytes(bench_state *st, long n); /* bytes processed by this thread, total */
/* SkipWithError: the run is reported as skipped with `why`. Call it before the loop
 * (the loop then does not run) or leave the loop right after. */
void bench_skip(bench_state *st, const char *why);
void bench_pause(bench_state *st);  /* stop the timer (costs ~0.1-0.5 us each way) */
void bench_resume(bench_state *st); /* restart it */

/* Make the compiler believe p and everything it points to is read and may be written:
 * the same asm as benchmark::DoNotOptimize, inline so it costs no call. */
static inline __attribute__((always_inline)) void bench_do_not_optimize(void *p) {
  __asm__ volatile("" : : "r"(p) : "memory");
}

/* ---- main --------------------------------------------------------------------------- */
/* Initialize (parses and removes --benchmark_* flags), RunSpecifiedBenchmarks, Shutdown.
 * When argv has no --benchmark_min_time, the default set with bench_default_min_time is
 * used (so that a whole binary stays short); the flag, when given, wins.
 * post: returns 0, or 1 on an unknown argument. */
void bench_default_min_time(double seconds);
int bench_main(int argc, char **argv);

/* bm_facade only: registers "facade/raw_cpp" (for (auto _ : state) DoNotOptimize) and
 * "facade/raw_cpp_batch" (KeepRunningBatch in C++), the baselines of the facade. */
void bench_register_facade_baselines(void);

#ifdef __cplusplus
}
#endif

#endif /* AX_BENCH_H */
