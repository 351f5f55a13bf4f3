/* SPDX-License-Identifier: MIT */
/* wl_largebuf.c -- large zeroed buffers replaced at random (mimalloc-bench's malloc-large).
 *
 * Models the page-fault half of seed 004 (page-fault servicing, not copying, dominated
 * large-buffer setup): `live` buffers of 5-25 MiB stay allocated; each iteration replaces
 * a random one with a new buffer of a random size, zeroed the way C++'s
 * std::make_unique<char[]>(n) zeroes it (a memset after operator new), then writes a few
 * bytes. An allocator that keeps freed mappings resident and reuses them pays the memset;
 * one that unmaps and maps again pays a page fault per 4 KiB as well.
 *
 * Usage: wl_largebuf [iterations [live]]     (defaults 2000 and 20)
 *
 * stdout: exactly one line "checksum <n>": the sum of the sizes and of a byte read back
 * from each buffer; stderr: the page faults (wl_stats.h). Exit status 1 on allocation
 * failure or a wrong byte.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wl_stats.h"

#define MIB ((size_t)1 << 20)

/* Called through a volatile pointer, as std::make_unique zeroes after operator new: the
 * compiler must not turn malloc + memset into calloc. */
static void *(*volatile zero_fill)(void *, int, size_t) = memset;

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return *s;
}

int main(int argc, char **argv) {
  long iters = argc > 1 ? atol(argv[1]) : 2000;
  int live = argc > 2 ? atoi(argv[2]) : 20;
  if (iters < 1 || live < 1 || live > 1000)
    return 2;
  char **buf = calloc((size_t)live, sizeof *buf);
  size_t *len = calloc((size_t)live, sizeof *len);
  if (!buf || !len)
    return 1;
  uint64_t s = 42, sum = 0;
  for (long i = 0; i < iters; i++) {
    int k = (int)(rnd(&s) % (uint64_t)live);
    size_t n = 5 * MIB + (size_t)(rnd(&s) % (20 * MIB + 1));
    char *p = malloc(n);
    if (!p) {
      fprintf(stderr, "wl_largebuf: FAILED: malloc(%zu)\n", n);
      return 1;
    }
    zero_fill(p, 0, n);
    p[n / 2] = (char)(i & 0x7f);
    p[n - 1] = 1;
    if (buf[k]) {
      if (buf[k][len[k] - 1] != 1) {
        fprintf(stderr, "wl_largebuf: FAILED: buffer %d overwritten\n", k);
        return 1;
      }
      sum += (unsigned char)buf[k][len[k] / 2];
      free(buf[k]);
    }
    buf[k] = p, len[k] = n;
    sum += n;
  }
  for (int k = 0; k < live; k++)
    free(buf[k]);
  free(buf);
  free(len);
  wl_print_faults("wl_largebuf");
  printf("checksum %llu\n", (unsigned long long)sum);
  return 0;
}
