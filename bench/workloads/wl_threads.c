/* SPDX-License-Identifier: MIT */
/* wl_threads.c -- many more threads than cores, each with a small live set (issue 39).
 *
 * A server with a thread per connection: `threads` threads (far more than the machine has
 * cores) are all alive at once, each with a few dozen small blocks live, and each replaces
 * its blocks at random for a while. Every free is local (the thread that made the block
 * frees it), so what is measured is the allocator's cost per thread: the first malloc of
 * each thread (a heap, its pages), the memory a thread pins for a live set this small, and
 * whatever the allocator does that grows with the number of threads rather than with the
 * work. After its replacements each thread waits at a barrier that holds every live set at
 * once (the peak: main reads the RSS there), then verifies and frees its blocks and exits.
 *
 * Usage: wl_threads [threads [slots [replacements [min_size [max_size]]]]]
 *        (defaults 1024 64 5000 16 256)
 *
 * Thread t draws sizes (uniform in [min_size, max_size]) and slots from its own xorshift
 * generator seeded from t; each block carries a header (size, tag) and is filled with a
 * byte of its tag, all of it verified before the block is freed. The threads run on small
 * stacks (64 KiB, or the system's minimum if that is larger) so that thousands fit.
 *
 * stderr: the time, the RSS at the peak against the bytes live then, the page faults.
 * stdout: exactly one line "checksum <sum of freed sizes and tags, plus replacements>".
 * Exit status 1 on allocation failure or a corrupted block.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "wl_blocks.h"
#include "wl_stats.h"

#define STACK_SIZE (64u << 10)

typedef struct {
  uint64_t sum;        /* sizes and tags of the blocks freed, plus replacements */
  uint64_t live_bytes; /* bytes requested and live at the barrier */
  char pad[48];        /* one cache line per thread */
} thread_result;

static unsigned nthreads;
static size_t nslots, min_size, max_size;
static unsigned long replacements;
static thread_result *results;
static pthread_barrier_t peak, release;

static block *new_block(uint64_t *rng) { return block_new(rng, min_size, max_size, sizeof(block)); }
static uint64_t retire_block(block *b) {
  return block_retire(b, min_size, max_size, sizeof(block));
}

static void *worker(void *arg) {
  unsigned id = (unsigned)(uintptr_t)arg;
  uint64_t rng = 0x9E3779B97F4A7C15ull ^ (0xD1B54A32D192ED03ull * (id + 1ull)), sum = 0;
  block **slots = malloc(nslots * sizeof *slots);
  if (slots == NULL)
    die("malloc returned NULL");
  for (size_t i = 0; i < nslots; i++)
    slots[i] = new_block(&rng);
  for (unsigned long k = 0; k < replacements; k++) {
    size_t i = (size_t)(xorshift64(&rng) % nslots);
    sum += retire_block(slots[i]);
    slots[i] = new_block(&rng);
  }
  uint64_t live = 0;
  for (size_t i = 0; i < nslots; i++)
    live += slots[i]->size;
  results[id].live_bytes = live;
  /* Every thread alive, every live set allocated: main measures, then lets all go. */
  pthread_barrier_wait(&peak);
  pthread_barrier_wait(&release);
  for (size_t i = 0; i < nslots; i++)
    sum += retire_block(slots[i]);
  free(slots);
  results[id].sum = sum + replacements;
  return NULL;
}

static double seconds_since(const struct timespec *t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) * 1e-9;
}

#define USAGE "[threads [slots [replacements [min_size [max_size]]]]]"

int main(int argc, char **argv) {
  wl_name = "wl_threads";
  nthreads = argc > 1 ? (unsigned)parse_arg(argv[1], 1, 100000, USAGE) : 1024;
  nslots = argc > 2 ? parse_arg(argv[2], 1, 1UL << 24, USAGE) : 64;
  replacements = argc > 3 ? parse_arg(argv[3], 0, 1UL << 40, USAGE) : 5000;
  min_size = argc > 4 ? parse_arg(argv[4], sizeof(block), 1UL << 30, USAGE) : 16;
  max_size = argc > 5 ? parse_arg(argv[5], min_size, 1UL << 31, USAGE) : 256;

  size_t stack = STACK_SIZE;
  long stack_min = sysconf(_SC_THREAD_STACK_MIN);
  if (stack_min > 0 && (size_t)stack_min > stack)
    stack = (size_t)stack_min;
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) || pthread_attr_setstacksize(&attr, stack))
    die("pthread_attr_setstacksize");
  if (pthread_barrier_init(&peak, NULL, nthreads + 1) ||
      pthread_barrier_init(&release, NULL, nthreads + 1))
    die("pthread_barrier_init");
  results = calloc(nthreads, sizeof *results);
  pthread_t *tids = malloc(nthreads * sizeof *tids);
  if (results == NULL || tids == NULL)
    die("malloc returned NULL");

  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (unsigned t = 0; t < nthreads; t++) {
    int err = pthread_create(&tids[t], &attr, worker, (void *)(uintptr_t)t);
    if (err) {
      fprintf(stderr, "wl_threads: FAILED: pthread_create of thread %u: %s\n", t + 1,
              strerror(err));
      exit(1);
    }
  }
  pthread_barrier_wait(&peak);
  double peak_secs = seconds_since(&t0);
  uint64_t peak_rss = rss_bytes(), live = 0;
  for (unsigned t = 0; t < nthreads; t++)
    live += results[t].live_bytes;
  pthread_barrier_wait(&release);
  for (unsigned t = 0; t < nthreads; t++)
    if (pthread_join(tids[t], NULL))
      die("pthread_join");
  double secs = seconds_since(&t0);

  uint64_t checksum = 0;
  for (unsigned t = 0; t < nthreads; t++)
    checksum += results[t].sum;
  free(tids);
  free(results);
  pthread_barrier_destroy(&peak);
  pthread_barrier_destroy(&release);
  pthread_attr_destroy(&attr);

  fprintf(stderr,
          "wl_threads: %u threads (%zu KiB stacks) x %zu slots (%zu..%zu B), %lu replacements "
          "each: %.3f s, all live sets at %.3f s\n",
          nthreads, stack >> 10, nslots, min_size, max_size, replacements, secs, peak_secs);
  if (peak_rss)
    fprintf(stderr,
            "wl_threads: at the peak RSS %.1f MiB for %.1f MiB live: %.1f KiB per thread over "
            "its %.1f KiB\n",
            (double)peak_rss / (1 << 20), (double)live / (1 << 20),
            (double)(peak_rss - (peak_rss > live ? live : peak_rss)) / 1024.0 / nthreads,
            (double)live / 1024.0 / nthreads);
  printf("checksum %llu\n", (unsigned long long)checksum);
  wl_print_faults("wl_threads");
  return 0;
}
