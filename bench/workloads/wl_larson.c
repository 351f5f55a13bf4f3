/* SPDX-License-Identifier: MIT */
/* wl_larson.c -- Larson-style server simulation with a fixed amount of work.
 *
 * After Larson & Krishnan's allocator benchmark: each server thread owns an array of
 * slots holding blocks of random size; every step frees a random slot's block and
 * mallocs a replacement. Blocks outlive the thread that allocated them: periodically the
 * threads exchange their slot arrays, so most frees are cross-thread, and every few epochs
 * the threads exit and fresh threads take over their arrays (as Larson's threads hand
 * their blocks to a newly created thread), leaving live blocks of dead threads behind.
 * Unlike the original it runs a fixed number of steps, not a fixed time, so the work and
 * the checksum are deterministic.
 *
 * Usage: wl_larson [steps_per_epoch [epochs [threads [slots [min_size [max_size]]]]]]
 *        (defaults 150000, 32, 2, 4096, 16, 1024)
 *
 * Logical thread t has its own fixed-seed xorshift generator; in epoch e it works on slot
 * array (t + e) % threads, exchanged at a barrier. Every 4th epoch boundary the OS
 * threads are joined and new ones created. Each block carries a header (size, tag) and a
 * tail byte which are verified before it is freed.
 *
 * stderr, under axmalloc: its remote-free counts (wl_stats.h).
 * stdout: exactly one line "checksum <sum of freed sizes and tags, plus steps>".
 * Exit status 1 on allocation failure or a corrupted block.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wl_blocks.h"
#include "wl_stats.h"

#define RESPAWN_EVERY 4 /* epochs between thread generations */

static unsigned long steps_per_epoch, nepochs;
static unsigned nthreads;
static size_t nslots, min_size, max_size;
static block ***arrays; /* nthreads arrays of nslots pointers */
static pthread_barrier_t barrier;

typedef struct {
  unsigned id;
  uint64_t rng;
  uint64_t sum;
  uint64_t steps;
  unsigned long first_epoch, last_epoch; /* this generation's epochs [first, last) */
} thread_state;

static inline unsigned char tail_byte(uint32_t tag) { return (unsigned char)(tag >> 24) | 0x80; }

static block *new_block(uint64_t *rng) {
  uint64_t r = xorshift64(rng);
  size_t size = min_size + (size_t)(r % (max_size - min_size + 1));
  block *b = malloc(size);
  if (b == NULL)
    die("malloc returned NULL");
  b->size = (uint32_t)size;
  b->tag = (uint32_t)(r >> 32);
  ((unsigned char *)b)[size - 1] = tail_byte(b->tag);
  return b;
}

/* Verify and free a block; return its contribution to the checksum. */
static uint64_t retire_block(block *b) {
  if (b->size < min_size || b->size > max_size)
    die("block header corrupted");
  if (((unsigned char *)b)[b->size - 1] != tail_byte(b->tag))
    die("block tail corrupted");
  uint64_t c = b->size + (b->tag & 0xffff);
  free(b);
  return c;
}

static void *server(void *p) {
  thread_state *st = p;
  for (unsigned long e = st->first_epoch; e < st->last_epoch; e++) {
    block **slots = arrays[(st->id + e) % nthreads];
    for (unsigned long s = 0; s < steps_per_epoch; s++) {
      size_t idx = (size_t)(xorshift64(&st->rng) % nslots);
      st->sum += retire_block(slots[idx]);
      slots[idx] = new_block(&st->rng);
    }
    st->steps += steps_per_epoch;
    /* Exchange arrays: nobody may start the next epoch before all finished this one. */
    pthread_barrier_wait(&barrier);
  }
  return NULL;
}

static void *fill(void *p) {
  thread_state *st = p;
  block **slots = arrays[st->id];
  for (size_t i = 0; i < nslots; i++)
    slots[i] = new_block(&st->rng);
  return NULL;
}

static void *drain(void *p) {
  thread_state *st = p;
  block **slots = arrays[(st->id + nepochs) % nthreads];
  for (size_t i = 0; i < nslots; i++)
    st->sum += retire_block(slots[i]);
  return NULL;
}

static void run_threads(thread_state *st, void *(*fn)(void *)) {
  pthread_t *tids = malloc(nthreads * sizeof *tids);
  if (tids == NULL)
    die("malloc returned NULL");
  for (unsigned t = 0; t < nthreads; t++)
    if (pthread_create(&tids[t], NULL, fn, &st[t]))
      die("pthread_create");
  for (unsigned t = 0; t < nthreads; t++)
    if (pthread_join(tids[t], NULL))
      die("pthread_join");
  free(tids);
}

static const char usage[] = "[steps_per_epoch [epochs [threads [slots [min_size [max_size]]]]]]";

int main(int argc, char **argv) {
  wl_name = "wl_larson";
  steps_per_epoch = argc > 1 ? parse_arg(argv[1], 1, 1UL << 40, usage) : 150000;
  nepochs = argc > 2 ? parse_arg(argv[2], 1, 1000000, usage) : 32;
  nthreads = argc > 3 ? (unsigned)parse_arg(argv[3], 1, 256, usage) : 2;
  nslots = argc > 4 ? parse_arg(argv[4], 1, 1UL << 28, usage) : 4096;
  min_size = argc > 5 ? parse_arg(argv[5], sizeof(block) + 1, 1UL << 30, usage) : 16;
  max_size = argc > 6 ? parse_arg(argv[6], min_size, 1UL << 31, usage) : 1024;

  if (pthread_barrier_init(&barrier, NULL, nthreads))
    die("pthread_barrier_init");
  arrays = malloc(nthreads * sizeof *arrays);
  thread_state *st = calloc(nthreads, sizeof *st);
  if (arrays == NULL || st == NULL)
    die("malloc returned NULL");
  for (unsigned t = 0; t < nthreads; t++) {
    arrays[t] = malloc(nslots * sizeof **arrays);
    if (arrays[t] == NULL)
      die("malloc returned NULL");
    st[t].id = t;
    st[t].rng = 0x9E3779B97F4A7C15ull ^ (0xD1B54A32D192ED03ull * (t + 1));
  }

  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  run_threads(st, fill);
  unsigned generations = 0;
  for (unsigned long e = 0; e < nepochs; e += RESPAWN_EVERY) {
    for (unsigned t = 0; t < nthreads; t++) {
      st[t].first_epoch = e;
      st[t].last_epoch = e + RESPAWN_EVERY < nepochs ? e + RESPAWN_EVERY : nepochs;
    }
    run_threads(st, server);
    generations++;
  }
  run_threads(st, drain);
  clock_gettime(CLOCK_MONOTONIC, &t1);

  uint64_t checksum = 0, steps = 0;
  for (unsigned t = 0; t < nthreads; t++) {
    checksum += st[t].sum + st[t].steps;
    steps += st[t].steps;
    free(arrays[t]);
  }
  free(arrays);
  free(st);
  pthread_barrier_destroy(&barrier);

  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  fprintf(stderr,
          "wl_larson: %u threads x %zu slots (%zu..%zu B), %llu steps in %lu epochs, "
          "%u thread generations: %.3f s, %.2f M steps/s\n",
          nthreads, nslots, min_size, max_size, (unsigned long long)steps, nepochs, generations,
          secs, (double)steps / secs * 1e-6);
  printf("checksum %llu\n", (unsigned long long)checksum);
  wl_print_remote_stats("wl_larson");
  return 0;
}
