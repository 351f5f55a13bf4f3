/* SPDX-License-Identifier: MIT */
/* bm_remote: cross-thread free. Google Benchmark's threads come in pairs: thread 2k
 * allocates blocks of one size (writing one byte) and pushes them on a lock-free
 * single-producer single-consumer ring; thread 2k+1 pops them and frees them, so every
 * free is a remote free. Both threads run the same number of iterations (Google Benchmark
 * gives every thread the same count), so every run ends with the rings empty. A full or
 * empty ring spins, yielding the CPU after a while (4 threads on 2 cores). One item is one
 * block, counted on the producer; the time is wall-clock. Sizes 16 B .. 4 KiB, 2 and 4
 * threads (1 or 3 pairs would leave a producer without consumer: skipped). */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "bench.h"

#define BATCH 256
#define RING 256 /* power of two */
#define MAX_PAIRS 4

static struct ring {
  _Alignas(64) atomic_size_t head; /* next slot to write: the producer's */
  _Alignas(64) atomic_size_t tail; /* next slot to read: the consumer's */
  _Alignas(64) void *slot[RING];
} rings[MAX_PAIRS];

static void relax(unsigned *spins) {
  if (++*spins < 64) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
  } else {
    *spins = 0;
    sched_yield();
  }
}

static void produce(bench_state *st, struct ring *r, size_t n) {
  size_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
  while (bench_run_batch(st, BATCH))
    for (int i = 0; i < BATCH; i++) {
      char *p = malloc(n);
      p[0] = (char)i;
      unsigned spins = 0;
      while (head - atomic_load_explicit(&r->tail, memory_order_acquire) == RING)
        relax(&spins);
      r->slot[head & (RING - 1)] = p;
      atomic_store_explicit(&r->head, ++head, memory_order_release);
    }
  bench_set_items(st, bench_iterations(st));
}

static void consume(bench_state *st, struct ring *r) {
  size_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
  while (bench_run_batch(st, BATCH))
    for (int i = 0; i < BATCH; i++) {
      unsigned spins = 0;
      while (atomic_load_explicit(&r->head, memory_order_acquire) == tail)
        relax(&spins);
      void *p = r->slot[tail & (RING - 1)];
      atomic_store_explicit(&r->tail, ++tail, memory_order_release);
      free(p);
    }
}

static void bm_remote(bench_state *st) {
  int t = bench_thread_index(st), nt = bench_threads_n(st);
  if (nt % 2 != 0 || nt / 2 > MAX_PAIRS) {
    bench_skip(st, "needs an even number of threads, at most 8");
    return;
  }
  struct ring *r = &rings[t / 2];
  if (t % 2 == 0)
    produce(st, r, (size_t)bench_arg0(st));
  else
    consume(st, r);
}

int main(int argc, char **argv) {
  bench_handle *h =
      bench_real_time(bench_args(bench_register("remote/free", bm_remote), 16, 4096, 16));
  bench_threads(bench_threads(h, 2), 4);
  bench_default_min_time(0.2);
  return bench_main(argc, argv);
}
