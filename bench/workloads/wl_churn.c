/* SPDX-License-Identifier: MIT */
/* wl_churn.c -- one thread draining and refilling pages.
 *
 * Measures what the single-threaded mode saves (DESIGN §2, issue 3): every round fills
 * pages until they are full (the allocator parks full pages aside: a CAS in
 * multi-threaded mode) and then frees everything in random order (full pages come back:
 * an atomic RMW each), so the allocator's slow paths, where its only atomics live, run
 * often. Run it with and without AXMALLOC_FORCE_MT=1.
 *
 * Usage: wl_churn [blocks [rounds [max_size]]]      (defaults 200000, 20, 256)
 *
 * stdout: exactly one line "checksum <sum of sizes and first bytes>".
 * Exit status 1 on allocation failure or a corrupted block.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

int main(int argc, char **argv) {
  size_t nblocks = argc > 1 ? strtoul(argv[1], NULL, 0) : 200000;
  unsigned rounds = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 20;
  size_t max_size = argc > 3 ? strtoul(argv[3], NULL, 0) : 256;
  if (nblocks == 0 || max_size < 16)
    return 2;
  unsigned char **blocks = malloc(nblocks * sizeof *blocks);
  size_t *sizes = malloc(nblocks * sizeof *sizes);
  size_t *order = malloc(nblocks * sizeof *order);
  if (!blocks || !sizes || !order)
    return 1;
  uint64_t sum = 0;
  for (unsigned r = 0; r < rounds; r++) {
    for (size_t i = 0; i < nblocks; i++) {
      sizes[i] = 16 + next() % (max_size - 15);
      blocks[i] = malloc(sizes[i]);
      if (!blocks[i])
        return 1;
      blocks[i][0] = (unsigned char)i;
      blocks[i][sizes[i] - 1] = (unsigned char)r;
      order[i] = i;
    }
    for (size_t i = nblocks - 1; i > 0; i--) { /* Fisher-Yates */
      size_t j = next() % (i + 1), t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    for (size_t k = 0; k < nblocks; k++) {
      size_t i = order[k];
      if (blocks[i][0] != (unsigned char)i || blocks[i][sizes[i] - 1] != (unsigned char)r) {
        fprintf(stderr, "wl_churn: FAILED: block %zu corrupted\n", i);
        return 1;
      }
      sum += sizes[i] + blocks[i][0];
      free(blocks[i]);
    }
  }
  free(order);
  free(sizes);
  free(blocks);
  printf("checksum %llu\n", (unsigned long long)sum);
  return 0;
}
