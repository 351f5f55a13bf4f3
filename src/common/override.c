/* SPDX-License-Identifier: MIT */
/* The rest of the glibc malloc family, answered from axmalloc's own state, so that a
 * static link never needs libc.a(malloc.o) (which would clash with our malloc).
 *
 * The statistics (mallinfo2, mallinfo, malloc_stats, malloc_info) keep no counter on the
 * fast paths: they add up the state on demand (see "usage" below).
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "heap.h"
#include "modes/check.h"
#include "modes/prof.h"
#include "page.h"
#include "print.h"
#include "segment.h"
#include "state.h"

#define AX_EXPORT __attribute__((visibility("default")))

AX_EXPORT void free_sized(void *p, size_t size) { ax_free_sized(p, size); }
AX_EXPORT void free_aligned_sized(void *p, size_t align, size_t size) {
  (void)align; /* (the block is where it is: its alignment tells nothing more) */
  ax_free_sized(p, size);
}

AX_EXPORT AX_API void *valloc(size_t n) { return ax_memalign(axi_os_page, n); }

AX_EXPORT AX_API void *pvalloc(size_t n) {
  size_t rounded = (n + axi_os_page - 1) & ~(axi_os_page - 1);
  if (rounded < n) {
    errno = ENOMEM;
    return NULL;
  }
  return ax_memalign(axi_os_page, rounded ? rounded : axi_os_page);
}

/* ---- malloc_trim ---------------------------------------------------------------------- */

/* Bytes purged and mappings unmapped so far: a change means memory went back. */
static uint64_t released(void) {
  return ax_atomic_load_relaxed(&axi_stats.os_purged) +
         ax_atomic_load_relaxed(&axi_stats.munmap_calls);
}

/* Purge all that can be purged now (axi_heap_trim). pad is ignored: nothing here grows at
 * a top. post: 1 when memory went back to the OS, 0 otherwise. */
int ax_trim(size_t pad) {
  uint64_t before = released();
  if (axi_checked && axi_tls_heap != &axi_heap_empty)
    axi_check_flush(axi_tls_heap); /* (its quarantine holds pages) */
  axi_heap_trim(axi_tls_heap);
  if (axi_prof_on)
    axi_prof_trim();           /* the profiler's freed slots */
  return released() != before; /* (another thread's munmap may count: a spurious 1) */
}

AX_EXPORT int malloc_trim(size_t pad) { return ax_trim(pad); }

/* ---- usage: the state added up on demand ------------------------------------------------ */

/* What a walk over segments finds. Pages are read whole; a block is free when it is on
 * one of its page's lists or not carved yet (reserved - used), or on thread_free (which
 * `used` still counts until the owner collects it). */
typedef struct usage {
  size_t free_bytes;  /* bytes in free blocks of the in-use pages read */
  size_t free_blocks; /* ...and their number */
  size_t free_pages;  /* free pages of the segments read, and cached mappings seen */
  size_t empty_bytes; /* bytes of in-use pages read that hold no live block (trim retires them) */
  size_t huge_count, huge_bytes; /* live huge blocks and their mappings (whole walks only) */
  size_t class_free[AX_CLASSES]; /* free blocks per size class */
} usage_t;

/* Bytes of page i as in_use counts them: page 0 starts after the segment header. */
static size_t page_bytes(const ax_segment_t *seg, unsigned i) {
  return (uintptr_t)seg + ((uintptr_t)(i + 1) << seg->page_shift) - axi_page_start(seg, i);
}

static void add_segment(usage_t *u, const ax_segment_t *seg) {
  for (unsigned i = 0; i < seg->npages; i++) {
    const ax_page_t *page = &seg->pages[i];
    if (!page->in_use) {
      u->free_pages++;
      continue;
    }
    uint32_t free_n = page->reserved - axi_page_live(page) +
                      axi_tf_len(ax_atomic_load_acquire(&page->thread_free));
    u->free_blocks += free_n;
    u->free_bytes += (size_t)free_n * page->block_size;
    u->class_free[page->cls] += free_n;
    if (free_n == page->reserved)
      u->empty_bytes += page_bytes(seg, i);
  }
}

/* The segment map's OS pages that may hold a set bit: a page never written is not resident
 * (one mincore call instead of reading 8 MiB, which took 1.8 ms per mallinfo2). A page
 * swapped out is skipped too: its segments are then missing from the statistics.
 * post: false when the kernel would not say (then every page is read). */
static bool segmap_resident(unsigned char *vec, uintptr_t lo, uintptr_t hi) {
  int saved = errno;
  bool ok = mincore((void *)lo, hi - lo, vec) == 0;
  errno = saved;
  return ok;
}

static void add_mapping(usage_t *u, const ax_segment_t *seg) {
  if (seg->prof_slots) /* the profiler's sampled blocks: in_use counts them, the rest is free */
    return;
  if (seg->kind == AX_KIND_HUGE && seg->pages[0].in_use) {
    u->huge_count++;
    u->huge_bytes += seg->map_size;
  } else if (seg->kind == AX_KIND_HUGE || seg->used_pages == 0) {
    u->free_pages++; /* a cached mapping */
  } else {
    add_segment(u, seg);
  }
}

/* No other thread exists: nothing can unmap a segment under us, so every live mapping of
 * the segment map is read, huge blocks, caches and abandoned segments included. (A thread
 * made without pthread_create would break this as it breaks the atomics' twins.) */
static void walk_all(usage_t *u) {
  static unsigned char vec[sizeof axi_segmap / 4096 + 2]; /* one thread: no race on it */
  const size_t words = sizeof axi_segmap / sizeof *axi_segmap, w = 8 * sizeof(uintptr_t);
  const uintptr_t pg = (uintptr_t)getpagesize(), base = (uintptr_t)axi_segmap;
  const uintptr_t lo = base & ~(pg - 1);
  bool known = segmap_resident(vec, lo, base + sizeof axi_segmap);
  for (size_t i = 0; i < words; i++) {
    size_t v = (base + i * sizeof *axi_segmap - lo) / pg;
    if (known && !(vec[v] & 1)) { /* skip to the first word of the next OS page */
      i = (lo + (v + 1) * pg - base) / sizeof *axi_segmap - 1;
      continue;
    }
    for (uintptr_t m = ax_atomic_load_relaxed(&axi_segmap[i]); m; m &= m - 1)
      add_mapping(u,
                  (const ax_segment_t *)((i * w + (size_t)__builtin_ctzl(m)) << AX_SEGMENT_SHIFT));
  }
}

/* Other threads exist: any of them may unmap a segment it does not own at any moment (a
 * huge free, a cache trim), so only the calling thread's own segments are read; their
 * owner is the only thread that retires their pages. */
static void walk_own(usage_t *u) {
  ax_heap_t *heap = axi_tls_heap;
  if (heap == &axi_heap_empty)
    return;
  for (unsigned k = 0; k < AX_KIND_HUGE; k++)
    for (const ax_segment_t *seg = heap->segs[k].first; seg; seg = seg->next)
      add_segment(u, seg);
  for (const ax_segment_t *seg = heap->segs_full.first; seg; seg = seg->next)
    add_segment(u, seg);
}

static void usage_get(usage_t *u) {
  memset(u, 0, sizeof *u);
  if (axi_checked && axi_tls_heap != &axi_heap_empty) /* the blocks checked mode holds back */
    axi_check_flush(axi_tls_heap);                    /* count as free too: they go back */
  if (axi_tls_heap != &axi_heap_empty) /* blocks other threads sent us count as free */
    axi_page_drain(axi_tls_heap, false);
  if (AXI_LIBC_SINGLE_THREADED())
    walk_all(u);
  else
    walk_own(u);
}

/* ---- mallinfo2, mallinfo ---------------------------------------------------------------- */

static size_t sub0(size_t a, size_t b) { return a > b ? a - b : 0; }

/* glibc's fields from our state. Counters: C = os_committed (mapped and not purged),
 * U = in_use (bytes of pages holding blocks, and of live huge mappings).
 *   arena     C - hblkhd: memory taken from the OS for segments and cached mappings
 *   ordblks   free blocks + free pages + cached mappings seen
 *   smblks, fsmblks, usmblks  0 (no fastbins; glibc also reports usmblks = 0)
 *   hblks     live huge blocks (> 1 MiB, one mapping each)
 *   hblkhd    bytes of their mappings
 *   uordblks  arena - fordblks: live blocks, the unused tails of pages and segment headers
 *   fordblks  free blocks in the in-use pages read + (C - U): free pages not purged yet,
 *             cached mappings
 *   keepcost  (C - U) + empty pages read: what malloc_trim could give back (upper bound)
 * Invariant: uordblks + fordblks == arena.
 * Exact in a single-threaded process (the whole segment map is read). With other threads
 * only the caller's pages are read block by block; other threads' pages count as wholly
 * in use (page granularity: 64 KiB, 512 KiB or 4 MiB), and live huge blocks cannot be
 * told from pages (reading other threads' mappings could touch one being unmapped), so
 * they count in arena and uordblks and hblks = hblkhd = 0. Counters are read racily. */
static struct mallinfo2 info_from(const usage_t *u, size_t *reserved, size_t *committed_peak) {
  size_t committed = ax_atomic_load_relaxed(&axi_stats.os_committed);
  size_t in_use = ax_atomic_load_relaxed(&axi_stats.in_use);
  if (reserved)
    *reserved = sub0(ax_atomic_load_relaxed(&axi_stats.os_reserved), u->huge_bytes);
  if (committed_peak)
    *committed_peak = ax_atomic_load_relaxed(&axi_stats.os_committed_peak);
  struct mallinfo2 mi = {0};
  mi.hblks = u->huge_count;
  mi.hblkhd = u->huge_bytes;
  mi.arena = sub0(committed, u->huge_bytes);
  size_t outside = sub0(committed, in_use);
  mi.fordblks = u->free_bytes + outside;
  if (mi.fordblks > mi.arena) /* racy counters */
    mi.fordblks = mi.arena;
  mi.uordblks = mi.arena - mi.fordblks;
  mi.ordblks = u->free_blocks + u->free_pages;
  mi.keepcost = outside + u->empty_bytes;
  if (mi.keepcost > mi.fordblks)
    mi.keepcost = mi.fordblks;
  return mi;
}

AX_EXPORT struct mallinfo2 mallinfo2(void) {
  usage_t u;
  usage_get(&u);
  return info_from(&u, NULL, NULL);
}

/* glibc converts to int with wrap-around; saturating is kinder to a caller that compares. */
static int clamp(size_t v) { return v > INT32_MAX ? INT32_MAX : (int)v; }

AX_EXPORT struct mallinfo mallinfo(void) {
  struct mallinfo2 m2 = mallinfo2();
  struct mallinfo mi;
  mi.arena = clamp(m2.arena);
  mi.ordblks = clamp(m2.ordblks);
  mi.smblks = clamp(m2.smblks);
  mi.hblks = clamp(m2.hblks);
  mi.hblkhd = clamp(m2.hblkhd);
  mi.usmblks = clamp(m2.usmblks);
  mi.fsmblks = clamp(m2.fsmblks);
  mi.uordblks = clamp(m2.uordblks);
  mi.fordblks = clamp(m2.fordblks);
  mi.keepcost = clamp(m2.keepcost);
  return mi;
}

/* ---- mallopt ---------------------------------------------------------------------------- */

/* glibc 2.36's answers, and what they mean here:
 *   param             glibc 2.36                     here
 *   M_MXFAST          1 if 0 <= value <= 160, else 0  same answer; no effect (no fastbins)
 *   M_TRIM_THRESHOLD  1                               1; no effect: free pages are purged
 *                                                     AXMALLOC_PURGE_DELAY_MS after use
 *   M_TOP_PAD         1                               1; no effect: segments are 4 MiB
 *   M_MMAP_THRESHOLD  1 (any value)                   1; no effect: > 1 MiB is always mapped
 *   M_MMAP_MAX        1                               1; no effect: all memory is mmapped
 *   M_CHECK_ACTION    1 (ignored since 2.34)          1; bad frees always abort
 *   M_PERTURB         1, fills blocks with the byte   1 for 0 (off, as always here); 0 for
 *                                                     other values: filling costs the fast path
 *   M_ARENA_TEST/MAX  1                               1; no effect: one heap per thread
 *   anything else     1 (man page: a bug)             0 */
AX_EXPORT int mallopt(int param, int value) {
  switch (param) {
  case M_MXFAST:
    return value >= 0 && value <= 80 * (int)sizeof(size_t) / 4;
  case M_PERTURB:
    return value == 0;
  case M_TRIM_THRESHOLD:
  case M_TOP_PAD:
  case M_MMAP_THRESHOLD:
  case M_MMAP_MAX:
  case M_CHECK_ACTION:
  case M_ARENA_TEST:
  case M_ARENA_MAX:
    return 1;
  default:
    return 0;
  }
}

/* ---- malloc_stats ----------------------------------------------------------------------- */

/* v right-aligned in 10 columns (glibc's %10u), without stdio. */
static const char *col10(char buf[24], uint64_t v) {
  char *o = buf + 23;
  *o = 0;
  do
    *--o = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  while (o > buf + 13)
    *--o = ' ';
  return o;
}

/* glibc's report, from mallinfo2's numbers, on stderr, without stdio or allocation. One
 * "arena" for the whole process. glibc prints 32-bit values; these are not truncated.
 * We keep no peak of huge mappings: "max mmap" shows the current ones (a lower bound).
 * ax_stats_print (and AXMALLOC_STATS=1) gives axmalloc's own report. */
AX_EXPORT void malloc_stats(void) {
  struct mallinfo2 mi = mallinfo2();
  char a[24], b[24], c[24], d[24], e[24], f[24];
  axi_write("Arena 0:\n"
            "system bytes     = %s\n"
            "in use bytes     = %s\n"
            "Total (incl. mmap):\n"
            "system bytes     = %s\n"
            "in use bytes     = %s\n"
            "max mmap regions = %s\n"
            "max mmap bytes   = %s\n",
            col10(a, mi.arena), col10(b, mi.uordblks), col10(c, mi.arena + mi.hblkhd),
            col10(d, mi.uordblks + mi.hblkhd), col10(e, mi.hblks), col10(f, mi.hblkhd));
}

/* ---- malloc_info ------------------------------------------------------------------------ */

/* glibc 2.36's XML shape with one heap for the process. <sizes> lists the free blocks of
 * each size class (from the size after the previous class to the class size); the "rest"
 * totals are fordblks with the free pages and cached mappings as chunks; "fast" is empty;
 * "mmap" are the live huge blocks; system = arena and peak committed bytes; aspace = address
 * space of segments and cached mappings (total) and arena (mprotect, as glibc's main arena).
 * post: 0; -1 with errno EINVAL for options != 0 (glibc returns EINVAL instead). */
AX_EXPORT int malloc_info(int options, FILE *fp) {
  if (options != 0) {
    errno = EINVAL;
    return -1;
  }
  usage_t u; /* read before any output: fprintf may allocate */
  usage_get(&u);
  size_t aspace, peak;
  struct mallinfo2 mi = info_from(&u, &aspace, &peak);
  fputs("<malloc version=\"1\">\n<heap nr=\"0\">\n<sizes>\n", fp);
  for (unsigned c = 1; c < AX_CLASSES; c++)
    if (u.class_free[c])
      fprintf(fp, "  <size from=\"%zu\" to=\"%zu\" total=\"%zu\" count=\"%zu\"/>\n",
              c == 1 ? (size_t)1 : axi_class_size(c - 1) + 1, axi_class_size(c),
              u.class_free[c] * axi_class_size(c), u.class_free[c]);
  fprintf(fp,
          "</sizes>\n<total type=\"fast\" count=\"0\" size=\"0\"/>\n"
          "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n"
          "<system type=\"current\" size=\"%zu\"/>\n"
          "<system type=\"max\" size=\"%zu\"/>\n"
          "<aspace type=\"total\" size=\"%zu\"/>\n"
          "<aspace type=\"mprotect\" size=\"%zu\"/>\n"
          "</heap>\n",
          mi.ordblks, mi.fordblks, mi.arena, peak, aspace, mi.arena);
  fprintf(fp,
          "<total type=\"fast\" count=\"0\" size=\"0\"/>\n"
          "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n"
          "<total type=\"mmap\" count=\"%d\" size=\"%zu\"/>\n"
          "<system type=\"current\" size=\"%zu\"/>\n"
          "<system type=\"max\" size=\"%zu\"/>\n"
          "<aspace type=\"total\" size=\"%zu\"/>\n"
          "<aspace type=\"mprotect\" size=\"%zu\"/>\n"
          "</malloc>\n",
          mi.ordblks, mi.fordblks, clamp(mi.hblks), mi.hblkhd, mi.arena, peak, aspace, mi.arena);
  return 0;
}
