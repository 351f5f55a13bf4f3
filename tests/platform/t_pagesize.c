/* SPDX-License-Identifier: MIT */
/* t_pagesize: the allocator works with the page size it reads at run time, and
 * AXMALLOC_PAGE_SIZE makes it behave as on a 16 or 64 KiB kernel (AArch64 servers).
 * Checks: ax_info().page_size; valloc/pvalloc alignment and rounding; purging happens in
 * whole pages; huge usable sizes are page multiples minus the block offset. */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

int main(void) {
  check_axmalloc_active();
  ax_info_t info;
  ax_info(&info);
  size_t os = (size_t)sysconf(_SC_PAGESIZE);
  const char *env = getenv("AXMALLOC_PAGE_SIZE");
  size_t want = env ? strtoul(env, NULL, 0) : os;
  CHECKF(info.page_size == want, "page size %zu, expected %zu", info.page_size, want);

  void *v = valloc(100);
  CHECK(v && (uintptr_t)v % want == 0);
  void *pv = pvalloc(want + 1);
  CHECK(pv && (uintptr_t)pv % want == 0 && malloc_usable_size(pv) >= 2 * want);
  free(v);
  free(pv);

  /* 40 MiB of 64 KiB blocks, all but one in 64 freed, a trim: purges are whole pages */
  enum { N = 640 };
  static void *blocks[N];
  uint64_t purged = trim_scattered(blocks, N);
  CHECKF(purged > 0 && purged % want == 0, "purged %llu B, not whole %zu B pages",
         (unsigned long long)purged, want);
  /* and the memory comes back zeroed and usable */
  for (int i = 0; i < 64; i++) {
    unsigned char *p = calloc(1, 64 << 10);
    CHECK(p != NULL);
    for (size_t j = 0; j < (64 << 10); j += 997)
      CHECK(p[j] == 0);
    free(p);
  }
  for (int i = 0; i < N; i += 64)
    free(blocks[i]);
  printf("t_pagesize: OK (page %zu)\n", info.page_size);
  return 0;
}
