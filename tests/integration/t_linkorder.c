/* SPDX-License-Identifier: MIT */
/* t_linkorder: a program that calls malloc and a few ax_* functions (not the allocator entry
 * points themselves). Linked -static in the right order it must run on axmalloc (checked
 * below); in a wrong order, with libc before axmalloc, it must not link at all: glibc's
 * malloc.o would serve malloc while axmalloc's statistics report on an allocator that never
 * runs. See t_linkorder.cmake. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#include <axmalloc.h>

int main(void) {
  static ax_stats_t before, after;
  unsigned c = 1;
  while (ax_class_size(c) < 100)
    c++;
  ax_stats_get(&before);
  void *p = malloc(100);
  ax_stats_get(&after);
  /* a block malloc made is counted in axmalloc's stats, and its usable size is the class's */
  if (!p || malloc_usable_size(p) != ax_class_size(c) ||
      after.class_live[c] != before.class_live[c] + 1) {
    fprintf(stderr, "t_linkorder: malloc is not axmalloc's (usable %zu)\n",
            p ? malloc_usable_size(p) : 0);
    return 1;
  }
  free(p);
  puts("t_linkorder: OK");
  return 0;
}
