/* SPDX-License-Identifier: MIT */
/* Valgrind: a correct program exercising every path of axmalloc (malloc, calloc, realloc
 * growth and shrink within and across classes, aligned allocation, huge blocks and their
 * mremap growth, malloc_usable_size, frees from other threads) must make memcheck report
 * 0 errors and no leak (tests/modes/modes.cmake). The allocator's own reads and writes of free
 * blocks (list links, double-free check, collect) must not show. */
#include <pthread.h>
#include <string.h>

#include "testutil.h"

#define N 400

static void *freer(void *arg) {
  char **v = arg;
  for (int i = 0; i < N; i++)
    free(v[i]);
  return NULL;
}

static void *worker(void *arg) {
  uint64_t s = (uintptr_t)arg;
  for (int r = 0; r < 2000; r++) {
    size_t n = 1 + rnd_next(&s) % 3000;
    char *p = malloc(n);
    CHECK(p);
    p[0] = p[n - 1] = 1;
    free(p);
  }
  return NULL;
}

int main(void) {
  check_axmalloc_active();
  uint64_t s = 42;
  static char *v[N];
  /* malloc, write, partial free, calloc on recycled memory (must read as defined zeroes) */
  for (int i = 0; i < N; i++) {
    size_t n = 1 + rnd_next(&s) % 5000;
    CHECK((v[i] = malloc(n)));
    memset(v[i], 0xab, n);
  }
  for (int i = 0; i < N; i += 2)
    free(v[i]);
  for (int i = 0; i < N; i += 2) {
    size_t n = 1 + rnd_next(&s) % 5000;
    CHECK((v[i] = calloc(1, n)));
    CHECK(all_zero(v[i], n)); /* branches on every byte: undefined bytes would show */
  }
  /* realloc: grow and shrink, contents kept */
  for (int i = 0; i < N; i++) {
    size_t n = 1 + rnd_next(&s) % 20000;
    CHECK((v[i] = realloc(v[i], n)));
    v[i][n - 1] = 3;
    CHECK((v[i] = realloc(v[i], n / 3 + 1)));
    CHECK(v[i][0] == 0 || v[i][0] == (char)0xab || v[i][0] == 3);
  }
  /* the whole usable size is the program's */
  for (int i = 0; i < N; i++) {
    size_t u = malloc_usable_size(v[i]);
    memset(v[i], 5, u);
    CHECK(v[i][u - 1] == 5);
  }
  /* aligned */
  for (size_t a = 32; a <= 65536; a *= 4) {
    void *p = NULL;
    CHECK(posix_memalign(&p, a, 100) == 0 && ((uintptr_t)p & (a - 1)) == 0);
    memset(p, 1, 100);
    char *q = aligned_alloc(a, a * 3);
    CHECK(q && ((uintptr_t)q & (a - 1)) == 0);
    memset(q, 2, a * 3);
    free(p);
    free(q);
  }
  /* huge: fresh, cached, calloc of a recycled mapping, mremap growth */
  for (int r = 0; r < 3; r++) {
    char *h = malloc((size_t)3 << 20);
    CHECK(h);
    memset(h, r, (size_t)3 << 20);
    CHECK((h = realloc(h, (size_t)9 << 20)) && h[((size_t)3 << 20) - 1] == r);
    memset(h + ((size_t)3 << 20), 4, (size_t)6 << 20);
    free(h);
    char *z = calloc(1, (size_t)5 << 20);
    CHECK(z && z[0] == 0 && z[((size_t)5 << 20) - 1] == 0);
    free(z);
  }
  /* frees from another thread, and threads allocating concurrently */
  pthread_t t[3];
  CHECK(pthread_create(&t[0], NULL, freer, v) == 0);
  CHECK(pthread_create(&t[1], NULL, worker, (void *)1) == 0);
  CHECK(pthread_create(&t[2], NULL, worker, (void *)2) == 0);
  for (int i = 0; i < 3; i++)
    pthread_join(t[i], NULL);
  /* the owner collects the remote frees */
  for (int i = 0; i < N; i++) {
    CHECK((v[i] = malloc(64)));
    v[i][63] = 1;
  }
  for (int i = 0; i < N; i++)
    free(v[i]);
  printf("t_vg_clean: OK\n");
  return 0;
}
