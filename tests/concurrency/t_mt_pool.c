/* SPDX-License-Identifier: MIT */
/* t_mt_pool: the heap pool under many threads that start and exit at once (issue 39).
 *
 * Each round starts N threads (1,000 by default) that all start their heaps at once (a
 * barrier releases them together), allocate a few blocks, hand one to main and wait at a
 * second barrier, so N heaps are in use together; then they all exit at once, giving their
 * heaps back together, and the next round's threads take them again (pops and pushes of the
 * pool's stack interleaved with each other). Main frees the handed blocks after the joins:
 * remote frees into heaps that a new thread may be taking over.
 *
 * Asserts: every block intact; ax_stats heaps_live is 1 + N while a round's threads are all
 * alive (no heap handed to two threads) and back to 1 after the joins; after the first round
 * the pool serves every thread, so os_committed does not grow with the rounds. Run natively,
 * under ThreadSanitizer (tsan.t_mt_pool: the pool's CASes, the registry, the reuse) and
 * under qemu.
 *
 * usage: t_mt_pool [threads=1000] [rounds=3]
 */
#include <axmalloc.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>

#include "sys_check.h"

static unsigned nthreads = 1000;
static pthread_barrier_t start, alive, counted;
static void **handed;

static void *run(void *arg) {
  uintptr_t i = (uintptr_t)arg;
  pthread_barrier_wait(&start); /* every thread's first malloc at once */
  unsigned char *mine[8];
  for (int k = 0; k < 8; k++) {
    size_t n = 16 + (i * 7 + (uintptr_t)k * 40) % 1000;
    mine[k] = malloc(n);
    CHECK(mine[k] != NULL);
    memset(mine[k], (int)(i + (uintptr_t)k) & 0xff, n);
  }
  handed[i] = mine[0];
  pthread_barrier_wait(&alive);   /* every heap in use at once */
  pthread_barrier_wait(&counted); /* ... until main has counted them */
  for (int k = 1; k < 8; k++) {
    size_t n = 16 + (i * 7 + (uintptr_t)k * 40) % 1000;
    for (size_t b = 0; b < n; b++)
      CHECK(mine[k][b] == ((i + (uintptr_t)k) & 0xff));
    free(mine[k]);
  }
  return NULL;
}

static uint64_t heaps_live(void) {
  ax_stats_t s;
  ax_stats_get(&s);
  return s.heaps_live;
}

int main(int argc, char **argv) {
  unsigned rounds = 3;
  if (argc > 1)
    nthreads = (unsigned)atoi(argv[1]);
  if (argc > 2)
    rounds = (unsigned)atoi(argv[2]);
  CHECK(nthreads >= 1 && rounds >= 1);
  free(malloc(16)); /* main's heap */
  pthread_t *t = malloc(nthreads * sizeof *t);
  handed = malloc(nthreads * sizeof *handed);
  CHECK(t && handed);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  size_t stack = 256 << 10; /* (TSan's own frames need more than a bare thread's) */
  if (stack < (size_t)PTHREAD_STACK_MIN)
    stack = PTHREAD_STACK_MIN;
  pthread_attr_setstacksize(&attr, stack);
  uint64_t committed_after_first = 0;
  for (unsigned r = 0; r < rounds; r++) {
    pthread_barrier_init(&start, NULL, nthreads);
    pthread_barrier_init(&alive, NULL, nthreads + 1);
    pthread_barrier_init(&counted, NULL, nthreads + 1);
    for (unsigned i = 0; i < nthreads; i++)
      CHECK(pthread_create(&t[i], &attr, run, (void *)(uintptr_t)i) == 0);
    pthread_barrier_wait(&alive);
    uint64_t live = heaps_live();
    CHECKF(live == 1 + nthreads, "round %u: %llu heaps live with %u threads and main", r,
           (unsigned long long)live, nthreads);
    pthread_barrier_wait(&counted);
    for (unsigned i = 0; i < nthreads; i++)
      CHECK(pthread_join(t[i], NULL) == 0);
    CHECKF(heaps_live() == 1, "round %u: %llu heaps live after the joins", r,
           (unsigned long long)heaps_live());
    for (unsigned i = 0; i < nthreads; i++) {
      size_t n = 16 + (i * 7) % 1000;
      for (size_t b = 0; b < n; b++)
        CHECK(((unsigned char *)handed[i])[b] == (i & 0xff));
      free(handed[i]); /* (into a heap the next round's thread may take) */
    }
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&alive);
    pthread_barrier_destroy(&counted);
    ax_stats_t s;
    ax_stats_get(&s);
    if (r == 0)
      committed_after_first = s.os_committed;
    else /* the heaps came from the pool: nothing new but what the blocks need */
      CHECKF(s.os_committed <= committed_after_first + committed_after_first / 2,
             "round %u: %llu bytes committed, %llu after the first", r,
             (unsigned long long)s.os_committed, (unsigned long long)committed_after_first);
  }
  free(t);
  free(handed);
  printf("t_mt_pool: OK (%u rounds of %u threads)\n", rounds, nthreads);
  return 0;
}
