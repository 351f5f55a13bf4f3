/* SPDX-License-Identifier: MIT */
/* Valgrind: a deliberate leak of 4096 + 48 bytes (class sizes, so memcheck reports the same
 * bytes whether it registers axmalloc's usable sizes or replaces malloc with its own) must
 * be reported as "definitely lost: 4,144 bytes in 2 blocks" (tests/modes/modes.cmake).
 *   t_vg_leak        axmalloc must be the malloc (AX_VALGRIND build, somalloc=nomatch)
 *   t_vg_leak plain  whatever malloc valgrind left us (its own, without nomatch) */
#include <string.h>

#include "testutil.h"

static void *volatile keep;

static __attribute__((noinline)) void leak(void) {
  char *a = malloc(4096), *b = malloc(48);
  CHECK(a && b);
  memset(a, 1, 4096);
  memset(b, 2, 48);
  keep = a; /* used, then forgotten */
  keep = b;
  keep = NULL;
}

/* overwrite the stack the leaking frame used, so no stale copy of a pointer survives */
static __attribute__((noinline)) void scrub(void) {
  volatile char junk[4096];
  memset((char *)junk, 0, sizeof junk);
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "plain") != 0)
    check_axmalloc_active();
  leak();
  scrub();
  void *ok = malloc(100); /* a block freed properly is not reported */
  free(ok);
  printf("t_vg_leak: leaked 2 blocks\n");
  return 0;
}
