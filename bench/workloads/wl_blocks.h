/* SPDX-License-Identifier: MIT */
/* What the workloads share: a block that carries its size and a tag (wl_threads and
 * wl_thread_churn fill it with a byte of the tag and verify it before its free); a seeded
 * xorshift; the process's RSS; an argument parser; the failure exit. Each program names
 * itself in wl_name first thing in main. */
#ifndef WL_BLOCKS_H
#define WL_BLOCKS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *wl_name; /* the program's name, for messages */

typedef struct block {
  uint32_t size;
  uint32_t tag;
} block;

static inline void die(const char *msg) {
  fprintf(stderr, "%s: FAILED: %s\n", wl_name, msg);
  exit(1);
}

static inline uint64_t xorshift64(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

/* Never 0: a block zeroed by mistake shows. */
static inline unsigned char fill_byte(uint32_t tag) { return (unsigned char)(tag >> 24) | 1; }

/* A block of a random size in [lo, hi]; its bytes from `from` on filled with its tag's byte. */
static inline block *block_new(uint64_t *rng, size_t lo, size_t hi, size_t from) {
  uint64_t r = xorshift64(rng);
  size_t size = lo + (size_t)(r % (hi - lo + 1));
  block *b = malloc(size);
  if (b == NULL)
    die("malloc returned NULL");
  b->size = (uint32_t)size;
  b->tag = (uint32_t)(r >> 32);
  memset((unsigned char *)b + from, fill_byte(b->tag), size - from);
  return b;
}

/* Verify (from byte `from` on) and free a block; return its contribution to the checksum. */
static inline uint64_t block_retire(block *b, size_t lo, size_t hi, size_t from) {
  size_t size = b->size;
  if (size < lo || size > hi)
    die("block header corrupted");
  const unsigned char *p = (const unsigned char *)b, want = fill_byte(b->tag);
  unsigned char diff = 0;
  for (size_t i = from; i < size; i++) /* no early exit: vectorizable */
    diff |= (unsigned char)(p[i] ^ want);
  if (diff)
    die("block contents corrupted");
  uint64_t c = size + (b->tag & 0xffff);
  free(b);
  return c;
}

/* Resident set size in bytes (Linux /proc), 0 if unknown. */
static inline uint64_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long long size, resident = 0;
  if (f == NULL)
    return 0;
  if (fscanf(f, "%llu %llu", &size, &resident) != 2)
    resident = 0;
  fclose(f);
  return resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* s as a number in [lo, hi], or exit 2 with usage. */
static inline unsigned long parse_arg(const char *s, unsigned long lo, unsigned long hi,
                                      const char *usage) {
  char *end;
  unsigned long v = strtoul(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "%s: bad argument '%s' (want %lu..%lu)\n", wl_name, s, lo, hi);
    fprintf(stderr, "usage: %s %s\n", wl_name, usage);
    exit(2);
  }
  return v;
}

#endif
