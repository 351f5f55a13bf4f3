/* SPDX-License-Identifier: MIT */
/* Heap misuse probes: one misuse each, in the groups of mimalloc-bench's security suite
 * (bench/security there; written anew here). A probe that survives its misuse prints
 * NOT_CAUGHT; a probe is caught when the allocator stops the program first (an abort with a
 * message, a fault on a guard), or makes the misuse harmless where that is the test (no
 * immediate reuse, zeroed memory, NULL for an impossible size).
 *
 *   t_misuse PROBE SIZE     run one probe with blocks of SIZE bytes (8, 4096, 262144)
 *   t_misuse list           the probes, one a line
 *
 * tests/modes/t_misuse.sh runs every probe in a process of its own under glibc's malloc, axmalloc
 * and axmalloc's checked mode and counts them. Built with -O0 and -fno-builtin, and every
 * allocation through a function the compiler cannot see into, so that no misuse is optimized
 * away. */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#pragma GCC diagnostic ignored "-Wuse-after-free"
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wstringop-overflow"

#define MIB ((size_t)1 << 20)

static void *volatile hide; /* laundering: the compiler cannot follow a pointer through it */

static __attribute__((noinline)) void *get(size_t n) {
  hide = malloc(n);
  return hide;
}
static __attribute__((noinline)) void put(void *p) {
  hide = p;
  free(hide);
}
static __attribute__((noinline)) void copy(void *d, const void *s, size_t n) {
  hide = d;
  memcpy(hide, s, n);
}
static __attribute__((noinline)) char *launder(char *p) {
  hide = p;
  return hide;
}

static void not_caught(void) {
  puts("NOT_CAUGHT");
  fflush(stdout);
}

/* ---- overflows and underflows by a store, then free ---------------------------------- */

static void store_at(size_t n, intptr_t at) {
  char *p = get(n);
  launder(p)[at] ^= 'A'; /* xor: never the byte that was there */
  put(p);
  not_caught();
}
static void one_byte_overflow(size_t n) { store_at(n, (intptr_t)n); }
static void one_byte_underflow(size_t n) { store_at(n, -1); }
static void byte32_overflow(size_t n) { store_at(n, (intptr_t)n - 1 + 32); }
static void byte32_underflow(size_t n) { store_at(n, -32); }
static void mbyte_overflow(size_t n) { store_at(n, (intptr_t)(n - 1 + MIB)); }
static void mbyte_underflow(size_t n) { store_at(n, -(intptr_t)MIB); }

/* ---- the same through memcpy, without a free ------------------------------------------ */

static void copy_span(size_t n, intptr_t from, size_t len) {
  char *src = calloc(1, len), *p = get(n);
  if (!src)
    exit(3);
  copy(launder(p) + from, src, len);
  not_caught();
}
static void one_byte_memcpy_overflow(size_t n) { copy_span(n, 0, n + 1); }
static void one_byte_memcpy_underflow(size_t n) { copy_span(n, -1, n); }
static void byte32_memcpy_overflow(size_t n) { copy_span(n, 0, n + 32); }
static void byte32_memcpy_underflow(size_t n) { copy_span(n, -32, n); }
static void mbyte_memcpy_overflow(size_t n) { copy_span(n, 0, n + MIB); }
static void mbyte_memcpy_underflow(size_t n) { copy_span(n, -(intptr_t)MIB, n); }

/* ---- double and invalid frees ------------------------------------------------------------ */

static void double_free(size_t n) {
  char *p = get(n);
  put(p);
  put(p);
  not_caught();
}
static void double_free_delayed(size_t n) {
  char *p = get(n);
  put(p);
  for (int i = 0; i < 1024; i++)
    put(get(n));
  put(p);
  not_caught();
}
static void double_free_interleaved(size_t n) {
  char *p = get(n), *q = get(n);
  put(p);
  put(q);
  put(p);
  not_caught();
}
static void double_free_reuse(size_t n) {
  char *p = get(n);
  put(p);
  put(p);
  for (int i = 0; i < 256 * 1024; i++)
    put(get(n));
  not_caught();
}
static void double_free_single_reuse(size_t n) {
  char *p = get(n);
  put(p);
  char *q = get(n);
  put(p);
  put(q);
  not_caught();
}
static void invalid_free(size_t n) {
  (void)n;
  put((void *)1);
  not_caught();
}
static void invalid_free_stack(size_t n) {
  char a[n];
  put(launder(a));
  not_caught();
}
static void invalid_free_close(size_t n) {
  char *p = get(n);
  put(launder(p) + 4096);
  not_caught();
}
static void invalid_free_far(size_t n) {
  char *p = get(n);
  put(launder(p) + 1024 * MIB);
  not_caught();
}
static void invalid_free_unaligned(size_t n) {
  char *p = get(n);
  put(launder(p) + 1);
  not_caught();
}
static void invalid_free_unaligned_multiple(size_t n) {
  char *p = get(n);
  put(launder(p) + 8);
  not_caught();
}
static void invalid_free_alloca(size_t n) {
  char *p = __builtin_alloca(n);
  put(launder(p));
  not_caught();
}

/* ---- after free ----------------------------------------------------------------------------- */

static void write_after_free(size_t n) {
  char *p = get(n);
  put(p);
  memset(launder(p), 'A', n);
  not_caught();
}
static void write_after_free_reuse(size_t n) {
  char *p = get(n);
  put(p);
  memset(launder(p), 'A', n);
  for (int i = 0; i < 256 * 1024; i++)
    put(get(n));
  not_caught();
}
/* caught when freed memory reads as zero (or cannot be read) */
static void zero_after_free(size_t n) {
  char *p = get(n);
  memset(p, 'A', n);
  put(p);
  for (size_t i = 0; i < n; i++)
    if (launder(p)[i] != 0)
      return not_caught();
}
/* caught when a freed block is not handed out again at once */
static void malloc_reuse(size_t n) {
  char *p = get(n);
  put(p);
  if (get(n) == p)
    not_caught();
}
static void malloc_reuse_downsize(size_t n) {
  char *p = get(n);
  put(p);
  if (get(n / 2) == p)
    not_caught();
}
/* caught when the block realloc moved a block from is not handed out again at once.
 * (mimalloc-bench's realloc_reuse compares the old pointer with itself, as it drops realloc's
 * result, so that nothing but a crash passes it there; this is what it means to test.) */
static void realloc_reuse(size_t n) {
  (void)n;
  char *p = get(8);
  hide = realloc(p, 1024);
  if (get(8) == p)
    not_caught();
}
/* caught when malloc hands out zeroed memory (after many blocks were filled and freed) */
static void zero_on_malloc(size_t n) {
  size_t count = n * 4096 > 256 * MIB ? 256 * MIB / n : 4096; /* (262144 B: 1,024 blocks) */
  char **all = calloc(count, sizeof *all);
  for (size_t i = 0; i < count; i++)
    memset(all[i] = get(n), 'A', n);
  for (size_t i = 0; i < count; i++)
    put(all[i]);
  char *p = get(n);
  for (size_t i = 0; i < n; i++)
    if (launder(p)[i] != 0)
      return not_caught();
}

/* ---- zero-size blocks, odd sizes, the heap as code --------------------------------------------
 */

static void read_zero_size(size_t n) {
  (void)n;
  char *p = get(0);
  if (!p)
    exit(1);
  putchar(*launder(p));
  not_caught();
}
static void read_zero_size_free(size_t n) {
  (void)n;
  char *p = get(0);
  if (!p)
    exit(1);
  putchar(*launder(p));
  put(p);
  not_caught();
}
static void write_zero_size(size_t n) {
  (void)n;
  char *p = get(0);
  if (!p)
    exit(1);
  *launder(p) = 'A';
  not_caught();
}
static void write_zero_size_free(size_t n) {
  (void)n;
  char *p = get(0);
  if (!p)
    exit(1);
  *launder(p) = 'A';
  put(p);
  not_caught();
}
static void impossibly_large_malloc(size_t n) {
  (void)n;
  char *p = get((size_t)-2);
  if (p)
    not_caught();
  put(p);
}
/* a return instruction copied into a block and called */
static void executable_heap(size_t n) {
#if defined(__aarch64__)
  static const unsigned char ret[] = {0xc0, 0x03, 0x5f, 0xd6};
#else
  static const unsigned char ret[] = {0xc3};
#endif
  char *p = get(n);
  memcpy(p, ret, sizeof ret);
  __builtin___clear_cache(p, p + sizeof ret);
  void (*fn)(void) = (void (*)(void))(uintptr_t)launder(p);
  fn();
  not_caught();
}

struct probe {
  const char *name;
  void (*run)(size_t n);
};
static const struct probe probes[] = {
    {"one_byte_overflow", one_byte_overflow},
    {"one_byte_underflow", one_byte_underflow},
    {"32_byte_overflow", byte32_overflow},
    {"32_byte_underflow", byte32_underflow},
    {"one_mbyte_overflow", mbyte_overflow},
    {"one_mbyte_underflow", mbyte_underflow},
    {"one_byte_memcpy_overflow", one_byte_memcpy_overflow},
    {"one_byte_memcpy_underflow", one_byte_memcpy_underflow},
    {"32_byte_memcpy_overflow", byte32_memcpy_overflow},
    {"32_byte_memcpy_underflow", byte32_memcpy_underflow},
    {"one_mbyte_memcpy_overflow", mbyte_memcpy_overflow},
    {"one_mbyte_memcpy_underflow", mbyte_memcpy_underflow},
    {"double_free", double_free},
    {"double_free_delayed", double_free_delayed},
    {"double_free_interleaved", double_free_interleaved},
    {"double_free_reuse", double_free_reuse},
    {"double_free_single_reuse", double_free_single_reuse},
    {"invalid_free", invalid_free},
    {"invalid_free_stack", invalid_free_stack},
    {"invalid_free_close", invalid_free_close},
    {"invalid_free_far", invalid_free_far},
    {"invalid_free_unaligned", invalid_free_unaligned},
    {"invalid_free_unaligned_multiple", invalid_free_unaligned_multiple},
    {"invalid_free_alloca", invalid_free_alloca},
    {"write_after_free", write_after_free},
    {"write_after_free_reuse", write_after_free_reuse},
    {"zero_after_free", zero_after_free},
    {"malloc_reuse", malloc_reuse},
    {"malloc_reuse_downsize", malloc_reuse_downsize},
    {"realloc_reuse", realloc_reuse},
    {"zero_on_malloc", zero_on_malloc},
    {"read_zero_size", read_zero_size},
    {"read_zero_size_free", read_zero_size_free},
    {"write_zero_size", write_zero_size},
    {"write_zero_size_free", write_zero_size_free},
    {"impossibly_large_malloc", impossibly_large_malloc},
    {"executable_heap", executable_heap},
};

int main(int argc, char **argv) {
  size_t count = sizeof probes / sizeof *probes;
  if (argc == 2 && strcmp(argv[1], "list") == 0) {
    for (size_t i = 0; i < count; i++)
      puts(probes[i].name);
    return 0;
  }
  if (argc != 3) {
    fprintf(stderr, "usage: t_misuse PROBE SIZE | list\n");
    return 2;
  }
  for (size_t i = 0; i < count; i++)
    if (strcmp(argv[1], probes[i].name) == 0) {
      probes[i].run(strtoul(argv[2], NULL, 10));
      return 0;
    }
  fprintf(stderr, "t_misuse: no probe %s\n", argv[1]);
  return 2;
}
