/* SPDX-License-Identifier: MIT */
/* A thread that allocates in its last TSD destructors (heap.c, "heap_exited").
 *
 * The thread's own heap is done by axmalloc's key destructor; another key's destructor, which
 * runs after it in every round and sets itself again each time, then allocates and frees
 * (cached and small classes, remote frees into main's pages) in all four rounds glibc runs
 * (PTHREAD_DESTRUCTOR_ITERATIONS). The heap made in the last round is never done. Before the
 * fix it kept the thread's id, which glibc gives the next thread with the same stack: that
 * thread's frees of the late blocks went to the shared empty heap's cache as an owner's, and
 * its own heap shared an id with the late one (ax_test_validate reports both). And every
 * remote free of the late rounds reaches main's pages once main trims (issue 38: a heap made in
 * the last round is never done, so a batch it kept would never be sent; it keeps none).
 *
 *   t_tsd_late     (linked with axmalloc_hooks)
 */
#include <pthread.h>
#include <string.h>

#include "hooks.h"
#include "testutil.h"

#define ROUNDS 4 /* glibc's PTHREAD_DESTRUCTOR_ITERATIONS */
#define PER 40

static pthread_key_t key;
static void *late[ROUNDS][PER];
static void *mains[PER];
static int rounds;
static pthread_t first;

static void destructor(void *arg) {
  (void)arg;
  int r = rounds++;
  if (r >= ROUNDS)
    return;
  for (int i = 0; i < PER; i++) {
    late[r][i] = malloc(i % 2 ? 4096 : 64); /* (a cached class and a small one) */
    CHECK(late[r][i] != NULL);
    free(malloc(i % 3 ? 2048 : 100));
  }
  for (int i = r; i < PER; i += ROUNDS) /* remote frees: into main's pages */
    free(mains[i]), mains[i] = NULL;
  CHECK(pthread_setspecific(key, (void *)1) == 0); /* called again next round */
}

static void *exiting(void *arg) {
  (void)arg;
  free(malloc(100)); /* a heap of its own first: axmalloc's key has a value */
  CHECK(pthread_setspecific(key, (void *)1) == 0);
  return NULL;
}

/* main's live blocks of mains[]'s class (64 B) */
static uint64_t live64(void) {
  ax_stats_t s;
  ax_stats_get(&s);
  for (unsigned c = 1; c < AX_NUM_CLASSES; c++)
    if (ax_class_size(c) >= 64)
      return s.class_live[c];
  return ~(uint64_t)0;
}

static pthread_t self_id;
static void *reuser(void *arg) {
  (void)arg;
  self_id = pthread_self();
  for (int r = 0; r < ROUNDS; r++) /* frees before its first malloc */
    for (int i = 0; i < PER; i++)
      free(late[r][i]);
  void *p[PER];
  for (int i = 0; i < PER; i++) /* now a heap of its own */
    CHECK((p[i] = malloc(4096)) != NULL);
  for (int i = 0; i < PER; i++)
    free(p[i]);
  return NULL;
}

int main(void) {
  check_axmalloc_active(); /* axmalloc's key exists from the first malloc: created before ours */
  CHECK(pthread_key_create(&key, destructor) == 0);
  for (int i = 0; i < PER; i++)
    CHECK((mains[i] = malloc(64)) != NULL);
  uint64_t live0 = live64();
  CHECK(pthread_create(&first, NULL, exiting, NULL) == 0);
  CHECK(pthread_join(first, NULL) == 0);
  CHECKF(rounds == ROUNDS + 1 || rounds == ROUNDS, "the destructor ran %d times", rounds);
  int freed = 0;
  for (int i = 0; i < PER; i++)
    freed += mains[i] == NULL;
  malloc_trim(0); /* (takes our inbox, and the pages' lists of remote frees) */
  /* (at most: the profiler's sampled blocks and checked mode's bigger ones are of no class) */
  uint64_t left = live0 > (uint64_t)freed ? live0 - (uint64_t)freed : 0;
  CHECKF(live64() <= left, "%d of main's blocks freed in the late rounds, %llu still live of %llu",
         freed, (unsigned long long)live64(), (unsigned long long)live0);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, reuser, NULL) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  /* (glibc reuses the joined thread's stack, and with it the thread pointer: the test is only
   * meaningful then) */
  CHECKF(pthread_equal(self_id, first), "the new thread got another thread pointer");
  unsigned bad = ax_test_validate();
  CHECKF(bad == 0, "%u problems after a thread's late heap", bad);
  for (int i = 0; i < PER; i++)
    free(mains[i]);
  printf("t_tsd_late: %d destructor rounds allocated, the late heap's blocks freed by the next "
         "thread with that stack: consistent\n",
         rounds < ROUNDS ? rounds : ROUNDS);
  return 0;
}
