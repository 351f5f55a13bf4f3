/* SPDX-License-Identifier: MIT */
/* Returning memory: after freeing 200 MiB of 64 KiB blocks, malloc_trim(0) (which purges at
 * once) makes RSS fall; its result is 0 or 1; freed-then-trimmed memory is usable again. */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define MIB ((size_t)1 << 20)

static size_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  CHECK(f != NULL);
  unsigned long size = 0, resident = 0;
  CHECK(fscanf(f, "%lu %lu", &size, &resident) == 2);
  fclose(f);
  return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

enum { BLOCK = 64 * 1024 };

static size_t alloc_all(void **ps, size_t n) {
  for (size_t i = 0; i < n; i++) {
    ps[i] = malloc(BLOCK);
    CHECK(ps[i] != NULL);
    memset(ps[i], (int)(i | 1), BLOCK); /* touch every page */
  }
  return rss_bytes();
}

int main(void) {
  check_axmalloc_active();
  int r = malloc_trim(0);
  CHECKF(r == 0 || r == 1, "malloc_trim(0) returned %d", r);
  r = ax_trim(0);
  CHECKF(r == 0 || r == 1, "ax_trim(0) returned %d", r);

  size_t total = scaled(200) * MIB;
  if (total < 32 * MIB)
    total = 32 * MIB;
  size_t n = total / BLOCK;
  void **ps = malloc(n * sizeof *ps);
  CHECK(ps != NULL);

  /* round 1: free everything, then malloc_trim(0) */
  size_t base = rss_bytes();
  size_t high = alloc_all(ps, n);
  CHECKF(high >= base + total / 2, "RSS did not grow while allocating: %zu -> %zu KiB", base >> 10,
         high >> 10);
  ax_stats_t s0, s1;
  ax_stats_get(&s0);
  for (size_t i = 0; i < n; i++)
    free(ps[i]);
  r = malloc_trim(0);
  CHECKF(r == 0 || r == 1, "malloc_trim(0) returned %d", r);
  size_t after = rss_bytes();
  ax_stats_get(&s1);
  printf("t_trim: RSS base %zu KiB, high %zu KiB, after free+trim %zu KiB (trim returned %d)\n",
         base >> 10, high >> 10, after >> 10, r);
  CHECKF(after + total * 3 / 4 <= high,
         "RSS fell only from %zu to %zu KiB after freeing %zu KiB and malloc_trim(0)", high >> 10,
         after >> 10, total >> 10);
  CHECKF(s1.os_committed + total * 3 / 4 <= s0.os_committed,
         "os_committed fell only from %llu to %llu", (unsigned long long)s0.os_committed,
         (unsigned long long)s1.os_committed);
  CHECK(s1.os_purged > s0.os_purged || s1.os_reserved + total * 3 / 4 <= s0.os_reserved);
  r = malloc_trim(0); /* nothing left to do; still a valid answer */
  CHECKF(r == 0 || r == 1, "malloc_trim(0) returned %d", r);

  /* the trimmed memory is reused correctly: contents are ours, calloc is zero */
  size_t reuse = n / 4;
  for (size_t i = 0; i < reuse; i++) {
    ps[i] = (i & 1) ? calloc(1, BLOCK) : malloc(BLOCK);
    CHECK(ps[i] != NULL);
    if (i & 1)
      CHECK(all_zero(ps[i], BLOCK));
    memset(ps[i], 0x77, BLOCK);
  }
  for (size_t i = 0; i < reuse; i++) {
    CHECK(((unsigned char *)ps[i])[0] == 0x77 && ((unsigned char *)ps[i])[BLOCK - 1] == 0x77);
    free(ps[i]);
  }

  /* round 2, informational: does RSS fall by the delayed purge alone, while the program
   * keeps allocating small blocks? (the contract only promises it "after a delay") */
  n /= 2;
  high = alloc_all(ps, n);
  for (size_t i = 0; i < n; i++)
    free(ps[i]);
  size_t low = rss_bytes();
  int waited = 0;
  for (; waited < 2000 && low + n * BLOCK / 2 > high; waited += 50) {
    sleep_ms(50);
    for (int k = 0; k < 200; k++)
      free(malloc(32 + (size_t)k));
    low = rss_bytes();
  }
  printf("t_trim: delayed purge: RSS %zu -> %zu KiB after %d ms without malloc_trim\n", high >> 10,
         low >> 10, waited);
  malloc_trim(0);
  free(ps);
  printf("t_trim: OK\n");
  return 0;
}
