/* SPDX-License-Identifier: MIT */
/* The exact leak checker's program (tests/t_leaks.sh runs it with AXMALLOC_LEAKS):
 *
 *   t_leaks main     1,000 blocks of 4 KiB lost from a static function (leak_some), one block
 *                    held by a global and one by main's stack, everything else freed, exit()
 *   t_leaks none     everything freed: no report, exit status 0
 *   t_leaks remote   1,000 blocks another thread frees: no leak
 *   t_leaks fork     main's leak, and a fork child that exits: only the parent reports
 *
 * Built with -O2 and without -rdynamic: leak_some is in no dynamic symbol table.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void *volatile held_by_global;
static void *blocks[1000];

__attribute__((noinline)) static void leak_some(void) {
  for (int i = 0; i < 1000; i++) {
    blocks[i] = malloc(4096);
    memset(blocks[i], i, 64);
  }
  for (int i = 0; i < 1000; i++) /* the only pointers to them, gone */
    blocks[i] = NULL;
}

/* Everything else the program allocates is freed: every size class, huge blocks, realloc. */
static void churn(void) {
  for (size_t n = 0; n < 300000; n = n * 5 / 4 + 1) {
    void *p = malloc(n);
    p = realloc(p, n + 100);
    free(p);
  }
  void *a;
  if (posix_memalign(&a, 4096, 10000) == 0)
    free(a);
  free(calloc(100, 100));
  free(aligned_alloc(1 << 20, 1 << 20));
  free(malloc(8 << 20));
}

static void *free_them(void *arg) {
  void **v = arg;
  for (int i = 0; i < 1000; i++)
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
      blocks[i] = malloc(4096);
    pthread_t t;
    pthread_create(&t, NULL, free_them, blocks);
    pthread_join(t, NULL);
    memset(blocks, 0, sizeof blocks);
    printf("t_leaks: remote\n");
    return 0;
  }
  if (strcmp(mode, "main") && strcmp(mode, "fork")) {
    fprintf(stderr, "usage: t_leaks main|none|remote|fork\n");
    return 2;
  }
  leak_some();
  held_by_global = malloc(100);
  void *volatile held_by_stack = malloc(200);
  if (!strcmp(mode, "fork")) {
    pid_t pid = fork();
    if (pid == 0) {
      malloc(300); /* the child's own, and its parent's: not reported by the child */
      exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    printf("t_leaks: child status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  printf("t_leaks: buffered output\n"); /* stdout is a file or pipe here: flushed at exit */
  exit(held_by_stack ? 0 : 1);
}
