/* SPDX-License-Identifier: MIT */
/* wl_thread_churn.c -- thousands of short-lived threads, hundreds alive at once (issue 39).
 *
 * A thread-per-request server: main keeps `alive` threads running and, each time it joins
 * one (the oldest), starts a new one, until `total` threads have run. Each thread makes
 * `allocs` small blocks (16..256 B), keeping a set of 16 that it replaces at random and
 * frees at its exit. Halfway through, it holds its live set until alive/2 younger threads
 * have started (a semaphore main posts), so that at least that many live sets coexist
 * however the threads are scheduled, on one CPU as on many. Its first block outlives it:
 * the thread writes its checksum into it and returns it, and main (the joiner) verifies
 * and frees it, a remote free into the heap of a thread that has exited. The allocator pays
 * for every thread's birth and death (a heap set up, its pages abandoned or returned,
 * reused by the next thread), so memory must not grow with the number of threads run: main
 * prints the RSS after a tenth, half and all of them (it should be flat), and
 * /usr/bin/time's peak is that of `alive` threads.
 *
 * Usage: wl_thread_churn [total [alive [allocs]]]      (defaults 10000 256 200)
 *
 * Thread i draws its sizes and slots from its own xorshift generator seeded from i; each
 * block carries a header (size, tag) and is filled with a byte of its tag, all of it
 * verified before the block is freed. Threads run on 64 KiB stacks (or the system's
 * minimum if larger).
 *
 * stderr: the time, the RSS over the run, the page faults; under axmalloc its remote-free
 * counts (wl_stats.h). stdout: exactly one line "checksum <sum of freed sizes and tags,
 * plus allocations>". Exit status 1 on allocation failure or a corrupted block.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "wl_blocks.h"
#include "wl_stats.h"

#define STACK_SIZE (64u << 10)
#define KEEP 16      /* blocks a thread keeps live */
#define MIN_SIZE 16  /* a header and the handed-over checksum */
#define MAX_SIZE 256 /* sizes are uniform in [MIN_SIZE, MAX_SIZE] */

static unsigned long allocs_per_thread, alive, half_alive;
static sem_t *go_on; /* go_on[i % alive]: thread i may go on (thread i + half_alive started) */

static block *new_block(uint64_t *rng, size_t from) {
  return block_new(rng, MIN_SIZE, MAX_SIZE, from);
}
static uint64_t retire_block(block *b, size_t from) {
  return block_retire(b, MIN_SIZE, MAX_SIZE, from);
}

/* The handed-over block: header, this thread's checksum, then the fill. */
#define HANDED_FILL (sizeof(block) + sizeof(uint64_t))

/* n allocations, each replacing a random one of the kept blocks. */
static uint64_t replace_blocks(block **keep, uint64_t *rng, unsigned long n) {
  uint64_t sum = 0;
  for (unsigned long k = 0; k < n; k++) {
    block *b = new_block(rng, sizeof(block));
    block **slot = &keep[xorshift64(rng) % KEEP];
    if (*slot)
      sum += retire_block(*slot, sizeof(block));
    *slot = b;
  }
  return sum;
}

static void *worker(void *arg) {
  uint64_t index = (uintptr_t)arg;
  uint64_t rng = 0x9E3779B97F4A7C15ull ^ (0xD1B54A32D192ED03ull * (index + 1)), sum = 0;
  block *handed = new_block(&rng, HANDED_FILL);
  block *keep[KEEP] = {0};
  sum += replace_blocks(keep, &rng, allocs_per_thread / 2);
  /* Hold the live set until half_alive younger threads have started: that many live sets
   * at least, whatever the scheduling. */
  if (half_alive)
    while (sem_wait(&go_on[index % alive]))
      ;
  sum += replace_blocks(keep, &rng, allocs_per_thread - allocs_per_thread / 2);
  for (unsigned i = 0; i < KEEP; i++)
    if (keep[i])
      sum += retire_block(keep[i], sizeof(block));
  sum += allocs_per_thread + 1;
  memcpy(handed + 1, &sum, sizeof sum);
  return handed;
}

/* Start thread i in *tid; tell the thread half_alive older that it may go on (all those
 * still waiting when i is the last thread). */
static void start_thread(pthread_t *tid, const pthread_attr_t *attr, unsigned long i,
                         unsigned long total) {
  int err = pthread_create(tid, attr, worker, (void *)(uintptr_t)i);
  if (err) {
    fprintf(stderr, "wl_thread_churn: FAILED: pthread_create of thread %lu: %s\n", i + 1,
            strerror(err));
    exit(1);
  }
  if (half_alive == 0)
    return;
  if (i >= half_alive)
    sem_post(&go_on[(i - half_alive) % alive]);
  if (i + 1 == total)
    for (unsigned long j = i + 1 > half_alive ? i + 1 - half_alive : 0; j <= i; j++)
      sem_post(&go_on[j % alive]);
}

#define USAGE "[total [alive [allocs]]]"

int main(int argc, char **argv) {
  wl_name = "wl_thread_churn";
  unsigned long total = argc > 1 ? parse_arg(argv[1], 1, 1UL << 32, USAGE) : 10000;
  alive = argc > 2 ? parse_arg(argv[2], 1, 100000, USAGE) : 256;
  allocs_per_thread = argc > 3 ? parse_arg(argv[3], 0, 1UL << 40, USAGE) : 200;
  if (alive > total)
    alive = total;
  half_alive = alive / 2;

  size_t stack = STACK_SIZE;
  long stack_min = sysconf(_SC_THREAD_STACK_MIN);
  if (stack_min > 0 && (size_t)stack_min > stack)
    stack = (size_t)stack_min;
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) || pthread_attr_setstacksize(&attr, stack))
    die("pthread_attr_setstacksize");
  pthread_t *ring = malloc(alive * sizeof *ring); /* ring[k]: the slot's running thread */
  go_on = malloc(alive * sizeof *go_on);
  if (ring == NULL || go_on == NULL)
    die("malloc returned NULL");
  for (unsigned long k = 0; k < alive; k++)
    if (sem_init(&go_on[k], 0, 0))
      die("sem_init");

  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  unsigned long started = 0, joined = 0;
  uint64_t checksum = 0, rss_tenth = 0, rss_half = 0;
  for (; started < alive; started++)
    start_thread(&ring[started], &attr, started, total);
  /* Join the oldest, start the next in its slot: `alive` threads at a time, FIFO. */
  for (unsigned long k = 0; joined < total; k = k + 1 == alive ? 0 : k + 1) {
    void *ret;
    if (pthread_join(ring[k], &ret))
      die("pthread_join");
    block *handed = ret;
    uint64_t sum;
    memcpy(&sum, handed + 1, sizeof sum);
    checksum += sum + retire_block(handed, HANDED_FILL);
    joined++;
    if (joined == (total + 9) / 10)
      rss_tenth = rss_bytes();
    if (joined == (total + 1) / 2)
      rss_half = rss_bytes();
    if (started < total)
      start_thread(&ring[k], &attr, started++, total);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  uint64_t rss_end = rss_bytes();
  for (unsigned long k = 0; k < alive; k++)
    sem_destroy(&go_on[k]);
  free(go_on);
  free(ring);
  pthread_attr_destroy(&attr);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  fprintf(stderr,
          "wl_thread_churn: %lu threads, %lu alive at once (%zu KiB stacks), %lu allocations "
          "each: %.3f s, %.1f k threads/s\n",
          total, alive, stack >> 10, allocs_per_thread, secs, (double)total / secs * 1e-3);
  if (rss_end)
    fprintf(stderr,
            "wl_thread_churn: RSS after a tenth of the threads %.1f MiB, half %.1f MiB, "
            "all %.1f MiB\n",
            (double)rss_tenth / (1 << 20), (double)rss_half / (1 << 20),
            (double)rss_end / (1 << 20));
  printf("checksum %llu\n", (unsigned long long)checksum);
  wl_print_faults("wl_thread_churn");
  wl_print_remote_stats("wl_thread_churn");
  return 0;
}
