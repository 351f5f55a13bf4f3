/* SPDX-License-Identifier: MIT */
/* wl_scratch.c -- passive false sharing (Hoard's and mimalloc-bench's cache-scratch).
 *
 * The main thread allocates one small object per worker, side by side (so several share a
 * cache line), and hands one to each. Each worker frees its object (a remote free), then
 * `iterations` times allocates an object of the same size, writes each of its bytes
 * `repetitions` times, and frees it. An allocator that gives a worker the block another
 * thread freed, or blocks next to other threads' blocks, makes the workers write one cache
 * line from several cores: the time shows it.
 *
 * Usage: wl_scratch [threads [iterations [size [repetitions]]]]   (defaults 2 1000 8 50000)
 *   (mimalloc-bench's cache-scratch takes the same arguments; each worker makes iterations *
 *   size * repetitions byte increments)
 *
 * stdout: exactly one line "checksum <n>" (the bytes written). Exit status 1 on allocation
 * failure or a byte that another thread changed.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_THREADS 64

static long iterations, repetitions;
static size_t size;

static void die(const char *msg) {
  fprintf(stderr, "wl_scratch: FAILED: %s\n", msg);
  exit(1);
}

static void *worker(void *arg) {
  free(arg);
  for (long i = 0; i < iterations; i++) {
    volatile unsigned char *p = malloc(size);
    if (!p)
      die("malloc returned NULL");
    for (size_t k = 0; k < size; k++)
      p[k] = 0;
    for (long r = 0; r < repetitions; r++)
      for (size_t k = 0; k < size; k++)
        p[k] = (unsigned char)(p[k] + 1);
    for (size_t k = 0; k < size; k++)
      if (p[k] != (unsigned char)repetitions)
        die("another thread wrote into this thread's block");
    free((void *)p);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 2;
  iterations = argc > 2 ? atol(argv[2]) : 1000;
  size = argc > 3 ? (size_t)atol(argv[3]) : 8;
  repetitions = argc > 4 ? atol(argv[4]) : 50000;
  if (threads < 1 || threads > MAX_THREADS || iterations < 1 || size < 1 || repetitions < 1)
    return 2;
  void *obj[MAX_THREADS];
  for (int i = 0; i < threads; i++)
    if (!(obj[i] = malloc(size)))
      die("malloc returned NULL");
  pthread_t t[MAX_THREADS];
  for (int i = 0; i < threads; i++)
    if (pthread_create(&t[i], NULL, worker, obj[i]))
      die("pthread_create");
  for (int i = 0; i < threads; i++)
    pthread_join(t[i], NULL);
  printf("checksum %llu\n",
         (unsigned long long)threads * (unsigned long long)iterations * size * repetitions);
  return 0;
}
