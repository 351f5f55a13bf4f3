/* SPDX-License-Identifier: MIT */
/* The exact leak checker's program (tests/modes/t_leaks.sh runs it with AXMALLOC_LEAKS):
 *
 *   t_leaks main     1,000 blocks of 4 KiB lost from a static function (leak_some), one block
 *                    held by a global and one by main's stack, everything else freed, exit()
 *   t_leaks none     everything freed: no report, exit status 0
 *   t_leaks remote   1,000 blocks another thread frees: no leak
 *   t_leaks fork     main's leak, and a fork child that exits: only the parent reports
 *   t_leaks graph    lost blocks pointing at lost blocks: a list's head (48 bytes, direct)
 *                    and its two nodes (64 bytes each, indirect); a block pointing at itself
 *                    (80 bytes, direct: its own pointer does not count); a cycle of two blocks
 *                    nothing else points at (96 bytes each, indirect, as LeakSanitizer's)
 *
 * Built with -O2 and without -rdynamic: leak_some is in no dynamic symbol table. What the
 * leak checker reports is checked by t_leaks.sh; the program checks that each step it relies
 * on happened (every block allocated, the thread and the fork child ran, the child exited 0).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

void *volatile held_by_global;
static void *blocks[1000];

__attribute__((noinline)) static void leak_some(void) {
  for (int i = 0; i < 1000; i++) {
    blocks[i] = malloc(4096);
    CHECK(blocks[i] != NULL);
    memset(blocks[i], i, 64);
  }
  for (int i = 0; i < 1000; i++) /* the only pointers to them, gone */
    blocks[i] = NULL;
}

/* Everything else the program allocates is freed: every size class, huge blocks, realloc. */
static void churn(void) {
  for (size_t n = 0; n < 300000; n = n * 5 / 4 + 1) {
    void *p = malloc(n);
    CHECK(p != NULL);
    p = realloc(p, n + 100);
    CHECK(p != NULL);
    free(p);
  }
  void *a = NULL;
  CHECK(posix_memalign(&a, 4096, 10000) == 0 && ((uintptr_t)a & 4095) == 0);
  free(a);
  void *z = calloc(100, 100), *big = aligned_alloc(1 << 20, 1 << 20), *huge = malloc(8 << 20);
  CHECK(z != NULL && big != NULL && ((uintptr_t)big & ((1 << 20) - 1)) == 0 && huge != NULL);
  free(z);
  free(big);
  free(huge);
}

/* A block of n bytes whose first word is next: from call sites of their own, so each group
 * of the graph is a stack of its own. */
__attribute__((noinline)) static void **node(size_t n, void *next) {
  void **b = malloc(n);
  CHECK(b != NULL);
  memset(b, 0, n);
  b[0] = next;
  return b;
}

__attribute__((noinline)) static void leak_graph(void) {
  void **tail = node(64, NULL);
  void **middle = node(64, tail);
  void **head = node(48, middle);
  void **self = node(80, NULL);
  self[1] = self;
  void **a = node(96, NULL);
  void **b = node(96, a);
  a[0] = b;
  held_by_global = head; /* (held, then dropped: the compiler keeps them all) */
  held_by_global = self;
  held_by_global = a;
  held_by_global = NULL;
}

/* The stack below main's frame written over: no stale copy of a graph's pointer (the scan
 * reads the exiting thread's stack conservatively; the static program's exit path left one
 * of the cycle's in a frame it did not write). */
__attribute__((noinline)) static void clear_stack(void) {
  volatile char junk[16384];
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = 0;
}

static int freed_remotely;
static void *free_them(void *arg) {
  void **v = arg;
  for (int i = 0; i < 1000; i++, freed_remotely++)
    free(v[i]);
  return NULL;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  churn();
  if (!strcmp(mode, "none")) {
    printf("t_leaks: none\n");
    return 0;
  }
  if (!strcmp(mode, "remote")) {
    for (int i = 0; i < 1000; i++)
      CHECK((blocks[i] = malloc(4096)) != NULL);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, free_them, blocks) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(freed_remotely == 1000);
    memset(blocks, 0, sizeof blocks);
    printf("t_leaks: remote\n");
    return 0;
  }
  if (!strcmp(mode, "graph")) {
    leak_graph();
    clear_stack();
    printf("t_leaks: graph\n");
    return 0;
  }
  if (strcmp(mode, "main") && strcmp(mode, "fork")) {
    fprintf(stderr, "usage: t_leaks main|none|remote|fork|graph\n");
    return 2;
  }
  leak_some();
  clear_stack(); /* (leak_some's mallocs left copies of its blocks' addresses below main: the
                    layout of the malloc path's frames decided whether the exit path wrote
                    over them, and one was reported still reachable in an UBSan build) */
  held_by_global = malloc(100);
  void *volatile held_by_stack = malloc(200);
  CHECK(held_by_global != NULL && held_by_stack != NULL);
  if (!strcmp(mode, "fork")) {
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      malloc(300); /* the child's own, and its parent's: not reported by the child */
      exit(0);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    printf("t_leaks: child status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  printf("t_leaks: buffered output\n"); /* stdout is a file or pipe here: flushed at exit */
  exit(held_by_stack ? 0 : 1);
}
