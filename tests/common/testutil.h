/* SPDX-License-Identifier: MIT */
/* Shared helpers for the tests/t_*.c programs: one assertion macro and a few utilities.
 * A failed CHECK prints file:line and the expression to stderr and exits 1. */
#ifndef AX_TESTUTIL_H
#define AX_TESTUTIL_H

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>
#include <unistd.h>

#include <axmalloc.h>

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                     \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* CHECK with a printf-style explanation (values that make a failure readable). */
#define CHECKF(cond, ...)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);                     \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* fork() for a child that is to die of a signal: stdio flushed first (no output twice), the
 * child writes no core file. post: the child's pid in the parent, 0 in the child. */
static inline pid_t fork_to_die(void) {
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
  }
  return pid;
}

/* Tests that pin down the default mode's fast paths and block layout (page descriptors read
 * through the program's pointers, the cache, the free filter) do not apply while memory
 * tagging is on (every malloc and free takes the slow path, pointers carry a tag): they
 * exit 77, which their ctest registration counts as skipped (SKIP_RETURN_CODE). */
static inline void skip_when_tagging(const char *name) {
  ax_info_t info;
  ax_info(&info);
  if (info.mte && info.mte[0] == 'o' && info.mte[1] == 'n') {
    printf("%s: skipped: memory tagging is on (AXMALLOC_MTE=1)\n", name);
    exit(77);
  }
}

/* A uint64_t that ax_ctl reads by name (the test fails when it cannot). */
static inline uint64_t ctl_u64(const char *name) {
  uint64_t v = 0;
  size_t len = sizeof v;
  int rc = ax_ctl(name, &v, &len, NULL, 0);
  CHECKF(rc == 0, "ax_ctl(%s) = %d", name, rc);
  return v;
}

/* Prove that malloc & co. are axmalloc's: ax_usable_size knows a malloc'd block and agrees
 * with malloc_usable_size, and the block shows in this thread's exact class_live counts (in
 * one class: checked mode's block is bigger than the size's class; with the heap profiler on,
 * a sampled block has a place of its own and does not: then another). Call first in every
 * test. */
static inline uint64_t live_in_classes(const ax_stats_t *s) {
  uint64_t n = 0;
  for (unsigned c = 0; c < AX_NUM_CLASSES; c++)
    n += s->class_live[c];
  return n;
}
static inline void check_axmalloc_active(void) {
  static ax_stats_t before, after; /* large; keep them off the stack */
  ax_info_t info;
  ax_info(&info);
  void *p = NULL;
  for (int tries = 0; tries < (info.prof_sample ? 200 : 1); tries++) {
    ax_stats_get(&before);
    p = malloc(100);
    ax_stats_get(&after);
    CHECK(p != NULL);
    if (live_in_classes(&after) != live_in_classes(&before) ||
        tries + 1 == (info.prof_sample ? 200 : 1))
      break;
    free(p);
  }
  CHECKF(live_in_classes(&after) == live_in_classes(&before) + 1 || info.prof_sample,
         "malloc() is not axmalloc (blocks live in this thread's classes %llu -> %llu)",
         (unsigned long long)live_in_classes(&before), (unsigned long long)live_in_classes(&after));
  CHECK(ax_usable_size(p) >= 100);
  CHECK(malloc_usable_size(p) == ax_usable_size(p));
  free(p);
}

/* Dirty n blocks of 64 KiB, free all but one in 64 (so their segments stay and their empty
 * pages are purged rather than unmapped), then malloc_trim(0). post: the bytes the trim
 * purged; blocks[i] is live for i % 64 == 0, freed otherwise. */
static inline uint64_t trim_scattered(void **blocks, int n) {
  for (int i = 0; i < n; i++) {
    blocks[i] = malloc(64 << 10);
    CHECK(blocks[i] != NULL);
    memset(blocks[i], 0x5a, 64 << 10);
  }
  for (int i = 0; i < n; i++)
    if (i % 64 != 0)
      free(blocks[i]);
  ax_stats_t a, b;
  ax_stats_get(&a);
  malloc_trim(0);
  ax_stats_get(&b);
  return b.os_purged - a.os_purged;
}

/* Work scale factor in (0, 1]: AX_TEST_SCALE=0.1 (e.g. under qemu) does a tenth of the
 * work. scaled(n) never returns less than 1. */
static inline size_t scaled(size_t n) {
  const char *s = getenv("AX_TEST_SCALE");
  double f = s ? atof(s) : 1.0;
  if (!(f > 0.0) || f > 1.0)
    f = 1.0;
  size_t r = (size_t)((double)n * f);
  return r ? r : 1;
}

/* Small deterministic PRNG (xorshift64*). */
static inline uint64_t rnd_next(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1DULL;
}

/* Byte pattern: byte i of a region tagged `seed`. Position based, so a block's prefix keeps
 * its pattern when it moves (realloc). */
static inline uint8_t pat_byte(size_t i, uint32_t seed) {
  uint32_t x = (uint32_t)i; /* 32-bit lanes: fill and check vectorise well */
  return (uint8_t)(x + (x >> 8) * 31u + (x >> 16) * 17u + (x >> 24) * 13u + seed * 131u + 7u);
}
static inline void pat_fill(void *p, size_t from, size_t to, uint32_t seed) {
  uint8_t *b = (uint8_t *)p;
  for (size_t i = from; i < to; i++)
    b[i] = pat_byte(i, seed);
}
/* Returns the index of the first mismatch in [from, to), or (size_t)-1 when all match. */
static inline size_t pat_find_bad(const void *p, size_t from, size_t to, uint32_t seed) {
  const uint8_t *b = (const uint8_t *)p;
  for (size_t c = from; c < to; c += 4096) { /* branch-free chunks vectorise */
    size_t e = to - c < 4096 ? to : c + 4096;
    uint8_t diff = 0;
    for (size_t i = c; i < e; i++)
      diff |= (uint8_t)(b[i] ^ pat_byte(i, seed));
    if (diff)
      for (size_t i = c; i < e; i++)
        if (b[i] != pat_byte(i, seed))
          return i;
  }
  return (size_t)-1;
}
#define PAT_OK ((size_t)-1)

/* True when the n bytes at p are all zero. */
static inline int all_zero(const void *p, size_t n) {
  const uint8_t *b = (const uint8_t *)p;
  size_t i = 0;
  for (; i < n && ((uintptr_t)(b + i) & 7); i++)
    if (b[i])
      return 0;
  for (; i + 8 <= n; i += 8)
    if (*(const uint64_t *)(const void *)(b + i))
      return 0;
  for (; i < n; i++)
    if (b[i])
      return 0;
  return 1;
}

#endif
