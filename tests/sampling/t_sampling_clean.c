/* SPDX-License-Identifier: MIT */
/* A correct program runs to its end with guarded sampling at every allocation the pool can
 * hold (AXMALLOC_GUARD=1, issue 43), and its data stays as it wrote it: malloc, calloc,
 * realloc (grown, shrunk), aligned_alloc, posix_memalign and memalign (alignments up to 4096),
 * strdup, malloc_usable_size and free, in 8 threads that hand blocks to each other (guarded
 * blocks freed by another thread than their own), a fork in the middle (the child frees the
 * parent's blocks, its own too, and exits 0), every block's bytes checked before it is
 * resized or freed.
 *
 *   t_sampling_clean [ROUNDS]   (ROUNDS per thread; 4000 unless given)
 *   t_sampling_clean leak       one guarded block lost on purpose, then exit 0 (the leak
 *                               checker's test: t_sampling_leak.sh)
 *
 * A block is known as guarded by its size: those asked for here are not multiples of 16, and
 * malloc_usable_size gives the bytes asked for only for a guarded block (any other's is its
 * class's size, a multiple of 16). The program counts them and fails when there are none: a
 * run with sampling at every allocation that sampled nothing proves nothing. With
 * AXMALLOC_GUARD=0 it must count none (T_SAMPLING_EXPECT=none); at a rate, some
 * (T_SAMPLING_EXPECT=some). When ax_ctl knows guard.samples, it counts as many at least. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <axmalloc.h>

#include "testutil.h"

#define THREADS 8
#define KEEP 64     /* blocks a thread holds */
#define EXCHANGE 32 /* blocks in transit between threads */

typedef struct blk {
  unsigned char *p;
  size_t size, align; /* align: 0 for malloc's */
  uint32_t seed;
} blk_t;

static atomic_ulong guarded, blocks;
static pthread_mutex_t xlock = PTHREAD_MUTEX_INITIALIZER;
static blk_t xchg[EXCHANGE];
static pthread_barrier_t forked_barrier;

static uint32_t rnd(uint32_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

static unsigned char byte_at(uint32_t seed, size_t i) {
  return (unsigned char)(seed * 31 + i * 7 + (i >> 8));
}
static void fill(blk_t *b) {
  for (size_t i = 0; i < b->size; i++)
    b->p[i] = byte_at(b->seed, i);
}
static void verify(const blk_t *b, size_t n, const char *when) {
  for (size_t i = 0; i < n; i++)
    CHECKF(b->p[i] == byte_at(b->seed, i), "%s: block %p of %zu bytes: byte %zu is %#x, not %#x",
           when, (void *)b->p, b->size, i, b->p[i], byte_at(b->seed, i));
}

/* a size up to a page and a bit more (most fit a page: sampled), never a multiple of 16 */
static size_t size_pick(uint32_t *s) {
  uint32_t r = rnd(s);
  size_t n = r % 8 == 0 ? 4097 + r % 3000 : r % 4 == 0 ? 1 + r % 4095 : 1 + r % 300;
  return n % 16 ? n : n + 3;
}

static void note(const blk_t *b) {
  size_t us = malloc_usable_size(b->p);
  CHECKF(us >= b->size, "malloc_usable_size(%p) = %zu < %zu", (void *)b->p, us, b->size);
  atomic_fetch_add(&blocks, 1);
  if (b->align == 0 && b->size % 16 && us == b->size)
    atomic_fetch_add(&guarded, 1);
}

static void blk_new(blk_t *b, uint32_t *s) {
  uint32_t how = rnd(s) % 10;
  b->size = size_pick(s);
  b->align = 0;
  b->seed = rnd(s);
  switch (how) {
  case 0: { /* calloc: zero */
    b->p = calloc(1, b->size);
    CHECKF(b->p, "calloc(1, %zu)", b->size);
    for (size_t i = 0; i < b->size; i++)
      CHECKF(b->p[i] == 0, "calloc(1, %zu) = %p: byte %zu is %#x", b->size, (void *)b->p, i,
             b->p[i]);
    break;
  }
  case 1:
  case 2:
  case 3: { /* aligned: 32 .. 4096 */
    size_t a = (size_t)32 << rnd(s) % 8;
    void *p = NULL;
    if (how == 1)
      p = aligned_alloc(a, (b->size + a - 1) & ~(a - 1));
    else if (how == 2)
      CHECKF(posix_memalign(&p, a, b->size) == 0, "posix_memalign(%zu, %zu)", a, b->size);
    else
      p = memalign(a, b->size);
    CHECKF(p && (uintptr_t)p % a == 0, "aligned allocation %d of %zu at %zu: %p", how, b->size, a,
           p);
    b->p = p;
    b->align = a;
    break;
  }
  case 4: { /* strdup of a string of size - 1 characters */
    char *t = malloc(b->size);
    CHECKF(t, "malloc(%zu)", b->size);
    for (size_t i = 0; i + 1 < b->size; i++)
      t[i] = (char)('a' + (b->seed + i) % 26);
    t[b->size - 1] = 0;
    b->p = (unsigned char *)strdup(t);
    CHECKF(b->p && strcmp((char *)b->p, t) == 0, "strdup of %zu characters", b->size - 1);
    CHECKF(strlen((char *)b->p) == b->size - 1, "strdup's length");
    free(t);
    break;
  }
  default:
    b->p = malloc(b->size);
    CHECKF(b->p, "malloc(%zu)", b->size);
  }
  note(b);
  fill(b);
}

/* grown or shrunk (a guarded block always moves: alloc.c's realloc_guarded) */
static void blk_resize(blk_t *b, uint32_t *s) {
  if (b->align)
    return;
  verify(b, b->size, "before realloc");
  size_t n = size_pick(s);
  unsigned char *q = realloc(b->p, n);
  CHECKF(q, "realloc(%p, %zu)", (void *)b->p, n);
  b->p = q;
  size_t keep = n < b->size ? n : b->size;
  verify(b, keep, "after realloc");
  b->size = n;
  note(b);
  fill(b);
}

static void blk_free(blk_t *b) {
  if (!b->p)
    return;
  verify(b, b->size, "before free");
  free(b->p);
  b->p = NULL;
}

static void churn(uint32_t seed, unsigned rounds, blk_t *keep) {
  uint32_t s = seed | 1;
  for (unsigned r = 0; r < rounds; r++) {
    blk_t *b = &keep[rnd(&s) % KEEP];
    switch (rnd(&s) % 4) {
    case 0:
      blk_free(b);
      blk_new(b, &s);
      break;
    case 1:
      if (b->p)
        blk_resize(b, &s);
      break;
    case 2: { /* hand it over: another thread frees it */
      if (!b->p)
        break;
      pthread_mutex_lock(&xlock);
      blk_t *x = &xchg[rnd(&s) % EXCHANGE];
      blk_t t = *x;
      *x = *b;
      *b = t;
      pthread_mutex_unlock(&xlock);
      break;
    }
    default:
      if (b->p)
        verify(b, b->size, "now and then");
      else
        blk_new(b, &s);
    }
  }
}

static void *thread_main(void *arg) {
  unsigned rounds = (unsigned)(uintptr_t)arg;
  blk_t keep[KEEP] = {0};
  uint32_t seed = (uint32_t)(uintptr_t)&keep ^ (uint32_t)rounds;
  churn(seed, rounds / 2, keep);
  pthread_barrier_wait(&forked_barrier); /* the main thread forks meanwhile */
  pthread_barrier_wait(&forked_barrier);
  churn(seed * 7, rounds / 2, keep);
  for (int i = 0; i < KEEP; i++)
    blk_free(&keep[i]);
  return NULL;
}

/* the child of a fork with 8 threads mid-way: frees the blocks in transit (some guarded, the
 * parent's), allocates and frees its own, exits 0 */
static void child(void) {
  pthread_mutex_unlock(&xlock); /* (the parent's thread that forked holds it: this one) */
  for (int i = 0; i < EXCHANGE; i++)
    blk_free(&xchg[i]); /* (no lock: the child has one thread) */
  blk_t keep[KEEP] = {0};
  churn(12345, 3000, keep);
  for (int i = 0; i < KEEP; i++)
    blk_free(&keep[i]);
  _exit(0);
}

/* a guarded block of size bytes, lost: no pointer to it stays anywhere */
static __attribute__((noinline)) void lose_one(size_t size) {
  for (int tries = 0; tries < 1000; tries++) {
    void *p = malloc(size);
    if (malloc_usable_size(p) == size) {
      memset(p, 0x5a, size);
      p = NULL;
      return;
    }
    free(p);
  }
  fprintf(stderr, "t_sampling_clean: no guarded block in 1000 tries\n");
  exit(1);
}

/* the stack below main's frame and the registers cleared of the lost block's address (the
 * leak scan reads the stack from its pointer up, and stale words in it are roots) */
static __attribute__((noinline)) void scrub(void) {
  volatile unsigned char buf[32768];
  for (size_t i = 0; i < sizeof buf; i++)
    buf[i] = 0;
  for (int i = 0; i < 100; i++)
    free(malloc((size_t)i * 37 + 5000)); /* (above a page: never guarded) */
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "leak") == 0) {
    lose_one(1001);
    scrub();
    return 0;
  }
  unsigned rounds = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 4000;
  pthread_t t[THREADS];
  pthread_barrier_init(&forked_barrier, NULL, THREADS + 1);
  for (int i = 0; i < THREADS; i++)
    CHECKF(pthread_create(&t[i], NULL, thread_main, (void *)(uintptr_t)rounds) == 0, "thread");
  pthread_barrier_wait(&forked_barrier);
  pthread_mutex_lock(&xlock); /* (no block in transit is half moved in the child) */
  fflush(NULL);
  pid_t pid = fork();
  CHECKF(pid >= 0, "fork");
  if (pid == 0)
    child();
  pthread_mutex_unlock(&xlock);
  int st;
  CHECKF(waitpid(pid, &st, 0) == pid, "waitpid");
  CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the fork child ended with status %#x", st);
  pthread_barrier_wait(&forked_barrier);
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  for (int i = 0; i < EXCHANGE; i++)
    blk_free(&xchg[i]);
  unsigned long g = atomic_load(&guarded), n = atomic_load(&blocks);
  const char *expect = getenv("T_SAMPLING_EXPECT");
  printf("t_sampling_clean: %lu blocks, %lu of them guarded\n", n, g);
  uint64_t samples = 0; /* ax_ctl's count, where it has one (issue 43's guard.samples) */
  size_t len = sizeof samples;
  if (ax_ctl("guard.samples", &samples, &len, NULL, 0) == 0) {
    printf("t_sampling_clean: guard.samples %llu\n", (unsigned long long)samples);
    CHECKF(samples >= g, "guard.samples %llu < %lu guarded blocks seen",
           (unsigned long long)samples, g);
  }
  if (expect && strcmp(expect, "none") == 0)
    CHECKF(g == 0, "%lu guarded blocks with sampling off", g);
  else if (expect && strcmp(expect, "some") == 0)
    CHECKF(g > 0, "no guarded block of %lu", n);
  else
    CHECKF(g >= 100, "only %lu guarded blocks of %lu", g, n);
  puts("t_sampling_clean: OK");
  return 0;
}
