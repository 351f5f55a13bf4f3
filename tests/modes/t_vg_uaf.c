/* SPDX-License-Identifier: MIT */
/* Valgrind: a deliberate use after free must be reported by memcheck as an "Invalid write"
 * or "Invalid read" inside a block "free'd" (tests/modes/modes.cmake checks the report).
 *   t_vg_uaf write | read | write_huge | read_medium */
#include <string.h>

#include "testutil.h"

static volatile char sink;

int main(int argc, char **argv) {
  CHECK(argc == 2);
  check_axmalloc_active();
  const char *m = argv[1];
  size_t n = !strcmp(m, "write_huge") ? (size_t)3 << 20 : !strcmp(m, "read_medium") ? 20000 : 64;
  char *p = malloc(n);
  CHECK(p);
  memset(p, 7, n);
  free(p);
  if (!strncmp(m, "write", 5))
    p[10] = 1; /* the bug */
  else
    sink = p[10]; /* the bug */
  printf("t_vg_uaf %s: done\n", m);
  return 0;
}
