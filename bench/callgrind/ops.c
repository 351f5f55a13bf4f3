/* SPDX-License-Identifier: MIT */
/* ops.c -- one allocator operation, repeated, for instruction counts under callgrind.
 *
 * Usage: ops <op> <n> [arg]
 *
 *   pair <n> <size>      n x { p = malloc(size); free(p) }, one more block of the same size
 *                        live throughout (warm page: the steady state of a real program)
 *   empty <n> <size>     the same with no other block: every free empties the page (a
 *                        malloc/free loop in isolation)
 *   calloc <n> <size>    n x { p = calloc(1, size); free(p) }, one block live throughout, so
 *                        every calloc after the first gets recycled memory that must be zeroed
 *   grow16 <n> <steps>   n blocks, each: p = malloc(928), then `steps` x p = realloc(p, +16 B),
 *                        then free. budget.sh runs steps=3 and steps=6: the extra three steps
 *                        (976 -> 992 -> 1008 -> 1024 B) stay inside the 897..1024 B class of
 *                        axmalloc, jemalloc and mimalloc, so the difference is 3n in-class
 *                        growth steps
 *   double <n> <steps>   n blocks, each: p = malloc(64), then `steps` x p = realloc(p, 2x),
 *                        then free. budget.sh runs steps=0 and steps=6 (64 B -> 4 KiB): the
 *                        difference is 6n doubling steps (copies included), plus n times the
 *                        difference between freeing a 4 KiB and a 64 B block
 *   random <n> <size>    1,024 blocks of size live; n x { free one at random (xorshift),
 *                        malloc its replacement } (bm_pairs/random: with mid-size blocks
 *                        every free lands in a page that is full)
 *   new <n> <size>       n x { p = operator new(size); operator delete(p) }, one more block
 *                        live (the C++ pair; libstdc++'s operators call malloc and free where
 *                        the allocator defines none)
 *   sized <n> <size>     the same with the sized operator delete(p, size), as g++ calls it
 *                        (-fsized-deallocation, the default from C++14)
 *   remote <n> <total>   the main thread allocates `total` 64 B blocks up front (warm page);
 *                        a second thread frees the first n of them; the rest stay allocated.
 *                        budget.sh runs n=N and n=2N with the same total=2N: everything but
 *                        the consumer's extra N remote frees is identical in both runs
 *
 * Every variant touches the first byte of each block so the work cannot be elided.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the C++ operators by their mangled names (ops links libstdc++): new(size_t), delete(void *),
 * delete(void *, size_t) */
void *_Znwm(size_t);
void _ZdlPv(void *);
void _ZdlPvm(void *, size_t);

static void *volatile sink;
static void **blocks;
static long nfree;

static void *consumer(void *arg) {
  (void)arg;
  for (long i = 0; i < nfree; i++)
    free(blocks[i]);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr,
            "usage: ops pair|empty|calloc|new|sized|grow16|double|random|remote <n> <arg>\n");
    return 2;
  }
  const char *op = argv[1];
  long n = strtol(argv[2], NULL, 0);
  long arg = strtol(argv[3], NULL, 0);

  if (!strcmp(op, "pair") || !strcmp(op, "calloc") || !strcmp(op, "empty")) {
    int zero = op[0] == 'c';
    size_t size = (size_t)arg;
    void *held = op[0] == 'e' ? NULL : zero ? calloc(1, size) : malloc(size);
    for (long i = 0; i < n; i++) {
      char *p = zero ? calloc(1, size) : malloc(size);
      sink = p;
      free(p);
    }
    free(held);
  } else if (!strcmp(op, "new") || !strcmp(op, "sized")) {
    int sized = op[0] == 's';
    size_t size = (size_t)arg;
    void *held = _Znwm(size);
    for (long i = 0; i < n; i++) {
      char *p = _Znwm(size);
      p[0] = 1;
      sink = p;
      if (sized)
        _ZdlPvm(p, size);
      else
        _ZdlPv(p);
    }
    _ZdlPv(held);
  } else if (!strcmp(op, "grow16") || !strcmp(op, "double")) {
    int dbl = op[0] == 'd';
    size_t start = dbl ? 64 : 928;
    void *held = malloc(start);
    for (long i = 0; i < n; i++) {
      size_t size = start;
      char *p = malloc(size);
      p[0] = 1;
      for (long s = 0; s < arg; s++) {
        size = dbl ? size * 2 : size + 16;
        p = realloc(p, size);
        sink = p;
      }
      free(p);
    }
    free(held);
  } else if (!strcmp(op, "random")) {
    enum { LIVE = 1024 };
    static char *slot[LIVE];
    for (int i = 0; i < LIVE; i++) {
      slot[i] = malloc((size_t)arg);
      slot[i][0] = 1;
    }
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (long i = 0; i < n; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      unsigned k = (unsigned)(x >> 32) & (LIVE - 1);
      free(slot[k]);
      slot[k] = malloc((size_t)arg);
      slot[k][0] = 1;
    }
    for (int i = 0; i < LIVE; i++)
      free(slot[i]);
  } else if (!strcmp(op, "remote")) {
    long total = arg;
    if (n > total)
      return 2;
    blocks = malloc((size_t)total * sizeof *blocks);
    for (long i = 0; i < total; i++) {
      char *p = malloc(64);
      p[0] = 1;
      blocks[i] = p;
    }
    nfree = n;
    pthread_t t;
    if (pthread_create(&t, NULL, consumer, NULL))
      return 1;
    pthread_join(t, NULL);
    sink = blocks;
  } else {
    fprintf(stderr, "ops: unknown op '%s'\n", op);
    return 2;
  }
  return 0;
}
