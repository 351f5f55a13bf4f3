/* SPDX-License-Identifier: MIT */
/* oom_limit.h: an address-space limit for the out-of-memory tests (t_oom, t_oom_cxx).
 *
 * oom_limit_setup(headroom) adopts an RLIMIT_AS already in force (`ulimit -v` around the
 * program, or around qemu-user: qemu ignores a guest's setrlimit of RLIMIT_AS, which would
 * limit qemu itself) or sets one at the current size + headroom, then proves the kernel
 * enforces it. oom_avail is what was left below the limit at that moment.
 * Include after testutil.h or sys_check.h (CHECK, CHECKF).
 */
#ifndef AX_OOM_LIMIT_H
#define AX_OOM_LIMIT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)
#define OOM_SKIP 77 /* ctest SKIP_RETURN_CODE */

static size_t oom_avail;

/* Percent of the first fill that must succeed again after freeing: 100 natively. Under
 * qemu-user the limit also covers qemu's own memory, which grows with the guest's mappings
 * (its page bookkeeping, translated code), so the same allocations may not all fit twice:
 * AX_OOM_RECOVERY_PCT=90 there (tests/stress.cmake). */
static inline size_t oom_recovery(size_t first) {
  const char *s = getenv("AX_OOM_RECOVERY_PCT");
  unsigned long pct = s && *s ? strtoul(s, NULL, 10) : 100;
  if (pct == 0 || pct > 100)
    pct = 100;
  return first / 100 * pct + first % 100 * pct / 100;
}

/* The process's mapped size (first field of /proc/self/statm), 0 if unreadable. */
static inline size_t oom_vm_size(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (f) {
    if (fscanf(f, "%lu", &pages) != 1)
      pages = 0;
    fclose(f);
  }
  return pages * (size_t)sysconf(_SC_PAGESIZE);
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
