/* SPDX-License-Identifier: MIT */
/* nomalloc.c: a program that names nothing of axmalloc and never calls the malloc family
 * itself; only libc does (the FILE and buffer of a temporary file, qsort's merge buffer).
 * Linked -static with libaxmalloc.a, nothing would pull the allocator out of the archive
 * and glibc's malloc would silently stay: the link options of axmalloc::static and of
 * axmalloc.pc (--static) must prevent that. t_install.sh runs it with AXMALLOC_STATS=1
 * and checks that axmalloc's exit statistics appear, with mallocs > 0.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

#define NKEYS 100000
static uint32_t keys[NKEYS];

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

int main(void) {
  FILE *f = tmpfile();
  CHECK(f != NULL, "tmpfile failed");
  for (int i = 0; i < 1000; i++)
    fprintf(f, "%d\n", i);
  rewind(f);
  int n = 0, v;
  while (fscanf(f, "%d", &v) == 1)
    CHECK(v == n++, "read back %d, expected %d", v, n - 1);
  CHECK(n == 1000 && fclose(f) == 0, "read back %d numbers", n);
  uint32_t x = 2463534242u;
  for (int i = 0; i < NKEYS; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    keys[i] = x;
  }
  qsort(keys, NKEYS, sizeof keys[0], cmp_u32); /* 400 KB: a malloc'd merge buffer */
  for (int i = 1; i < NKEYS; i++)
    CHECK(keys[i - 1] <= keys[i], "qsort: unsorted at %d", i);
  printf("nomalloc: OK\n");
  return 0;
}
