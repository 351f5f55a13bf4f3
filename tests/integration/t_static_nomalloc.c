/* SPDX-License-Identifier: MIT */
/* t_static_nomalloc: a -static program that never calls malloc & co. itself.
 *
 * It only uses libc functions that allocate internally: tmpfile/fopen (FILE objects
 * and their stdio buffers), fgets, opendir/readdir, qsort of a big array (merge sort
 * with a malloc'd buffer), snprintf with a huge field width (a malloc'd work buffer).
 * Linked with `prog.o libaxmalloc.a` such a program would silently keep glibc's
 * libc.a malloc; linked with the relocatable axmalloc.o (or libaxmalloc.a under
 * --whole-archive) libc's internal calls must resolve to axmalloc. The build links it
 * both ways; the test runs it with AXMALLOC_STATS=1 and checks that stderr holds
 * axmalloc's statistics with a non-zero mallocs count (see system.cmake).
 *
 * Built with -DAX_SELF_CHECK it also asks ax_stats_get directly.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef AX_SELF_CHECK
#include <axmalloc.h>
#endif

#include "sys_check.h"

#define NKEYS 200000
static uint32_t keys[NKEYS];
static char big[300000];

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

int main(void) {
#ifdef AX_SELF_CHECK
  ax_stats_t s0;
  ax_stats_get(&s0);
#endif
  /* stdio: a temporary file written and read back (FILE + buffer are malloc'd). */
  FILE *f = tmpfile();
  CHECK(f != NULL);
  for (int i = 0; i < 5000; i++)
    CHECK(fprintf(f, "line %d %x\n", i, i * 2654435761u) > 0);
  rewind(f);
  char line[128];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    char expect[128];
    snprintf(expect, sizeof expect, "line %d %x\n", n, n * 2654435761u);
    CHECKF(strcmp(line, expect) == 0, "line %d: got '%s'", n, line);
    n++;
  }
  CHECK(n == 5000);
  CHECK(fclose(f) == 0);

  /* fopen of a real file. */
  f = fopen("/proc/self/status", "r");
  CHECK(f != NULL);
  int found = 0;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "Pid:", 4) == 0)
      found = 1;
  CHECK(found);
  fclose(f);

  /* opendir: the DIR stream and its buffer are malloc'd. */
  DIR *d = opendir("/");
  CHECK(d != NULL);
  int entries = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    entries++;
  CHECK(entries >= 2);
  closedir(d);

  /* qsort of 800 KB: glibc sorts through a malloc'd temporary buffer. */
  uint32_t x = 12345;
  for (int i = 0; i < NKEYS; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    keys[i] = x;
  }
  qsort(keys, NKEYS, sizeof keys[0], cmp_u32);
  for (int i = 1; i < NKEYS; i++)
    CHECK(keys[i - 1] <= keys[i]);

  /* A field width beyond vfprintf's work buffer: it mallocs one. */
  int len = snprintf(big, sizeof big, "%*d|%-*s|", 100000, 42, 150000, "x");
  CHECK(len == 100000 + 1 + 150000 + 1);
  CHECK(big[99998] == '4' && big[99999] == '2' && big[100000] == '|' && big[100001] == 'x');
  CHECK(big[len - 1] == '|');

#ifdef AX_SELF_CHECK
  ax_stats_t s1;
  ax_stats_get(&s1);
  CHECKF(s1.mallocs > s0.mallocs,
         "ax_stats mallocs %llu -> %llu: libc's internal "
         "allocations did not go to axmalloc",
         (unsigned long long)s0.mallocs, (unsigned long long)s1.mallocs);
#endif
  printf("t_static_nomalloc: OK\n");
  return 0;
}
