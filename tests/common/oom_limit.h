/* SPDX-License-Identifier: MIT */
/* oom_limit.h: an address-space limit for the out-of-memory tests (t_oom, t_oom_cxx).
 *
 * oom_limit_setup(headroom) adopts an RLIMIT_AS already in force (`ulimit -v` around the
 * program, or around qemu-user: qemu ignores a guest's setrlimit of RLIMIT_AS, which would
 * limit qemu itself) or sets one at the current size + headroom, then proves the kernel
 * enforces it. oom_avail is what was left below the limit at that moment.
 * oom_outside() and oom_recovery_after() let a recovery check allow for the page map's
 * tables (below).
 * Include after testutil.h or sys_check.h (CHECK, CHECKF).
 */
#ifndef AX_OOM_LIMIT_H
#define AX_OOM_LIMIT_H

#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <axmalloc.h>

#define MiB ((size_t)1 << 20)
#define OOM_SKIP 77 /* ctest SKIP_RETURN_CODE */

static size_t oom_avail;

/* Percent of the first fill that must succeed again after freeing: 100 natively. Under
 * qemu-user the limit also covers qemu's own memory, which grows with the guest's mappings
 * (its page bookkeeping, translated code), so the same allocations may not all fit twice:
 * AX_OOM_RECOVERY_PCT=90 there (tests/concurrency/concurrency.cmake). */
static inline size_t oom_recovery(size_t first) {
  const char *s = getenv("AX_OOM_RECOVERY_PCT");
  unsigned long pct = s && *s ? strtoul(s, NULL, 10) : 100;
  if (pct == 0 || pct > 100)
    pct = 100;
  return first / 100 * pct + first % 100 * pct / 100;
}

/* The process's mapped size (first field of /proc/self/statm), 0 if unreadable. Without
 * stdio: it runs while memory is exhausted, where fopen's malloc may fail. */
static inline size_t oom_vm_size(void) {
  char buf[64];
  int fd = open("/proc/self/statm", O_RDONLY);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0)
    close(fd);
  size_t pages = 0;
  for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
    pages = pages * 10 + (size_t)(buf[i] - '0');
  return pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* ---- the page map's tables ----------------------------------------------------------------
 * axmalloc maps a second-level table of its page map, 8 MiB, for each 64 GiB region of address
 * space where it first maps a segment of small, medium or large blocks, and never unmaps it
 * (src/common/pagemap.c). Under ASLR the test's mappings sometimes sit across such a boundary
 * (t_oom_cxx: 2 runs in about 630 here), and the first segment below it may come after a fill:
 * the table then takes 8 MiB of what the fill had (t_oom_cxx: 121 blocks of 2 MiB after
 * freeing, 125 the first time; seen in a CI run), or it came with the fill's last segment,
 * after that segment's reservation had given back its alignment slack, which the recovery's
 * last segment must find beside the table (t_oom.limit: one segment short). A test's own
 * mappings never span 64 GiB: at most one table is mapped after the limit is set. */
#define OOM_PAGEMAP_TABLE ((size_t)8 << 20)
#define OOM_SEGMENT_GUARD ((size_t)1 << 20) /* below each such segment (segment.c) */

/* Address space that neither axmalloc's mappings (ax_stats os_reserved) nor its segments'
 * guards account for: the program's own, the heap pool's and the page map's tables. Exact in a
 * single-threaded process right after a refused allocation (which released both caches), or
 * before any huge block was freed: no huge mapping is cached then, so the live huge blocks
 * (mallinfo2's hblks) are all the segments without a guard. Allocation-free. */
static inline size_t oom_outside(void) {
  ax_stats_t s;
  ax_stats_get(&s);
  struct mallinfo2 mi = mallinfo2();
  size_t guarded = s.segments_live > mi.hblks ? (size_t)(s.segments_live - mi.hblks) : 0;
  size_t vm = oom_vm_size(), counted = (size_t)s.os_reserved + guarded * OOM_SEGMENT_GUARD;
  return vm > counted ? vm - counted : 0;
}

/* The recovery a fill of `first` blocks must reach, `before` being oom_outside() before the
 * fill and `now` after the recovery's refusal: oom_recovery(first) as a rule; less the blocks
 * that 16 MiB held in the fill once the page map has gained a table since (the table, and the
 * slack of one mapping: a 4 MiB segment with its guard, up to a huge block of 8 MiB), at the
 * fill's density (first blocks in oom_avail, which the fill took all but a mapping of). */
static inline size_t oom_recovery_after(size_t first, size_t before, size_t now) {
  size_t want = oom_recovery(first);
  if (now < before + OOM_PAGEMAP_TABLE || !oom_avail)
    return want;
  size_t less = (first * (2 * OOM_PAGEMAP_TABLE) + oom_avail - 1) / oom_avail;
  return want > less ? want - less : 0;
}

/* post: the limit in bytes, with oom_avail set; or 0 when no limit can be enforced here
 * (the reason is printed: the caller should exit OOM_SKIP). */
static inline size_t oom_limit_setup(size_t headroom) {
  struct rlimit rl;
  CHECK(getrlimit(RLIMIT_AS, &rl) == 0);
  if (rl.rlim_cur == RLIM_INFINITY) {
    size_t want = oom_vm_size() + headroom;
    rl.rlim_cur = want;
    CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
    CHECK(getrlimit(RLIMIT_AS, &rl) == 0);
    if (rl.rlim_cur != want) {
      printf("SKIP: setrlimit(RLIMIT_AS) did not take (getrlimit says %llu): qemu-user ignores "
             "it; run the program (or qemu) under `ulimit -v`\n",
             (unsigned long long)rl.rlim_cur);
      return 0;
    }
  } else {
    printf("using the RLIMIT_AS in force\n");
  }
  /* An enforced limit refuses a mapping of its own size. */
  void *probe =
      mmap(NULL, rl.rlim_cur, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (probe != MAP_FAILED) {
    munmap(probe, rl.rlim_cur);
    printf("SKIP: RLIMIT_AS of %llu MiB is not enforced (qemu-user?)\n",
           (unsigned long long)(rl.rlim_cur >> 20));
    return 0;
  }
  size_t used = oom_vm_size();
  oom_avail = rl.rlim_cur > used ? rl.rlim_cur - used : 0;
  printf("RLIMIT_AS %zu MiB, %zu MiB of it free\n", (size_t)(rl.rlim_cur >> 20), oom_avail >> 20);
  CHECKF(oom_avail >= 64 * MiB, "less than 64 MiB below the limit: nothing to test");
  return (size_t)rl.rlim_cur;
}

#endif
