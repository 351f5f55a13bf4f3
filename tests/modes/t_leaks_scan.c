/* SPDX-License-Identifier: MIT */
/* The leak checker's scan at exit with other threads still running, and a block over 4 GiB
 * (tests/modes/t_leaks_scan.sh runs it with AXMALLOC_LEAKS; issue 38, defect 3):
 *
 *   t_leaks_scan churn    a worker frees and makes huge blocks (1-8 MiB) and reallocs small
 *                         ones, all held by global arrays, while main returns: the scan must
 *                         neither crash (the blocks it reads freed and unmapped) nor report
 *                         any (blocks made after it began counted)
 *   t_leaks_scan during   (built with the test hooks: hooks.h) when the scan has read the
 *                         roots once, a worker makes a huge and a small block, the small one
 *                         holding the only pointer to a block of 777 bytes the worker kept on
 *                         its stack, and links them from a global; another frees a block of
 *                         555 bytes, keeping one of 444 on its stack, and waits in free until
 *                         the scan ends; a third sleeps with its last block (666 bytes) on its
 *                         stack: nothing lost; with AXMALLOC_LEAKS=all the 777, 444 and 666
 *                         bytes still reachable, the new blocks (2098386 and 1007 bytes) and
 *                         the freed one not counted
 *   t_leaks_scan aligned  huge blocks aligned inside their first segment and to a segment, one
 *                         of 2 MiB lost, one of 3 MiB held by a global: the lost one reported
 *                         (its word is neither at a segment's start nor 256 bytes in)
 *   t_leaks_scan big      a block of 4 GiB + 4 MiB, held by a global, holds the only pointer to
 *                         a block of 333 bytes past its first 4 GiB: nothing lost (exit 77 when
 *                         there is no such block to be had)
 *
 * What the leak checker reports is checked by t_leaks_scan.sh; the program checks that what
 * it relies on happened (every block made, the worker ran, and ran inside the scan).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if AX_TEST_HOOKS
#include "hooks.h"
#endif
#include "testutil.h"

#define SLOTS 8
#define MIB ((size_t)1 << 20)

static void nap_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&t, NULL);
}

/* Until *v reaches at least n, 30 s at most (qemu on a loaded machine); post: whether it did. */
static int await(atomic_int *v, int n) {
  for (int i = 0; i < 30000 && atomic_load(v) < n; i++)
    nap_ms(1);
  return atomic_load(v) >= n;
}

/* ---- churn: issue 38's defect 3 ------------------------------------------------------------ */

static char *volatile bufs[SLOTS];   /* huge blocks: every one reachable from here */
static void *volatile smalls[SLOTS]; /* small blocks, moved by realloc */
static atomic_int rounds;

static void *churn_main(void *arg) {
  uint64_t r = 0x9e3779b97f4a7c15u;
  for (;;) {
    r ^= r << 13;
    r ^= r >> 7;
    r ^= r << 17;
    unsigned i = (unsigned)(r % SLOTS), j = (unsigned)((r >> 8) % SLOTS);
    size_t n = MIB + (size_t)((r >> 16) % (7 * MIB)); /* above 1 MiB: a mapping of its own */
    free(bufs[i]);
    char *p = malloc(n);
    CHECK(p != NULL);
    p[0] = p[n - 1] = 1;
    bufs[i] = p;
    void *q = realloc(smalls[j], 16 + (size_t)((r >> 40) % 5000));
    CHECK(q != NULL);
    smalls[j] = q;
    atomic_fetch_add(&rounds, 1);
  }
  return arg;
}

static int churn(void) {
  pthread_t t;
  CHECK(pthread_create(&t, NULL, churn_main, NULL) == 0);
  CHECK(await(&rounds, SLOTS)); /* (most slots used; every free from now on frees) */
  return 0;                     /* the worker still runs */
}

/* ---- during: blocks made and freed while the scan runs ------------------------------------ */

#if AX_TEST_HOOKS
static void *volatile kept[12]; /* blocks made before the scan, held here */
static char *volatile linked;   /* the new blocks, linked here inside the scan */
static atomic_int phase;        /* 2 once the scan read the roots (the hook) */
static atomic_int made, parked; /* blocks made as planned; the freer waits in free */
static pthread_t freer;

static __attribute__((noinline)) void *make(size_t n) {
  void *p = malloc(n);
  CHECK(p != NULL);
  memset(p, 0, n < 64 ? n : 64);
  return p;
}

/* Four blocks more, held by kept[at..]: a running thread's last four blocks are roots, and
 * the blocks made before these are to be reached otherwise. */
static void four_more(int at) {
  for (int i = 0; i < 4; i++)
    kept[at + i] = make(32);
}

/* Its first blocks are made and kept before the scan (walks of this stack learnt, nothing
 * freed: the allocator's caches stay empty, so that the blocks made inside the scan need no
 * unmap, which would wait for the scan's end). */
static void *maker_main(void *arg) {
  kept[0] = make(3 * MIB);
  void *volatile old = make(777); /* on this stack only: not a root */
  four_more(1);
  atomic_fetch_add(&made, 1);
  while (atomic_load(&phase) < 2)
    nap_ms(1);
  char *big = make(2 * MIB + 1234);
  void **small = make(1007);
  small[0] = old;
  memcpy(big, &small, sizeof small);
  linked = big;
  old = NULL;
  atomic_fetch_add(&made, 1);
  for (;;)
    nap_ms(1000);
  return arg;
}

/* Inside the scan it frees a block no root names: the free waits until the scan ends, and
 * meanwhile its stack, which holds another block no root names, is a root. */
static void *freer_main(void *arg) {
  void *volatile doomed = make(555), *volatile mine = make(444);
  four_more(5);
  atomic_fetch_add(&made, 1);
  while (atomic_load(&phase) < 2)
    nap_ms(1);
  free(doomed); /* (returns once the scan is over: the process goes on exiting) */
  CHECK(mine != NULL);
  for (;;)
    nap_ms(1000);
  return arg;
}

/* Sleeps with its last block on its stack only: it could be in a register between malloc's
 * return and its store. */
static void *holder_main(void *arg) {
  void *volatile held = make(666);
  atomic_fetch_add(&made, 1);
  for (;;)
    nap_ms(1000);
  CHECK(held != NULL);
  return arg;
}

static void hook(enum ax_hook_point at, const void *arg) {
  if (at == AX_HOOK_LEAK_WAIT && pthread_equal(pthread_self(), freer))
    atomic_store(&parked, 1);
  if (at != AX_HOOK_LEAK_SCAN)
    return;
  atomic_store(&phase, 2);
  if (!await(&made, 4))
    fputs("t_leaks_scan: during: the worker made no block inside the scan\n", stderr);
  if (!await(&parked, 1))
    fputs("t_leaks_scan: during: the free inside the scan did not wait\n", stderr);
}

static int during(void) {
  pthread_t t;
  CHECK(pthread_create(&t, NULL, maker_main, NULL) == 0);
  CHECK(pthread_create(&freer, NULL, freer_main, NULL) == 0);
  CHECK(pthread_create(&t, NULL, holder_main, NULL) == 0);
  CHECK(await(&made, 3));
  ax_test_set_hook(hook);
  return 0;
}
#endif

/* ---- aligned: huge blocks where an alignment puts them ---------------------------------- */

static void *volatile aligned_held;

static __attribute__((noinline)) void aligned_lose(void) {
  void *lost = NULL, *held = NULL;
  CHECK(posix_memalign(&lost, 8192, 2 * MIB) == 0 && ((uintptr_t)lost & 8191) == 0);
  CHECK(posix_memalign(&held, 4 * MIB, 3 * MIB) == 0 && ((uintptr_t)held & (4 * MIB - 1)) == 0);
  memset(lost, 1, 64);
  aligned_held = held;
}

/* The stack below main's frame, where aligned_lose left the lost block's address, cleared: the
 * exit's frames that the scan reads take its place. */
static __attribute__((noinline)) void scrub(void) {
  volatile char below[16384];
  for (size_t i = 0; i < sizeof below; i++)
    below[i] = 0;
}

static int aligned(void) {
  aligned_lose();
  scrub();
  return 0;
}

/* ---- big: past 4 GiB --------------------------------------------------------------------- */

static char *volatile held;

static int big(void) {
  size_t n = ((size_t)4 << 30) + 4 * MIB;
  char *p = malloc(n);
  if (!p) {
    printf("t_leaks_scan: big: no block of 4 GiB to be had: skipped\n");
    return 77;
  }
  void *small = malloc(333);
  CHECK(small != NULL);
  memcpy(p + n - 64, &small, sizeof small); /* the only pointer to it */
  held = p;
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "churn"))
    return churn();
#if AX_TEST_HOOKS
  if (!strcmp(mode, "during"))
    return during();
#endif
  if (!strcmp(mode, "aligned"))
    return aligned();
  if (!strcmp(mode, "big"))
    return big();
  fprintf(stderr, "usage: t_leaks_scan churn|aligned|big (and during, with the test hooks)\n");
  return 2;
}
