/* SPDX-License-Identifier: MIT */
/* pair.c -- the hot malloc+free pair, for instruction counts under callgrind.
 *
 * Usage: pair <size> <iterations> [keep]
 * Runs `iterations` times: p = malloc(size); free(p). With keep=1 one more block of the
 * same size stays live throughout, so the page never becomes empty (the steady state of a
 * real program); with keep=0 every free empties the page (a malloc/free loop in isolation).
 * pair.sh runs it for two iteration counts and reports the difference per iteration, so
 * start-up costs cancel out.
 */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc < 3)
    return 2;
  size_t size = strtoul(argv[1], NULL, 0);
  long n = strtol(argv[2], NULL, 0);
  int keep = argc > 3 && atoi(argv[3]);
  void *volatile sink;
  void *held = keep ? malloc(size) : NULL;
  for (long i = 0; i < n; i++) {
    void *p = malloc(size);
    sink = p;
    free(p);
  }
  free(held);
  (void)sink;
  return 0;
}
