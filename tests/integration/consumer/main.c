/* SPDX-License-Identifier: MIT */
/* main.c: proves that axmalloc is the program's malloc, however it was linked.
 *
 * malloc's blocks must move axmalloc's own counter (ax_stats_get) and have the same
 * usable size through malloc_usable_size and ax_usable_size. Prints the file that holds
 * ax_malloc (dladdr), so that t_install.sh can check a shared program loaded the
 * installed libaxmalloc.so and not the build tree's, then "OK".
 */
#define _GNU_SOURCE
#include <axmalloc.h>
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define NBLOCKS 1000

int main(int argc, char **argv) {
  ax_info_t info;
  ax_info(&info);
  CHECK(info.arch != NULL && info.page_size >= 4096, "ax_info: arch %s, page %zu",
        info.arch ? info.arch : "(null)", info.page_size);

  ax_stats_t s0, s1;
  ax_stats_get(&s0);
  static void *blocks[NBLOCKS];
  for (int i = 0; i < NBLOCKS; i++) {
    size_t size = 16 + (size_t)i * 40; /* 16 B .. 40 KiB: many size classes */
    blocks[i] = malloc(size);
    CHECK(blocks[i] != NULL, "malloc(%zu) failed", size);
    memset(blocks[i], i & 0xff, size);
  }
  ax_stats_get(&s1);
  CHECK(s1.mallocs - s0.mallocs >= NBLOCKS / 2,
        "ax_stats mallocs %llu -> %llu over %d mallocs: malloc is not axmalloc's",
        (unsigned long long)s0.mallocs, (unsigned long long)s1.mallocs, NBLOCKS);
  for (int i = 0; i < NBLOCKS; i++) {
    size_t a = malloc_usable_size(blocks[i]), b = ax_usable_size(blocks[i]);
    CHECK(a == b && b >= 16 + (size_t)i * 40,
          "block %d: malloc_usable_size %zu, ax_usable_size %zu", i, a, b);
    free(blocks[i]);
  }
  void *p = ax_malloc(100);
  CHECK(p != NULL && malloc_usable_size(p) == ax_usable_size(p), "ax_malloc/usable size");
  free(p); /* ax_malloc's blocks are malloc's blocks */

  Dl_info dl;
  if (dladdr((void *)(uintptr_t)ax_malloc, &dl) && dl.dli_fname)
    printf("ax_malloc in: %s\n", dl.dli_fname);
  printf("%s: axmalloc %s, atomics %s, mallocs +%llu: OK\n", argc > 0 ? argv[0] : "main", info.arch,
         info.atomics, (unsigned long long)(s1.mallocs - s0.mallocs));
  return 0;
}
