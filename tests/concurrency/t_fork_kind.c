/* SPDX-License-Identifier: MIT */
/* What a fork child may inherit on its pages' thread_free lists, and what it assumes.
 *
 *   single    the child of a process that never had a second thread keeps the
 *             single-threaded shortcuts (ax_info's remote_frees_possible 0: no atomic, no look
 *             at thread_free, trim walks only the classes with empty pages), and its heap works
 *   threaded  the child of a process that had one (here: a thread freed blocks of the main
 *             thread's page and exited, so they wait on thread_free) knows blocks may wait
 *             there: it collects them (the class's live count falls to 0 after a trim) and
 *             reuses them
 * With AXMALLOC_FORCE_MT=1 the process counts as multi-threaded from the start: both
 * children then take the threaded side. Each child reports through its exit status. */
#include <pthread.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define N 300
#define SIZE 48

static void *blocks[N];

static uint64_t live(void) {
  ax_stats_t s;
  ax_stats_get(&s);
  for (unsigned c = 1; c < AX_NUM_CLASSES; c++)
    if (ax_class_size(c) >= SIZE)
      return s.class_live[c];
  return ~(uint64_t)0;
}

/* In the child: exit 0 when remote frees count as possible exactly when expected, the
 * inherited blocks are all collected and the heap hands out and takes back blocks. */
static int remote_possible(void) {
  ax_info_t info;
  ax_info(&info);
  return info.remote_frees_possible;
}

static void child(int expect_possible, bool inherited) {
  if (remote_possible() != expect_possible)
    _exit(2);
  if (inherited) {
    malloc_trim(0);
    if (live() != 0)
      _exit(3);
  }
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < N; i++)
      if (!(blocks[i] = malloc(SIZE)))
        _exit(4);
    for (int i = 0; i < N; i++)
      free(blocks[i]);
    malloc_trim(0);
    if (live() != 0)
      _exit(5);
  }
  _exit(0);
}

static void fork_and_wait(int expect_possible, bool inherited, const char *name) {
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0)
    child(expect_possible, inherited);
  int st;
  CHECK(waitpid(pid, &st, 0) == pid);
  CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: child status %d", name, st);
  printf("t_fork_kind %-9s ok\n", name);
}

static void *free_all(void *arg) {
  (void)arg;
  for (int i = 0; i < N; i++)
    free(blocks[i]);
  return NULL;
}

int main(void) {
  ax_info_t info;
  ax_info(&info);
  CHECK(info.remote_frees_possible == !info.single_threaded); /* (AXMALLOC_FORCE_MT=1: 1) */
  fork_and_wait(!info.single_threaded, false, "single");
  for (int i = 0; i < N; i++)
    CHECK((blocks[i] = malloc(SIZE)) != NULL);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, free_all, NULL) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  CHECK(remote_possible() == 1);
  fork_and_wait(1, true, "threaded");
  printf("t_fork_kind: OK\n");
  return 0;
}
