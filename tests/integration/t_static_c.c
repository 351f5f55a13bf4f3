/* SPDX-License-Identifier: MIT */
/* t_static_c: a -static C program linked with libaxmalloc.a.
 *
 * Exercises malloc/free/calloc/realloc/aligned_alloc/posix_memalign/memalign and a
 * thread, and proves that axmalloc (not glibc's libc.a malloc) serves them:
 * ax_stats_get's mallocs counter grows with our calls and malloc_usable_size(p) ==
 * ax_usable_size(p) for every block (ax_usable_size knows only axmalloc's blocks).
 */
#define _GNU_SOURCE
#include <axmalloc.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>

#include "sys_check.h"

static void check_ours(void *p, size_t size) {
  CHECKF(p != NULL, "allocation of %zu failed", size);
  CHECKF(((uintptr_t)p & 15) == 0, "%p not 16-byte aligned", p);
  size_t us = malloc_usable_size(p);
  CHECKF(us == ax_usable_size(p), "malloc_usable_size(%p)=%zu != ax_usable_size=%zu", p, us,
         ax_usable_size(p));
  CHECKF(us >= size, "usable %zu < %zu", us, size);
}

static void *thread_fn(void *arg) {
  void **out = arg;
  for (int i = 0; i < 1000; i++) {
    void *p = malloc((size_t)i * 7 + 1);
    check_ours(p, (size_t)i * 7 + 1);
    memset(p, 0x5a, (size_t)i * 7 + 1);
    free(p);
  }
  *out = malloc(4096);
  check_ours(*out, 4096);
  memset(*out, 0x33, 4096);
  return NULL;
}

int main(void) {
  ax_stats_t s0, s1;
  ax_stats_get(&s0);

  enum { N = 2000 };
  static void *ptr[N];
  static size_t sz[N];
  for (int i = 0; i < N; i++) {
    sz[i] = (size_t)(i % 50) * 37 + (i % 7 == 0 ? 70000 : 1);
    ptr[i] = malloc(sz[i]);
    check_ours(ptr[i], sz[i]);
    memset(ptr[i], (unsigned char)i, sz[i]);
  }
  ax_stats_get(&s1);
  CHECKF(s1.mallocs - s0.mallocs >= N,
         "ax_stats mallocs grew by %llu after %d mallocs: "
         "malloc is not axmalloc",
         (unsigned long long)(s1.mallocs - s0.mallocs), N);

  for (int i = 0; i < N; i++) {
    unsigned char *b = ptr[i];
    for (size_t j = 0; j < sz[i]; j++)
      CHECK(b[j] == (unsigned char)i);
    /* realloc up and down keeps the prefix */
    size_t nsz = i % 2 ? sz[i] * 3 + 5 : sz[i] / 2 + 1;
    b = realloc(b, nsz);
    check_ours(b, nsz);
    size_t keep = nsz < sz[i] ? nsz : sz[i];
    for (size_t j = 0; j < keep; j++)
      CHECK(b[j] == (unsigned char)i);
    ptr[i] = b;
  }
  for (int i = 0; i < N; i += 2)
    free(ptr[i]);

  unsigned char *c = calloc(1000, 1000);
  check_ours(c, 1000000);
  for (size_t i = 0; i < 1000000; i++)
    CHECK(c[i] == 0);
  free(c);
  c = calloc(3, 5000000); /* huge */
  check_ours(c, 15000000);
  for (size_t i = 0; i < 15000000; i += 4093)
    CHECK(c[i] == 0);
  CHECK(c[14999999] == 0);
  free(c);

  for (size_t al = 16; al <= 65536; al *= 2) {
    void *a = aligned_alloc(al, al * 3);
    check_ours(a, al * 3);
    CHECKF(((uintptr_t)a & (al - 1)) == 0, "aligned_alloc(%zu) gave %p", al, a);
    void *m = memalign(al, 100);
    check_ours(m, 100);
    CHECK(((uintptr_t)m & (al - 1)) == 0);
    void *pm = NULL;
    CHECK(posix_memalign(&pm, al, 1000) == 0);
    check_ours(pm, 1000);
    CHECK(((uintptr_t)pm & (al - 1)) == 0);
    free(a);
    free(m);
    free(pm);
  }

  void *from_thread = NULL;
  pthread_t t;
  CHECK(pthread_create(&t, NULL, thread_fn, &from_thread) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  for (int i = 0; i < 4096; i++)
    CHECK(((unsigned char *)from_thread)[i] == 0x33);
  free(from_thread); /* remote free into the exited thread's segment */

  for (int i = 1; i < N; i += 2)
    free(ptr[i]);

  /* ax_* and the malloc family are one allocator: cross frees work. */
  void *x = ax_malloc(500);
  check_ours(x, 500);
  free(x);
  x = malloc(500);
  ax_free(x);

  ax_stats_t s2;
  ax_stats_get(&s2);
  CHECK(s2.mallocs - s1.mallocs >=
        1000 + 40); /* thread, calloc, aligned: reallocs may stay in place */
  printf("t_static_c: mallocs %llu -> %llu -> %llu, OK\n", (unsigned long long)s0.mallocs,
         (unsigned long long)s1.mallocs, (unsigned long long)s2.mallocs);
  return 0;
}
