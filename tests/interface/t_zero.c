/* SPDX-License-Identifier: MIT */
/* Zero-size blocks (src/common/zero.c): malloc(0), calloc(0, n), realloc(NULL, 0) and
 * aligned_alloc(16, 0) give unique 16-byte aligned pointers into one inaccessible reservation
 * of a segment's size, aligned as segments are; malloc_usable_size says 0, realloc moves them
 * to a real block, free gives them back (a second free aborts), a read or a write through one
 * faults, and with every slot live malloc(0) falls back to a block of 16 bytes. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define SLOT ((uintptr_t)4 << 20)
#define SLOTS (1u << 18)

static void *volatile sink;

/* The child does `what`; it must die of signal sig (its stderr naming p when msg is set). */
static void dies(void (*what)(void *), void *p, int sig) {
  pid_t pid = fork_to_die();
  if (pid == 0) {
    what(p);
    _exit(0);
  }
  int st;
  CHECK(waitpid(pid, &st, 0) == pid);
  CHECKF(WIFSIGNALED(st) && WTERMSIG(st) == sig, "child: %s %d, want signal %d",
         WIFSIGNALED(st) ? "signal" : "exit status",
         WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), sig);
}
static void read_it(void *p) { sink = (void *)(uintptr_t) * (volatile char *)p; }
static void write_it(void *p) { *(volatile char *)p = 1; }
static void free_twice(void *p) {
  free(p);
  free(p);
}

int main(void) {
  check_axmalloc_active();
  enum { N = 1000 };
  static char *z[N];
  z[0] = malloc(0);
  uintptr_t base = (uintptr_t)z[0] & ~(SLOT - 1);
  for (int i = 1; i < N; i++) {
    z[i] = i % 3 == 0 ? calloc(0, 8) : i % 3 == 1 ? realloc(NULL, 0) : aligned_alloc(16, 0);
    CHECK(z[i] != NULL);
  }
  for (int i = 0; i < N; i++) {
    CHECKF(((uintptr_t)z[i] & ~(SLOT - 1)) == base, "%p outside the reservation at %p",
           (void *)z[i], (void *)base);
    CHECK(((uintptr_t)z[i] & 15) == 0);
    CHECK(malloc_usable_size(z[i]) == 0);
    for (int k = 0; k < i; k++)
      CHECKF(z[k] != z[i], "malloc(0) gave %p twice", (void *)z[i]);
  }
  /* realloc: nothing to keep; a real block comes back */
  char *r = realloc(z[0], 100);
  CHECK(r != NULL && ((uintptr_t)r & ~(SLOT - 1)) != base && malloc_usable_size(r) >= 100);
  r[99] = 1;
  free(r);
  z[0] = malloc(0);
  CHECK(z[0] != NULL);
  int saved = errno = 4321;
  for (int i = 0; i < N; i++)
    free(z[i]);
  CHECK(errno == saved); /* free keeps errno */
  /* misuse */
  char *p = malloc(0);
  dies(read_it, p, SIGSEGV);
  dies(write_it, p, SIGSEGV);
  dies(free_twice, p, SIGABRT);
  free(p);
  /* every slot live: a block of 16 bytes instead, still freeable */
  static char *all[SLOTS + 1];
  size_t outside = 0;
  for (unsigned i = 0; i <= SLOTS; i++) {
    CHECK((all[i] = malloc(0)) != NULL);
    outside += ((uintptr_t)all[i] & ~(SLOT - 1)) != base;
  }
  CHECKF(outside >= 1, "%u zero-size blocks live and none outside the reservation", SLOTS + 1);
  for (unsigned i = 0; i <= SLOTS; i++)
    free(all[i]);
  printf("t_zero: OK\n");
  return 0;
}
