/* t_linkorder: a program that calls malloc and one ax_* function (not the allocator entry
 * points themselves). Linked -static in a wrong order, with libc before axmalloc, it must
 * not link: glibc's malloc.o would serve malloc while axmalloc's statistics report on
 * an allocator that never runs. See t_linkorder.cmake. */
#include <stdlib.h>

#include <axmalloc.h>

int main(void) {
  void *p = malloc(100);
  ax_stats_print();
  free(p);
  return 0;
}
