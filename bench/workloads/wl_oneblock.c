/* SPDX-License-Identifier: MIT */
/* wl_oneblock.c -- a malloc/free loop with one live block per size (a temporary buffer
 * in a loop): every free empties the block's page, the pattern where an allocator that
 * retires or re-checks an emptied page on free pays for it on every call.
 *
 * Usage: wl_oneblock [iterations]     (default 20000000)
 *
 * Each iteration takes one of 24 sizes from 8 B to 64 KiB in turn, allocates it, writes
 * its first and last byte, and frees it; no other block of those sizes is live.
 *
 * stdout: exactly one line "checksum <n>". Exit status 1 on allocation failure.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  long iters = argc > 1 ? atol(argv[1]) : 20000000;
  static const size_t sizes[] = {8,    16,   24,   32,   48,    64,    96,    128,
                                 160,  256,  320,  512,  640,   1024,  1500,  2048,
                                 3000, 4096, 6000, 8192, 12000, 16384, 32768, 65536};
  enum { NSIZES = sizeof sizes / sizeof sizes[0] };
  uint64_t sum = 0;
  for (long i = 0; i < iters; i++) {
    size_t n = sizes[i % NSIZES];
    volatile unsigned char *p = malloc(n);
    if (!p) {
      fprintf(stderr, "wl_oneblock: FAILED: malloc(%zu)\n", n);
      return 1;
    }
    p[0] = (unsigned char)i;
    p[n - 1] = 1;
    sum += p[0] + p[n - 1];
    free((void *)p);
  }
  printf("checksum %llu\n", (unsigned long long)sum);
  return 0;
}
