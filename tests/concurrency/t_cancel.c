/* SPDX-License-Identifier: MIT */
/* Cancellation (issue 10, defect 5): axmalloc's own output is not a cancellation point, and
 * threads cancelled at any cancellation point between allocations leave the heap sound.
 *
 *   t_cancel stats     malloc_stats() in a thread with a cancellation pending: the whole
 *                      report arrives, then the thread is cancelled at its next
 *                      cancellation point (glibc's tst-malloc-stats-cancellation)
 *   t_cancel print     the same with ax_stats_print(), axmalloc's own report
 *   t_cancel fatal     free() of a bad pointer in a thread with a cancellation pending
 *                      aborts (SIGABRT, with the message); it must not cancel the thread
 *   t_cancel storm [rounds]   threads that allocate, hand blocks to each other and free
 *                      remotely are cancelled at random cancellation points and replaced;
 *                      cleanup handlers free what they hold; everything is checked after
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#pragma GCC diagnostic ignored "-Wfree-nonheap-object"

/* ---- a report written by a thread with a cancellation pending -------------------------- */

static pthread_barrier_t gate;
static void (*report)(void);
static volatile int after_report;

static void stats_report(void) { malloc_stats(); }
static void own_report(void) { ax_stats_print(); }

static void *reporter(void *arg) {
  pthread_barrier_wait(&gate); /* not a cancellation point: the request is pending now */
  report();
  after_report = 1;
  pthread_testcancel(); /* cancelled here */
  after_report = 2;
  return NULL;
}

/* Run report() in a thread cancelled before it starts; stderr goes to a pipe meanwhile. */
static void run_report(const char *name, void (*fn)(void), const char *last_line) {
  report = fn;
  int fds[2], saved = dup(2);
  CHECK(pipe(fds) == 0 && saved >= 0);
  fflush(stderr);
  CHECK(dup2(fds[1], 2) == 2);
  close(fds[1]);
  CHECK(pthread_barrier_init(&gate, NULL, 2) == 0);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, reporter, NULL) == 0);
  CHECK(pthread_cancel(t) == 0);
  pthread_barrier_wait(&gate);
  void *ret = NULL;
  CHECK(pthread_join(t, &ret) == 0);
  dup2(saved, 2);
  close(saved);
  static char out[16384];
  size_t len = 0;
  ssize_t r;
  while ((r = read(fds[0], out + len, sizeof out - 1 - len)) > 0)
    len += (size_t)r;
  out[len] = 0;
  close(fds[0]);
  CHECKF(ret == PTHREAD_CANCELED && after_report == 1,
         "%s: the thread was not cancelled after "
         "its report (%s, step %d)",
         name, ret == PTHREAD_CANCELED ? "cancelled" : "returned", after_report);
  CHECKF(strstr(out, last_line) != NULL, "%s: the report lacks \"%s\"; it was:\n%s", name,
         last_line, out);
  printf("t_cancel %s: OK (%zu bytes of report, then cancelled)\n", name, len);
}

/* ---- a fatal error in a thread with a cancellation pending --------------------------------- */

static char stack_junk[64] __attribute__((aligned(16)));

static void *bad_freer(void *arg) {
  pthread_barrier_wait(&gate);
  free(stack_junk + 16);
  return NULL;
}

static void run_fatal(void) {
  int fds[2];
  CHECK(pipe(fds) == 0);
  pid_t pid = fork_to_die();
  if (pid == 0) {
    dup2(fds[1], 2);
    CHECK(pthread_barrier_init(&gate, NULL, 2) == 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, bad_freer, NULL) == 0);
    CHECK(pthread_cancel(t) == 0);
    pthread_barrier_wait(&gate);
    pthread_join(t, NULL);
    _exit(0); /* the thread was cancelled instead of the process aborting */
  }
  close(fds[1]);
  char out[4096];
  ssize_t n = read(fds[0], out, sizeof out - 1);
  out[n > 0 ? n : 0] = 0;
  close(fds[0]);
  int st;
  CHECK(waitpid(pid, &st, 0) == pid);
  CHECKF(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "the bad free did not abort (%s %d)",
         WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  CHECKF(strstr(out, "axmalloc: free(): invalid pointer"), "no message: %s", out);
  printf("t_cancel fatal: OK (aborted with the message)\n");
}

/* ---- a storm of cancelled threads -------------------------------------------------------- */

#define SLOTS 512
#define THREADS 4
static uintptr_t slots[SLOTS]; /* blocks handed between threads (atomic exchange) */

struct held {
  void *blk[16];
};
static void release_held(void *arg) {
  struct held *h = arg;
  for (int i = 0; i < 16; i++)
    free(h->blk[i]);
}

static size_t size_for(uint64_t r) { return r % 31 == 0 ? 40000 + r % 300000 : 8 + r % 3000; }

/* Each block carries its size and a pattern derived from its address. */
static void *make(size_t n) {
  uint32_t *p = malloc(n);
  CHECK(p != NULL);
  p[0] = (uint32_t)n;
  p[1] = (uint32_t)(uintptr_t)p ^ 0x5bd1e995u;
  return p;
}
static void check_block(void *b) {
  uint32_t *p = b;
  CHECKF(p[1] == ((uint32_t)(uintptr_t)p ^ 0x5bd1e995u), "block %p overwritten", b);
  CHECK(malloc_usable_size(p) >= p[0]);
}

static void *stormer(void *arg) {
  struct held h;
  memset(&h, 0, sizeof h);
  pthread_cleanup_push(release_held, &h);
  uint64_t rs = (uintptr_t)arg * 0x9e3779b97f4a7c15u + 1;
  for (;;) {
    uint64_t r = rnd_next(&rs);
    unsigned k = (unsigned)(r % 16);
    if (h.blk[k]) {
      check_block(h.blk[k]);
      free(h.blk[k]);
    }
    h.blk[k] = make(size_for(r >> 8));
    /* hand a block over: whoever takes it frees it remotely */
    void *mine = make(size_for(r >> 24));
    uintptr_t old =
        __atomic_exchange_n(&slots[(r >> 40) % SLOTS], (uintptr_t)mine, __ATOMIC_ACQ_REL);
    if (old) {
      check_block((void *)old);
      free((void *)old);
    }
    pthread_testcancel();
  }
  pthread_cleanup_pop(1);
  return NULL;
}

static void run_storm(int rounds) {
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++)
    CHECK(pthread_create(&t[i], NULL, stormer, (void *)(uintptr_t)(i + 1)) == 0);
  uint64_t rs = 7;
  for (int round = 0; round < rounds; round++) {
    struct timespec ts = {0, (long)(rnd_next(&rs) % 2000000)};
    nanosleep(&ts, NULL);
    int i = (int)(rnd_next(&rs) % THREADS);
    CHECK(pthread_cancel(t[i]) == 0);
    void *ret;
    CHECK(pthread_join(t[i], &ret) == 0 && ret == PTHREAD_CANCELED);
    CHECK(pthread_create(&t[i], NULL, stormer, (void *)(uintptr_t)(round * THREADS + i + 7)) == 0);
  }
  for (int i = 0; i < THREADS; i++) {
    pthread_cancel(t[i]);
    pthread_join(t[i], NULL);
  }
  size_t left = 0;
  for (int k = 0; k < SLOTS; k++)
    if (slots[k]) {
      check_block((void *)slots[k]);
      free((void *)slots[k]);
      left++;
    }
  malloc_trim(0);
  ax_stats_t st;
  ax_stats_get(&st);
  CHECK(st.heaps_live >= 1 && st.heaps_live <= 2);
  printf("t_cancel storm: OK (%d threads cancelled mid-work, %zu hand-offs left)\n", rounds, left);
}

int main(int argc, char **argv) {
  check_axmalloc_active();
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "stats") == 0)
    run_report("stats", stats_report, "max mmap bytes");
  else if (strcmp(mode, "print") == 0)
    run_report("print", own_report, "class  block size");
  else if (strcmp(mode, "fatal") == 0)
    run_fatal();
  else if (strcmp(mode, "storm") == 0)
    run_storm(argc > 2 ? atoi(argv[2]) : 200);
  else
    CHECKF(0, "usage: t_cancel stats|print|fatal|storm [rounds]");
  return 0;
}
