/* SPDX-License-Identifier: MIT */
/* Guarded sampling's odds (issue 43): one use after free among many allocations, caught when
 * (and only when) its block was the sampled one. tests/sampling/t_sampling_stat.sh runs it.
 *
 *   t_sampling_uaf class SIZE          the class size malloc gives SIZE (run with
 *                                      AXMALLOC_GUARD=0): prints it
 *   t_sampling_uaf count SIZE N        N blocks of SIZE bytes, each freed at once: prints how
 *                                      many were guarded (malloc_usable_size == SIZE, which is
 *                                      no class size) and N
 *   t_sampling_uaf mix N SIZE...       N blocks of each SIZE, the sizes taken in turn (each
 *                                      class counts down on its own, whatever the others do):
 *                                      prints how many of each were guarded
 *   t_sampling_uaf uaf SIZE N [I]      the same N blocks; the I-th (random in [N/2, N) when
 *                                      not given) read right after its free. A guarded block's
 *                                      page is closed by then: the read faults (SIGSEGV);
 *                                      else the program prints "survived" and exits 0.
 *
 * The blocks are written (a pattern, checked before the free) so that a block handed out
 * twice would show. A read, not a write, after the free: a block that was not sampled is
 * left as the allocator left it (a write could corrupt its free list and end the program
 * another way). */
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile hide; /* (the compiler cannot see the free and the read meet) */

static uint64_t seed(void) {
  uint64_t s = 0;
  int fd = open("/dev/urandom", O_RDONLY);
  if (fd < 0 || read(fd, &s, sizeof s) != sizeof s) {
    fprintf(stderr, "t_sampling_uaf: no /dev/urandom\n");
    exit(2);
  }
  close(fd);
  return s;
}

static void fill_check(unsigned char *p, size_t size, unsigned char v) {
  memset(p, v, size);
  for (size_t k = 0; k < size; k += 61)
    if (p[k] != v) {
      fprintf(stderr, "t_sampling_uaf: block %p lost its pattern\n", (void *)p);
      exit(1);
    }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: t_sampling_uaf class SIZE | count SIZE N | uaf SIZE N [I]\n");
    return 2;
  }
  if (strcmp(argv[1], "mix") == 0) {
    size_t n = strtoul(argv[2], NULL, 10), k = (size_t)argc - 3, guarded[16] = {0};
    if (k == 0 || k > 16)
      return 2;
    for (size_t j = 0; j < n * k; j++) {
      size_t size = strtoul(argv[3 + j % k], NULL, 10);
      unsigned char *p = malloc(size);
      if (!p)
        return 1;
      guarded[j % k] += malloc_usable_size(p) == size;
      fill_check(p, size, (unsigned char)j);
      hide = p;
      free(hide);
    }
    for (size_t i = 0; i < k; i++)
      printf("%zu%c", guarded[i], i + 1 < k ? ' ' : '\n');
    return 0;
  }
  size_t size = strtoul(argv[2], NULL, 10);
  if (strcmp(argv[1], "class") == 0) {
    void *p = malloc(size);
    printf("%zu\n", malloc_usable_size(p));
    free(p);
    return 0;
  }
  if (argc < 4)
    return 2;
  size_t n = strtoul(argv[3], NULL, 10);
  if (strcmp(argv[1], "count") == 0) {
    size_t guarded = 0;
    for (size_t j = 0; j < n; j++) {
      unsigned char *p = malloc(size);
      if (!p)
        return 1;
      guarded += malloc_usable_size(p) == size;
      fill_check(p, size, (unsigned char)j);
      hide = p;
      free(hide);
    }
    printf("%zu %zu\n", guarded, n);
    return 0;
  }
  if (strcmp(argv[1], "uaf") != 0)
    return 2;
  size_t at = argc > 4 ? strtoul(argv[4], NULL, 10) : n / 2 + seed() % (n - n / 2);
  for (size_t j = 0; j < n; j++) {
    unsigned char *p = malloc(size);
    if (!p)
      return 1;
    fill_check(p, size, (unsigned char)j);
    hide = p;
    free(hide);
    if (j == at)
      (void)((volatile unsigned char *)hide)[size / 2]; /* the use after free */
  }
  puts("survived");
  return 0;
}
