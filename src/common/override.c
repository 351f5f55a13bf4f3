/* The rest of the glibc malloc family, answered from axmalloc's own state, so that a
 * static link never needs libc.a(malloc.o) (which would clash with our malloc). */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

#define AX_EXPORT __attribute__((visibility("default")))

AX_EXPORT void free_sized(void *p, size_t size) { ax_free_sized(p, size); }
/* An aligned block comes from a class of at least `align` bytes. */
AX_EXPORT void free_aligned_sized(void *p, size_t align, size_t size) {
  ax_free_sized(p, size > align ? size : align);
}

AX_EXPORT void *valloc(size_t n) { return ax_memalign(axi_os_page, n); }

AX_EXPORT void *pvalloc(size_t n) {
  size_t rounded = (n + axi_os_page - 1) & ~(axi_os_page - 1);
  if (rounded < n) {
    errno = ENOMEM;
    return NULL;
  }
  return ax_memalign(axi_os_page, rounded ? rounded : axi_os_page);
}

/* Purge all that can be purged now: this thread's empty pages, abandoned segments that
 * turn out empty, and both caches. post: 1 when memory went back to the OS. */
int ax_trim(size_t pad) {
  uint64_t before = ax_atomic_load_relaxed(&axi_stats.os_purged) +
                    ax_atomic_load_relaxed(&axi_stats.munmap_calls);
  ax_heap_t *heap = axi_tls_heap;
  if (heap != &axi_heap_empty) {
    for (int i = 0; i < 64 && axi_segment_reclaim(heap); i++)
      ;
    axi_heap_collect_all(heap);
    axi_segment_purge(heap, true);
  }
  axi_segment_cache_trim(true);
  axi_huge_cache_trim(true);
  return ax_atomic_load_relaxed(&axi_stats.os_purged) +
             ax_atomic_load_relaxed(&axi_stats.munmap_calls) != before;
}

AX_EXPORT int malloc_trim(size_t pad) { return ax_trim(pad); }

AX_EXPORT struct mallinfo2 mallinfo2(void) {
  ax_stats_t s;
  ax_stats_get(&s);
  struct mallinfo2 mi = {0};
  mi.arena = s.os_committed;   /* memory taken from the OS and not given back */
  mi.hblks = s.segments_live;  /* mappings */
  mi.hblkhd = s.os_reserved;   /* bytes in mappings */
  mi.usmblks = s.os_committed_peak;
  mi.uordblks = s.os_committed;
  return mi;
}

static int clamp(size_t v) { return v > INT32_MAX ? INT32_MAX : (int)v; }

AX_EXPORT struct mallinfo mallinfo(void) {
  struct mallinfo2 m2 = mallinfo2();
  struct mallinfo mi = {0};
  mi.arena = clamp(m2.arena);
  mi.hblks = clamp(m2.hblks);
  mi.hblkhd = clamp(m2.hblkhd);
  mi.usmblks = clamp(m2.usmblks);
  mi.uordblks = clamp(m2.uordblks);
  return mi;
}

/* glibc's parameters have no meaning here: accept the known ones, refuse the rest. */
AX_EXPORT int mallopt(int param, int value) {
  switch (param) {
  case M_MXFAST: case M_TRIM_THRESHOLD: case M_TOP_PAD: case M_MMAP_THRESHOLD:
  case M_MMAP_MAX: case M_CHECK_ACTION: case M_PERTURB: case M_ARENA_TEST: case M_ARENA_MAX:
    return 1;
  default:
    return 0;
  }
}

AX_EXPORT void malloc_stats(void) { ax_stats_print(); }

AX_EXPORT int malloc_info(int options, FILE *fp) {
  if (options != 0) {
    errno = EINVAL;
    return -1;
  }
  ax_stats_t s;
  ax_stats_get(&s);
  fprintf(fp,
          "<malloc version=\"1\">\n"
          "<total type=\"mmap\" count=\"%llu\" size=\"%llu\"/>\n"
          "<system type=\"current\" size=\"%llu\"/>\n"
          "<system type=\"max\" size=\"%llu\"/>\n"
          "</malloc>\n",
          (unsigned long long)s.segments_live, (unsigned long long)s.os_reserved,
          (unsigned long long)s.os_committed, (unsigned long long)s.os_committed_peak);
  return 0;
}
