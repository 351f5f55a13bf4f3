/* SPDX-License-Identifier: MIT */
/* wl_vecgrow.c -- vectors and strings grown by realloc, the patterns of seed 002's bitset
 * "create" and of every growable array.
 *
 * Three phases per round:
 *   vectors: 16 vectors grown by 1.5x realloc from 16 B, interleaved, each to its own final
 *            size between 1 and 64 MiB, every new byte written; then shrunk by halving
 *            realloc down to 16 B, checking the kept prefix;
 *   small:   512 vectors grown by 2x from 16 B to 128 KiB, interleaved;
 *   zeroed:  one block doubled by realloc from 4 KiB to 25 MB, each new half zeroed with
 *            memset (cbitset's bitset_grow), then freed; repeated 8 times. Its peak RSS
 *            shows whether growth keeps the old copy alive (glibc's stays near 2x 25 MB).
 *
 * Usage: wl_vecgrow [rounds [scale]]     (defaults 2 and 1; scale divides the sizes)
 *
 * stdout: exactly one line "checksum <n>"; stderr: each phase's time, the page faults
 * (wl_stats.h). Exit
 * status 1 on failure or a wrong byte.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wl_stats.h"

#define MIB ((size_t)1 << 20)

/* Through a volatile pointer: the compiler must not fold a memset into the allocator. */
static void *(*volatile zero_fill)(void *, int, size_t) = memset;

static void die(const char *msg) {
  fprintf(stderr, "wl_vecgrow: FAILED: %s\n", msg);
  exit(1);
}

/* Grow v from have to want bytes, writing the new ones with a pattern of the position. */
static unsigned char *grow(unsigned char *v, size_t have, size_t want) {
  v = realloc(v, want);
  if (!v)
    die("realloc returned NULL");
  for (size_t i = have; i < want; i++)
    v[i] = (unsigned char)(i * 131 + 7);
  return v;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t check(const unsigned char *v, size_t n) {
  for (size_t i = 0; i < n; i += 4093)
    if (v[i] != (unsigned char)(i * 131 + 7))
      die("a realloc lost the prefix");
  return v[n - 1];
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 2;
  size_t scale = argc > 2 ? (size_t)atol(argv[2]) : 1;
  if (rounds < 1 || scale < 1)
    return 2;
  uint64_t sum = 0;
  enum { NV = 16, NS = 512 };
  static unsigned char *v[NV], *sv[NS];
  static size_t len[NV], target[NV];
  double t_vec = 0, t_small = 0, t_zeroed = 0;
  for (int r = 0; r < rounds; r++) {
    double t0 = now();
    for (int k = 0; k < NV; k++) /* 1, 5, 9, .. 61 MiB */
      target[k] = (1 + (size_t)((k * 7 + r) % NV) * 4) * MIB / scale, len[k] = 0, v[k] = NULL;
    for (int more = 1; more;) {
      more = 0;
      for (int k = 0; k < NV; k++) {
        if (len[k] >= target[k])
          continue;
        size_t want = len[k] ? len[k] + len[k] / 2 : 16;
        want = want > target[k] ? target[k] : want;
        v[k] = grow(v[k], len[k], want);
        len[k] = want;
        more = 1;
      }
    }
    for (int k = 0; k < NV; k++) {
      sum += check(v[k], len[k]) + len[k];
      while (len[k] > 16) {
        len[k] /= 2;
        if (!(v[k] = realloc(v[k], len[k])))
          die("shrinking realloc returned NULL");
      }
      sum += check(v[k], len[k]);
      free(v[k]);
    }
    double t1 = now();
    size_t slen = 0;
    for (size_t want = 16; want <= (128 << 10) / scale + 16; want *= 2) {
      for (int k = 0; k < NS; k++)
        sv[k] = grow(sv[k], slen, want);
      slen = want;
    }
    for (int k = 0; k < NS; k++) {
      sum += check(sv[k], slen);
      free(sv[k]);
      sv[k] = NULL;
    }
    double t2 = now();
    for (int t = 0; t < 8; t++) {
      size_t n = 4096;
      unsigned char *b = calloc(1, n);
      if (!b)
        die("calloc returned NULL");
      while (n < 25 * MIB / scale) {
        if (!(b = realloc(b, 2 * n)))
          die("doubling realloc returned NULL");
        zero_fill(b + n, 0, n);
        b[n] = 1;
        n *= 2;
      }
      for (size_t i = 4096; i < n; i *= 2)
        sum += b[i];
      free(b);
    }
    t_vec += t1 - t0, t_small += t2 - t1, t_zeroed += now() - t2;
  }
  fprintf(stderr, "wl_vecgrow: %d rounds: vectors %.3f s, small %.3f s, zeroed %.3f s\n", rounds,
          t_vec, t_small, t_zeroed);
  wl_print_faults("wl_vecgrow");
  printf("checksum %llu\n", (unsigned long long)sum);
  return 0;
}
