/* SPDX-License-Identifier: MIT */
/* t_thp: transparent huge pages (AXMALLOC_THP, thp.c) follow the rule and the kernel.
 *
 *   t_thp OPTION KERNEL SIZE [purge] [smaps]
 *
 * OPTION is what ax_thp_info() must say (auto, never, always; env: AXMALLOC_THP's); KERNEL the
 * kernel's mode it must report (always, madvise, never, absent) and SIZE its huge page size, or
 * both "real": read from /sys/kernel/mm/transparent_hugepage here (ctest points AXMALLOC_THP_SYSFS
 * at the fake directories of tests/platform/thp/ for the other kernels: 2, 32 and 512 MiB huge
 * pages, never, absent, a size that is no power of two). Then, by the rule:
 *   - a huge block's mapping is advised (MADV_HUGEPAGE) under large and always, when the kernel
 *     has huge pages, and nowhere else; under auto, when the probes found huge pages cheaper
 *     than OS pages (thp.choice "huge": thp.cost_huge below seven eighths of thp.cost_small):
 *     the 8 MiB block is probed inside where huge pages are 2 MiB and the kernel's mode is
 *     `madvise` (nowhere else: "unknown", no advice), and the probes' times are
 *     real unless AXMALLOC_THP_PROBE gives them (a test hook); a block of at least one huge
 *     page bigger than a segment starts in a mapping aligned to it; the advised bytes follow
 *     realloc and free;
 *   - segments of small and medium blocks are advised only under always, and declined
 *     (MADV_NOHUGEPAGE) where the kernel's mode is `always` under auto and never;
 *   - purge: under always, a trim purges whole huge pages of a segment only (the profiler's
 *     slot segments, never advised, purge their 64 KiB slots);
 *   - smaps (native, the real kernel): the advice shows in the mapping's VmFlags (hg / nh).
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define MIB ((size_t)1 << 20)
#define SEGMENT (4 * MIB)

static const char *expect_kernel;
static size_t expect_size;

/* The bracketed word of the real kernel's mode and its huge page size, as thp.c must read them. */
static void read_real(void) {
  static char mode[32];
  expect_kernel = "absent";
  expect_size = 0;
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  char line[128] = "";
  if (!f)
    return;
  if (!fgets(line, sizeof line, f))
    line[0] = 0;
  fclose(f);
  char *b = strchr(line, '['), *e = b ? strchr(b, ']') : NULL;
  if (!b || !e || e - b - 1 >= (long)sizeof mode)
    return;
  memcpy(mode, b + 1, (size_t)(e - b - 1));
  mode[e - b - 1] = 0;
  expect_kernel = mode;
  f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "r");
  unsigned long long n = 0;
  if (f) {
    if (fscanf(f, "%llu", &n) != 1)
      n = 0;
    fclose(f);
  }
  expect_size = strcmp(mode, "never") ? (size_t)n : 0;
  if (!expect_size && strcmp(mode, "never"))
    expect_kernel = "absent";
}

/* The VmFlags of the mapping holding p (/proc/self/smaps), or "" when not found. */
static const char *vmflags(const void *p) {
  static char flags[256];
  flags[0] = 0;
  FILE *f = fopen("/proc/self/smaps", "r");
  CHECK(f != NULL);
  char line[512];
  int inside = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
      inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
    else if (inside && !strncmp(line, "VmFlags:", 8)) {
      snprintf(flags, sizeof flags, "%s", line + 8);
      break;
    }
  }
  fclose(f);
  return flags;
}

static int has_flag(const char *flags, const char *flag) {
  size_t n = strlen(flag);
  for (const char *s = flags; (s = strstr(s, flag)); s += n)
    if ((s == flags || s[-1] == ' ') && (s[n] == ' ' || s[n] == '\n' || !s[n]))
      return 1;
  return 0;
}

static const char *ctl_str(const char *name) {
  const char *v = NULL;
  size_t len = sizeof v;
  CHECKF(ax_ctl(name, &v, &len, NULL, 0) == 0 && v, "ax_ctl(%s)", name);
  return v;
}

static ax_thp_info_t st(void) {
  ax_thp_info_t s;
  ax_thp_info(&s);
  return s;
}

int main(int argc, char **argv) {
  CHECKF(argc >= 4, "usage: t_thp OPTION KERNEL SIZE [purge] [smaps]");
  check_axmalloc_active();
  const char *option = argv[1];
  if (!strcmp(option, "env"))
    option = getenv("AXMALLOC_THP") && *getenv("AXMALLOC_THP") ? getenv("AXMALLOC_THP") : "auto";
  if (!strcmp(argv[2], "real")) {
    read_real();
  } else {
    expect_kernel = argv[2];
    expect_size = (size_t)strtoull(argv[3], NULL, 0);
  }
  int purge = 0, smaps = 0;
  for (int i = 4; i < argc; i++) {
    purge |= !strcmp(argv[i], "purge");
    smaps |= !strcmp(argv[i], "smaps");
  }
  ax_info_t info;
  ax_info(&info);
  ax_thp_info_t thp = st();
  CHECKF(!strcmp(thp.option, option), "option %s, expected %s", thp.option, option);
  CHECKF(!strcmp(thp.kernel, expect_kernel), "kernel %s, expected %s", thp.kernel, expect_kernel);
  CHECKF(thp.page_size == expect_size, "huge page %zu, expected %zu", thp.page_size, expect_size);

  int is_auto = !strcmp(option, "auto");
  int huge_on = expect_size && strcmp(option, "never") && !is_auto; /* auto's: after a probe */
  int segs_on = expect_size && !strcmp(option, "always");
  int segs_off = expect_size && strcmp(option, "always") && !strcmp(expect_kernel, "always");
  /* with the profiler sampling, sampled blocks live in its slot segments, which are never
   * advised whatever the option (their 64 KiB slots are purged one by one) and are declined
   * where the kernel's mode is `always` */
  int sampled = info.prof_sample != 0;

  /* small blocks: their segment was mapped by check_axmalloc_active */
  ax_thp_info_t s0 = st();
  CHECKF(segs_on ? s0.advised >= SEGMENT : s0.advised == 0,
         "advised %llu B after small blocks only", (unsigned long long)s0.advised);
  CHECKF(segs_off ? s0.declined >= SEGMENT : s0.declined == 0 || sampled, "declined %llu B",
         (unsigned long long)s0.declined);

  /* a huge block of 8 MiB (and one of at least a huge page when those are bigger) */
  size_t big = expect_size > SEGMENT ? expect_size + MIB : 8 * MIB;
  char *p = malloc(big);
  CHECK(p != NULL);
  ax_thp_info_t s1 = st();
  uint64_t grew = s1.advised - s0.advised;
  if (is_auto && expect_size) { /* what the probes found decides, and must follow their costs */
    const char *choice = ctl_str("thp.choice");
    uint64_t h = ctl_u64("thp.cost_huge"), c = ctl_u64("thp.cost_small"), n = ctl_u64("thp.probes");
    printf("t_thp: auto chose %s: huge pages %llu ns/MiB, OS pages %llu ns/MiB, %llu probes\n",
           choice, (unsigned long long)h, (unsigned long long)c, (unsigned long long)n);
    if (expect_size <= SEGMENT && !strcmp(expect_kernel, "madvise")) { /* probed inside it */
      CHECKF(n >= 1 && h > 0 && c > 0, "no probe: %llu probes", (unsigned long long)n);
      CHECKF(!strcmp(choice, h * 8 < c * 7 ? "huge" : "small"), "chose %s at %llu and %llu", choice,
             (unsigned long long)h, (unsigned long long)c);
    } else { /* 32 and 512 MiB huge pages, or the kernel's `always`: never probed */
      CHECKF(n == 0 && !strcmp(choice, "unknown"), "%llu probes, chose %s", (unsigned long long)n,
             choice);
    }
    const char *forced = getenv("AXMALLOC_THP_PROBE");
    if (forced && *forced) { /* the hook's costs are what the probes report */
      char want[64];
      snprintf(want, sizeof want, "%llu,%llu", (unsigned long long)h, (unsigned long long)c);
      CHECKF(!strcmp(forced, want), "probes reported %s, the hook said %s", want, forced);
    }
    huge_on = !strcmp(choice, "huge");
  }
  CHECKF(huge_on ? grew >= big && grew < big + 2 * SEGMENT : grew == 0,
         "a huge block of %zu B: advised %llu B more", big, (unsigned long long)grew);
  if (huge_on && expect_size > SEGMENT)
    CHECKF(((uintptr_t)p & ~(uintptr_t)(SEGMENT - 1)) % expect_size == 0,
           "block %p: its mapping is not aligned to the %zu B huge page", (void *)p, expect_size);
  if (huge_on && expect_size <= SEGMENT) { /* (touched: at most a huge page more resident) */
    memset(p, 1, big);
    /* grows by mremap: the advice and its count go along */
    p = realloc(p, 3 * big);
    CHECK(p != NULL && p[big - 1] == 1);
    memset(p + big, 2, 2 * big);
    ax_thp_info_t s2 = st();
    CHECKF(s2.advised - s0.advised >= 3 * big, "after realloc to %zu B: advised %llu B", 3 * big,
           (unsigned long long)(s2.advised - s0.advised));
    if (smaps)
      CHECKF(has_flag(vmflags(p + 2 * big), "hg"), "grown block %p: VmFlags%s", (void *)p,
             vmflags(p + 2 * big));
  }
  if (smaps) {
    const char *f = vmflags(p);
    CHECKF(huge_on ? has_flag(f, "hg") : !has_flag(f, "hg"), "huge block %p: VmFlags%s", (void *)p,
           f);
    if (segs_off) {
      void *q = malloc(64);
      CHECKF(has_flag(vmflags(q), "nh"), "small block %p: VmFlags%s", q, vmflags(q));
      free(q);
    }
  }
  free(p);
  malloc_trim(0); /* the mapping cache emptied: its advised bytes leave with it */
  ax_thp_info_t s3 = st();
  /* (under always, the trim may unmap the small blocks' segment too) */
  CHECKF(segs_on ? s3.advised <= s0.advised : s3.advised == 0,
         "after free and trim: advised %llu B, was %llu", (unsigned long long)s3.advised,
         (unsigned long long)s0.advised);
  CHECK(s3.advised_total >= s3.advised && s3.advised_peak >= s1.advised);

  if (purge) {
    /* 64 KiB blocks, one kept in 64: their segments stay, and a trim purges their empty
     * pages, in whole huge pages where segments are advised, else in OS pages */
    enum { N = 640 };
    static void *blocks[N];
    uint64_t purged = trim_scattered(blocks, N);
    size_t unit = segs_on && !sampled ? expect_size : info.page_size;
    CHECKF(segs_on && !sampled && expect_size > SEGMENT ? purged == 0
                                                        : purged > 0 && purged % unit == 0,
           "purged %llu B, not whole %zu B pages", (unsigned long long)purged, unit);
    for (int i = 0; i < N; i++) /* the memory comes back zeroed and usable */
      if (i % 64 != 0) {
        unsigned char *z = calloc(1, 64 << 10);
        CHECK(z != NULL);
        for (size_t j = 0; j < (64 << 10); j += 997)
          CHECK(z[j] == 0);
        blocks[i] = z;
      }
    for (int i = 0; i < N; i++)
      free(blocks[i]);
  }
  printf("t_thp %s %s %zu: OK\n", option, expect_kernel, expect_size);
  return 0;
}
