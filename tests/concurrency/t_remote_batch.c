/* SPDX-License-Identifier: MIT */
/* Remote frees in batches (src/common/remote.c), through the public counters.
 *
 *   lone      one remote free is published at once, by itself (one CAS, nothing held)
 *   runs      a thread freeing 4,096 blocks of an exited thread, carved in a row, publishes
 *             them in batches: at most one CAS per 32 blocks, and every block arrives (the
 *             owner's live count falls to 0 after a trim)
 *   sparse    frees into 4 pages of an exited thread's segment: one batch for the segment
 *   scattered 4,096 blocks of 16 B .. 1 KiB of a live owner freed in a random order: at most
 *             one CAS per 32 blocks; the owner takes its inbox and has none live after
 *   exit      a thread that frees part of a chain and exits hands it over: nothing is lost
 *   heapless  a thread that never allocated gets a heap after its first frees and chains
 *             the rest
 *   double    freeing a block twice while its batch is open aborts with
 *             "axmalloc: free(): double free <p>" (a forked child)
 *   double_sent  two threads free one block and each sends it: the owner, taking its inbox,
 *             reaches it twice and aborts the same way
 *
 * Counters: ax_stats_get merges live threads' counts (remote_frees counts a chain's blocks
 * when it is published). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "axmalloc.h"
#include "testutil.h"

#define RUN 4096
#define SIZE 64

static void *blocks[RUN];

static void stats(uint64_t *frees, uint64_t *pubs) {
  ax_stats_t s;
  ax_stats_get(&s);
  *frees = s.remote_frees;
  *pubs = s.remote_publishes;
}

static uint64_t live64(void) {
  ax_stats_t s;
  ax_stats_get(&s);
  for (unsigned c = 1; c < AX_NUM_CLASSES; c++)
    if (ax_class_size(c) == SIZE)
      return s.class_live[c];
  CHECK(!"no class of 64 B");
  return 0;
}

/* The owner thread: allocates n blocks of SIZE in a row into blocks[]. */
static void *alloc_run(void *arg) {
  size_t n = (size_t)(uintptr_t)arg;
  for (size_t i = 0; i < n; i++)
    CHECK((blocks[i] = malloc(SIZE)) != NULL);
  return NULL;
}

static void run_owner(size_t n) {
  pthread_t t;
  CHECK(pthread_create(&t, NULL, alloc_run, (void *)(uintptr_t)n) == 0);
  CHECK(pthread_join(t, NULL) == 0);
}

/* Blocks of an exited thread's pages are remote frees too (its segments are abandoned). */
static void test_lone(void) {
  ax_trim(0);
  run_owner(1);
  uint64_t f0, p0, f1, p1;
  stats(&f0, &p0);
  free(blocks[0]);
  stats(&f1, &p1);
  CHECKF(f1 == f0 + 1 && p1 == p0 + 1, "lone: frees +%llu, CASes +%llu",
         (unsigned long long)(f1 - f0), (unsigned long long)(p1 - p0));
}

static void test_runs(void) {
  ax_trim(0);
  run_owner(RUN);
  uint64_t f0, p0, f1, p1;
  stats(&f0, &p0);
  for (size_t i = 0; i < RUN; i++)
    free(blocks[i]);
  ax_trim(0); /* publishes the open chains */
  stats(&f1, &p1);
  CHECKF(f1 - f0 == RUN, "runs: %llu remote frees counted", (unsigned long long)(f1 - f0));
  CHECKF((p1 - p0) * 32 <= RUN, "runs: %llu CASes for %d blocks", (unsigned long long)(p1 - p0),
         RUN);
}

/* One block of each of 4 pages of a fresh run of an exited thread (blocks 0, 1024, 2048, 3072
 * of 64 B: pages of 64 KiB hold at most 1,024), each freed once: the first goes alone (one
 * CAS) and names the abandoned segment in its slot, the other 3 wait in a batch for the
 * segment's inbox until the trim sends it (one CAS more), whatever page they are in. */
static void test_sparse(void) {
  enum { PER = 1024 };
  ax_trim(0); /* publishes and forgets what the slots name */
  run_owner(RUN);
  uint64_t f0, p0, f1, p1, f2, p2;
  stats(&f0, &p0);
  for (int i = 0; i < 4; i++)
    free(blocks[i * PER]);
  stats(&f1, &p1);
  ax_trim(0);
  stats(&f2, &p2);
  CHECKF(f1 - f0 == 1 && p1 - p0 == 1 && f2 - f0 == 4 && p2 - p0 == 2,
         "sparse: frees +%llu then +%llu, CASes +%llu then +%llu", (unsigned long long)(f1 - f0),
         (unsigned long long)(f2 - f0), (unsigned long long)(p1 - p0),
         (unsigned long long)(p2 - p0));
  for (size_t i = 0; i < RUN; i++)
    if (i % PER)
      free(blocks[i]);
  ax_trim(0);
}

/* A live owner's blocks of mixed sizes (16 B .. 1 KiB, over many pages) freed by this
 * thread in a random order: batches to the owner, at most one CAS per 32 blocks; the owner
 * takes its inbox (a trim: one exchange) and gets every block back. */
static pthread_barrier_t owner_bar;
static unsigned owner_live_after; /* blocks the owner still counts live after its trim */
static uint64_t owner_drains;

static void *scatter_owner(void *arg) {
  (void)arg;
  ax_stats_t s0, s1;
  ax_trim(0);
  ax_stats_get(&s0);
  uint64_t x = 88172645463325252ull;
  for (size_t i = 0; i < RUN; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    CHECK((blocks[i] = malloc(16 + x % 1009)) != NULL);
  }
  pthread_barrier_wait(&owner_bar); /* the blocks are there */
  pthread_barrier_wait(&owner_bar); /* all freed, and sent */
  ax_trim(0);
  ax_stats_get(&s1);
  unsigned live = 0;
  for (unsigned c = 1; c < AX_NUM_CLASSES; c++)
    live += (unsigned)(s1.class_live[c] - s0.class_live[c]);
  owner_live_after = live;
  owner_drains = s1.remote_drains - s0.remote_drains;
  return NULL;
}

static void test_scattered(void) {
  ax_trim(0);
  CHECK(pthread_barrier_init(&owner_bar, NULL, 2) == 0);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, scatter_owner, NULL) == 0);
  pthread_barrier_wait(&owner_bar);
  uint64_t f0, p0, f1, p1;
  stats(&f0, &p0);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (size_t i = RUN - 1; i > 0; i--) { /* a random order: every page at random */
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t j = x % (i + 1);
    void *p = blocks[i];
    blocks[i] = blocks[j];
    blocks[j] = p;
  }
  for (size_t i = 0; i < RUN; i++)
    free(blocks[i]);
  ax_trim(0); /* sends the open batches */
  stats(&f1, &p1);
  pthread_barrier_wait(&owner_bar);
  CHECK(pthread_join(t, NULL) == 0);
  CHECKF(f1 - f0 == RUN, "scattered: %llu remote frees counted", (unsigned long long)(f1 - f0));
  CHECKF((p1 - p0) * 32 <= RUN, "scattered: %llu CASes for %d blocks",
         (unsigned long long)(p1 - p0), RUN);
  CHECKF(owner_live_after == 0 && owner_drains >= 1,
         "scattered: the owner has %u blocks live after its trim (inboxes taken %llu)",
         owner_live_after, (unsigned long long)owner_drains);
  pthread_barrier_destroy(&owner_bar);
}

static void *free_some_and_exit(void *arg) {
  size_t n = (size_t)(uintptr_t)arg;
  free(malloc(SIZE)); /* a heap of its own */
  for (size_t i = 0; i < n; i++)
    free(blocks[i]);
  return NULL;
}

/* This thread owns the blocks; another frees 40 (under a chain's limit) and exits. */
static void test_exit(void) {
  ax_trim(0);
  uint64_t live0 = live64();
  for (size_t i = 0; i < 40; i++)
    CHECK((blocks[i] = malloc(SIZE)) != NULL);
  CHECK(live64() == live0 + 40);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, free_some_and_exit, (void *)(uintptr_t)40) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  ax_trim(0); /* collects what arrived */
  CHECKF(live64() == live0, "exit: %llu of 40 blocks did not come back",
         (unsigned long long)(live64() - live0));
}

static void *free_run_heapless(void *arg) {
  (void)arg;
  for (size_t i = 0; i < RUN; i++)
    free(blocks[i]);
  return NULL;
}

static void test_heapless(void) {
  ax_trim(0);
  for (size_t i = 0; i < RUN; i++)
    CHECK((blocks[i] = malloc(SIZE)) != NULL);
  uint64_t f0, p0, f1, p1;
  stats(&f0, &p0);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, free_run_heapless, NULL) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  stats(&f1, &p1);
  /* the first 63 went one by one, uncounted (no heap); the rest in chains */
  CHECKF(f1 - f0 >= RUN - 64 && (p1 - p0) * 16 <= RUN, "heapless: frees +%llu, CASes +%llu",
         (unsigned long long)(f1 - f0), (unsigned long long)(p1 - p0));
  ax_trim(0);
}

static void *double_free_in_chain(void *arg) {
  (void)arg;
  free(malloc(SIZE));
  free(blocks[0]);
  free(blocks[1]); /* opens the chain */
  free(blocks[2]);
  free(blocks[1]); /* again: in the open chain */
  return NULL;
}

/* In a forked child (stderr to a pipe), child() must abort with "double free <p>"; what: the
 * test's name. pre: blocks[0..2] are this thread's. */
static void expect_double_free(const char *what, void (*child)(void), const void *p) {
  int fds[2];
  CHECK(pipe(fds) == 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    child();
    _exit(0);
  }
  close(fds[1]);
  char out[512] = {0}, want[128];
  size_t got = 0;
  for (ssize_t r; got < sizeof out - 1 && (r = read(fds[0], out + got, sizeof out - 1 - got)) > 0;)
    got += (size_t)r;
  close(fds[0]);
  int st;
  CHECK(waitpid(pid, &st, 0) == pid);
  snprintf(want, sizeof want, "axmalloc: free(): double free %p\n", p);
  CHECKF(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "%s: child status %d", what, st);
  CHECKF(strstr(out, want) != NULL, "%s: child said '%s', expected '%s'", what, out, want);
}

static void alloc3(void) {
  ax_trim(0);
  for (size_t i = 0; i < 3; i++)
    CHECK((blocks[i] = malloc(SIZE)) != NULL);
}

static void double_in_chain_child(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, double_free_in_chain, NULL) == 0)
    pthread_join(t, NULL);
}

static void test_double(void) {
  alloc3();
  expect_double_free("double", double_in_chain_child, blocks[1]);
}

/* A block freed twice by two other threads, each of which sends it: the owner reaches it twice
 * in its inbox, and its trim aborts naming it (a forked child, whose main thread owns the
 * block). */
static void *free_one_and_trim(void *arg) {
  free(malloc(SIZE)); /* a heap of its own: the free goes to a batch */
  free(blocks[0]);
  free(blocks[(uintptr_t)arg]);
  ax_trim(0); /* sends it */
  return NULL;
}

static void double_sent_child(void) {
  pthread_t t;
  for (uintptr_t k = 1; k <= 2; k++)
    if (pthread_create(&t, NULL, free_one_and_trim, (void *)k) == 0)
      pthread_join(t, NULL);
  ax_trim(0); /* takes the inbox */
}

static void test_double_sent(void) {
  alloc3();
  expect_double_free("double_sent", double_sent_child, blocks[0]);
}

int main(void) {
  check_axmalloc_active();
  free(malloc(SIZE)); /* this thread has a heap: its remote frees are counted */
  test_lone();
  test_runs();
  test_sparse();
  test_scattered();
  test_exit();
  test_heapless();
  test_double();
  test_double_sent();
  printf("t_remote_batch: OK\n");
  return 0;
}
