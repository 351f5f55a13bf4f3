/* SPDX-License-Identifier: MIT */
/* wl_prodcons.c -- producers allocate, consumers free: every free is a remote free.
 *
 * Models seed 000's worker/collector split at its barest, as mimalloc-bench's xmalloc-test
 * does: producer threads malloc blocks of one size, write a tag into each and hand them over
 * in arrays of 256 pointers through one bounded queue (a mutex and two condition variables:
 * one lock per 256 blocks, so the allocator's cost dominates); consumer threads check each
 * tag and free the block, then the array. The work is fixed (blocks in total), so the time
 * must not grow with the number of threads, even past the number of cores; run it with
 * 1+1 .. 16+16 threads for the scaling sweep.
 *
 * Usage: wl_prodcons [blocks [producers [consumers [size [spread [max_size]]]]]]
 *        (defaults 20000000 2 2 64 1 size)
 *   spread > 1: each consumer takes that many arrays before it frees, then frees one block
 *   of each in turn, so that consecutive frees land in different pages (spread 512 with
 *   64 B blocks: about 128 pages in rotation): the sparse pattern, where batching remote
 *   frees per page cannot help.
 *   max_size > size: each block's size is drawn from [size, max_size] (each producer its own
 *   fixed-seed generator): the mixed-size handoff of a real queue of records.
 *
 * stdout: exactly one line "checksum <n>" (the sum of every block's tag: independent of
 * which consumer freed which block); stderr, under axmalloc: its remote-free counts
 * (wl_stats.h). Exit status 1 on allocation failure or a wrong tag.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "wl_stats.h"

#define BATCH 256
#define QUEUE_CAP 64
#define MAX_THREADS 64

static void die(const char *msg) {
  fprintf(stderr, "wl_prodcons: FAILED: %s\n", msg);
  exit(1);
}

static struct {
  pthread_mutex_t lock;
  pthread_cond_t not_full, not_empty;
  void **slot[QUEUE_CAP];
  unsigned head, count, producers_left;
} q = {.lock = PTHREAD_MUTEX_INITIALIZER,
       .not_full = PTHREAD_COND_INITIALIZER,
       .not_empty = PTHREAD_COND_INITIALIZER};

static size_t per_producer, block_size, max_size, spread;

static void put(void **batch) {
  pthread_mutex_lock(&q.lock);
  while (q.count == QUEUE_CAP)
    pthread_cond_wait(&q.not_full, &q.lock);
  q.slot[(q.head + q.count++) % QUEUE_CAP] = batch;
  pthread_cond_signal(&q.not_empty);
  pthread_mutex_unlock(&q.lock);
}

/* NULL when every producer is done and the queue is empty. */
static void **take(void) {
  pthread_mutex_lock(&q.lock);
  while (q.count == 0 && q.producers_left)
    pthread_cond_wait(&q.not_empty, &q.lock);
  void **batch = NULL;
  if (q.count) {
    batch = q.slot[q.head];
    q.head = (q.head + 1) % QUEUE_CAP;
    q.count--;
    pthread_cond_signal(&q.not_full);
  }
  pthread_mutex_unlock(&q.lock);
  return batch;
}

static void *producer(void *arg) {
  uint64_t tag = (uintptr_t)arg * per_producer;
  uint64_t rng = 0x9e3779b97f4a7c15u * ((uintptr_t)arg + 1); /* (sizes only) */
  for (size_t done = 0; done < per_producer;) {
    void **batch = malloc(sizeof(void *) * (BATCH + 1));
    if (!batch)
      die("malloc returned NULL");
    size_t n = per_producer - done < BATCH ? per_producer - done : BATCH;
    for (size_t i = 0; i < n; i++) {
      size_t size = block_size;
      if (max_size > block_size) { /* xorshift64 */
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        size += (size_t)(rng % (max_size - block_size + 1));
      }
      uint64_t *b = malloc(size);
      if (!b)
        die("malloc returned NULL");
      b[0] = ++tag;
      batch[i] = b;
    }
    batch[n] = NULL;
    done += n;
    put(batch);
  }
  pthread_mutex_lock(&q.lock);
  if (--q.producers_left == 0)
    pthread_cond_broadcast(&q.not_empty);
  pthread_mutex_unlock(&q.lock);
  return NULL;
}

static void drop(uint64_t *sum, uint64_t *b) {
  if (b[0] == 0)
    die("a block lost its tag");
  *sum += b[0];
  free(b);
}

/* Takes up to `spread` arrays, then frees block i of each before block i + 1 of any. */
static void *consumer(void *arg) {
  uint64_t *sum = arg;
  void ***held = malloc(sizeof(void **) * spread);
  if (!held)
    die("malloc returned NULL");
  for (size_t n;;) {
    for (n = 0; n < spread && (held[n] = take()); n++)
      ;
    if (n == 0)
      break;
    for (size_t i = 0, left = n; left; i++) {
      left = 0;
      for (size_t k = 0; k < n; k++)
        if (held[k] && held[k][i]) {
          drop(sum, held[k][i]);
          left++;
        } else if (held[k]) {
          free(held[k]);
          held[k] = NULL;
        }
    }
    for (size_t k = 0; k < n; k++)
      free(held[k]);
  }
  free(held);
  return NULL;
}

int main(int argc, char **argv) {
  size_t blocks = argc > 1 ? (size_t)atol(argv[1]) : 20000000;
  int np = argc > 2 ? atoi(argv[2]) : 2, nc = argc > 3 ? atoi(argv[3]) : 2;
  block_size = argc > 4 ? (size_t)atol(argv[4]) : 64;
  spread = argc > 5 ? (size_t)atol(argv[5]) : 1;
  max_size = argc > 6 ? (size_t)atol(argv[6]) : block_size;
  if (np < 1 || nc < 1 || np > MAX_THREADS || nc > MAX_THREADS || block_size < 8 || !blocks ||
      !spread || max_size < block_size)
    return 2;
  per_producer = blocks / (size_t)np;
  q.producers_left = (unsigned)np;
  pthread_t pt[MAX_THREADS], ct[MAX_THREADS];
  uint64_t sums[MAX_THREADS] = {0};
  for (int i = 0; i < nc; i++)
    if (pthread_create(&ct[i], NULL, consumer, &sums[i]))
      die("pthread_create");
  for (int i = 0; i < np; i++)
    if (pthread_create(&pt[i], NULL, producer, (void *)(uintptr_t)i))
      die("pthread_create");
  for (int i = 0; i < np; i++)
    pthread_join(pt[i], NULL);
  uint64_t sum = 0;
  for (int i = 0; i < nc; i++) {
    pthread_join(ct[i], NULL);
    sum += sums[i];
  }
  printf("checksum %llu\n", (unsigned long long)sum);
  wl_print_remote_stats("wl_prodcons");
  return 0;
}
