/* SPDX-License-Identifier: MIT */
/* wl_bitset.c -- the cbitset "create" benchmark pattern.
 *
 * Models seed 002: cbitset's "create" test (a bitset grown one word at a time while bits
 * 0, 3, 6, ... are set) was 6x slower on an AArch64 server, blamed on realloc, page
 * faults and bzero costs rather than on the CPU.
 *
 * Usage: wl_bitset [nbits [repeats]]     (defaults 20000000 and 20)
 *
 * Each repeat runs two variants on a fresh bitset of about nbits bits (the exact size
 * varies a little per repeat so the allocator sees different sizes):
 *   realloc: cbitset's own growth -- capacity doubles through realloc(), and every time
 *            the bitset grows the new words are zeroed with memset (bitset_grow), so the
 *            array is realloc'd ~log2(n/64) times and memset once per 64 bits;
 *   calloc:  a common alternative -- growth by calloc(new capacity) + memcpy + free(old).
 * After filling, the population count is taken and checked against the exact expected
 * value ceil(n/3), and a few words are spot-checked.
 *
 * stdout: exactly one line "checksum <sum of all popcounts + sum of spot-checked words>".
 * Exit status 1 on allocation failure or a wrong count / word.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wl_stats.h"

typedef struct bitset_s {
  uint64_t *array;
  size_t arraysize; /* words in use */
  size_t capacity;  /* words allocated */
} bitset_t;

static void die(const char *msg) {
  fprintf(stderr, "wl_bitset: FAILED: %s\n", msg);
  exit(1);
}

static bitset_t *bitset_create(void) {
  bitset_t *b = malloc(sizeof *b);
  if (b == NULL)
    die("malloc returned NULL");
  b->array = NULL;
  b->arraysize = 0;
  b->capacity = 0;
  return b;
}

static void bitset_free(bitset_t *b) {
  free(b->array);
  free(b);
}

/* cbitset's bitset_grow: double the capacity through realloc, zero the new words. */
static void bitset_grow_realloc(bitset_t *b, size_t newarraysize) {
  if (b->capacity < newarraysize) {
    size_t newcapacity = b->capacity ? b->capacity : 1;
    while (newcapacity < newarraysize)
      newcapacity *= 2;
    uint64_t *newarray = realloc(b->array, sizeof(uint64_t) * newcapacity);
    if (newarray == NULL)
      die("realloc returned NULL");
    b->capacity = newcapacity;
    b->array = newarray;
  }
  memset(b->array + b->arraysize, 0, sizeof(uint64_t) * (newarraysize - b->arraysize));
  b->arraysize = newarraysize;
}

/* Alternative growth: calloc a doubled array, copy the used words, free the old one. */
static void bitset_grow_calloc(bitset_t *b, size_t newarraysize) {
  if (b->capacity < newarraysize) {
    size_t newcapacity = b->capacity ? b->capacity : 1;
    while (newcapacity < newarraysize)
      newcapacity *= 2;
    uint64_t *newarray = calloc(newcapacity, sizeof(uint64_t));
    if (newarray == NULL)
      die("calloc returned NULL");
    if (b->arraysize)
      memcpy(newarray, b->array, sizeof(uint64_t) * b->arraysize);
    free(b->array);
    b->capacity = newcapacity;
    b->array = newarray;
  } else {
    /* Words beyond arraysize are already zero from calloc (never written). */
  }
  b->arraysize = newarraysize;
}

static inline void bitset_set_realloc(bitset_t *b, size_t i) {
  size_t w = i >> 6;
  if (w >= b->arraysize)
    bitset_grow_realloc(b, w + 1);
  b->array[w] |= (uint64_t)1 << (i & 63);
}

static inline void bitset_set_calloc(bitset_t *b, size_t i) {
  size_t w = i >> 6;
  if (w >= b->arraysize)
    bitset_grow_calloc(b, w + 1);
  b->array[w] |= (uint64_t)1 << (i & 63);
}

static uint64_t bitset_count(const bitset_t *b) {
  uint64_t c = 0;
  for (size_t k = 0; k < b->arraysize; k++)
    c += (uint64_t)__builtin_popcountll(b->array[k]);
  return c;
}

/* Bit i is set iff i % 3 == 0 and i < n. Verify that for word w and return the word. */
static uint64_t check_word(const bitset_t *b, size_t w, size_t n) {
  uint64_t expect = 0;
  for (unsigned j = 0; j < 64; j++) {
    size_t i = w * 64 + j;
    if (i < n && i % 3 == 0)
      expect |= (uint64_t)1 << j;
  }
  if (b->array[w] != expect)
    die("bitset word has wrong contents");
  return expect;
}

static uint64_t verify(const bitset_t *b, size_t n) {
  uint64_t expect_count = (n + 2) / 3;
  uint64_t count = bitset_count(b);
  if (count != expect_count)
    die("popcount mismatch");
  if (b->arraysize != ((n - 1) / 3 * 3) / 64 + 1) /* up to the word of the last set bit */
    die("bitset has the wrong size");
  uint64_t sum = count;
  /* Spot-check 64 words spread over the array, plus the first and last. */
  size_t words = b->arraysize;
  sum += check_word(b, 0, n) & 0xffff;
  sum += check_word(b, words - 1, n) & 0xffff;
  for (size_t k = 1; k <= 64; k++)
    sum += check_word(b, (words - 1) * k / 65, n) & 0xffff;
  return sum;
}

static unsigned long parse_arg(const char *s, unsigned long lo, unsigned long hi) {
  char *end;
  unsigned long v = strtoul(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "wl_bitset: bad argument '%s' (want %lu..%lu)\n", s, lo, hi);
    fprintf(stderr, "usage: wl_bitset [nbits [repeats]]\n");
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  size_t nbits = argc > 1 ? parse_arg(argv[1], 1000, 1UL << 36) : 20000000;
  unsigned long repeats = argc > 2 ? parse_arg(argv[2], 1, 1000000) : 20;
  uint64_t checksum = 0, total_realloc = 0, total_calloc = 0;

  for (unsigned long r = 0; r < repeats; r++) {
    /* Vary the size by up to ~1/8 so repeats do not all hit the same size classes. */
    size_t n = nbits - (size_t)((r * 2654435761u) % (nbits / 8 + 1));

    bitset_t *b = bitset_create();
    for (size_t i = 0; i < n; i += 3)
      bitset_set_realloc(b, i);
    uint64_t s = verify(b, n);
    total_realloc += (n + 2) / 3;
    checksum += s;
    bitset_free(b);

    b = bitset_create();
    for (size_t i = 0; i < n; i += 3)
      bitset_set_calloc(b, i);
    s = verify(b, n);
    total_calloc += (n + 2) / 3;
    checksum += s;
    bitset_free(b);
  }

  fprintf(stderr, "wl_bitset: %lu repeats of ~%zu bits: realloc bits %llu, calloc bits %llu\n",
          repeats, nbits, (unsigned long long)total_realloc, (unsigned long long)total_calloc);
  wl_print_faults("wl_bitset");
  printf("checksum %llu\n", (unsigned long long)checksum);
  return 0;
}
