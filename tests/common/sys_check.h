/* SPDX-License-Identifier: MIT */
/* sys_check.h: tiny assertion helpers for the system tests (threads, fork, static link).
 *
 *   CHECK(cond)          on failure: "file:line: CHECK failed: cond" on stderr, exit(1)
 *   CHECKF(cond, ...)    the same plus a printf-style detail line
 *   SAFE_CHECK(cond)     async-signal-safe variant for fork children and other places
 *                        where stdio/malloc must not run: write(2) + _exit(1)
 *   sys_rss_bytes()      resident set size from /proc/self/statm (0 if unreadable)
 */
#ifndef SYS_CHECK_H
#define SYS_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                     \
      fflush(stderr);                                                                              \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#define CHECKF(cond, ...)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n  ", __FILE__, __LINE__, #cond);                   \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      fflush(stderr);                                                                              \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* write(2)-only reporting: no stdio, no malloc. */
static inline void sys_write_str(const char *s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(2, s, n);
    if (w <= 0)
      return;
    s += w;
    n -= (size_t)w;
  }
}

static inline void sys_write_u64(uint64_t v) {
  char buf[24];
  int i = (int)sizeof buf - 1;
  buf[i] = 0;
  do {
    buf[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v && i > 0);
  sys_write_str(buf + i);
}

static inline __attribute__((noreturn)) void sys_safe_fail(const char *file, int line,
                                                           const char *expr) {
  sys_write_str(file);
  sys_write_str(":");
  sys_write_u64((uint64_t)line);
  sys_write_str(": CHECK failed: ");
  sys_write_str(expr);
  sys_write_str("\n");
  _exit(1);
}

#define SAFE_CHECK(cond)                                                                           \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      sys_safe_fail(__FILE__, __LINE__, #cond);                                                    \
  } while (0)

/* Resident set size in bytes, from /proc/self/statm (second field, in pages). Uses a
 * plain read(2) so it does not allocate. */
#include <fcntl.h>
static inline uint64_t sys_rss_bytes(void) {
  char buf[256];
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return 0;
  buf[n] = 0;
  unsigned long long size = 0, resident = 0;
  if (sscanf(buf, "%llu %llu", &size, &resident) != 2)
    return 0;
  return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Small fast PRNG (xorshift64*), one state per thread. */
static inline uint64_t sys_rand(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1DULL;
}

/* Fill a block with a pattern derived from a 64-bit tag; the first two words hold the
 * tag and the size so a verifier can detect a block overwritten by another block.
 * Blocks must be at least 16 bytes. */
static inline uint64_t sys_pat_word(uint64_t tag, size_t i) {
  return (tag ^ (i * 0x9E3779B97F4A7C15ULL)) + (tag >> 7);
}

static inline void sys_fill(void *p, size_t size, uint64_t tag) {
  uint64_t *w = (uint64_t *)p;
  size_t nw = size / 8;
  w[0] = tag;
  w[1] = (uint64_t)size;
  for (size_t i = 2; i < nw; i++)
    w[i] = sys_pat_word(tag, i);
  unsigned char *b = (unsigned char *)p;
  for (size_t i = nw * 8; i < size; i++)
    b[i] = (unsigned char)(tag + i);
}

/* Returns 1 when the block still holds exactly the pattern sys_fill wrote. */
static inline int sys_verify(const void *p, size_t size, uint64_t tag) {
  const uint64_t *w = (const uint64_t *)p;
  size_t nw = size / 8;
  if (w[0] != tag || w[1] != (uint64_t)size)
    return 0;
  for (size_t i = 2; i < nw; i++)
    if (w[i] != sys_pat_word(tag, i))
      return 0;
  const unsigned char *b = (const unsigned char *)p;
  for (size_t i = nw * 8; i < size; i++)
    if (b[i] != (unsigned char)(tag + i))
      return 0;
  return 1;
}

/* Overwrite the header so a second owner of the same block (a double hand-out) fails
 * verification. Done just before free. */
static inline void sys_poison(void *p) {
  uint64_t *w = (uint64_t *)p;
  w[0] = 0xDEADDEADDEADDEADULL;
  w[1] = 0;
}

#endif
