/* x86-64 CPU detection: CPUID, with the OSXSAVE/XGETBV check before trusting AVX. */
#include <cpuid.h>
#include <stdint.h>

#include "arch.h"

static char features[96] = "baseline";

static void add(char **at, const char *end, const char *name) {
  if (*at != features)
    *(*at)++ = ' ';
  while (*name && *at < end - 1)
    *(*at)++ = *name++;
  **at = 0;
}

void ax_arch_cpu_detect(void) {
  unsigned a, b, c, d;
  char *at = features, *end = features + sizeof features;
  add(&at, end, "sse2");
  if (!__get_cpuid(1, &a, &b, &c, &d))
    return;
  int osxsave = (c >> 27) & 1, os_avx = 0, os_avx512 = 0;
  if (osxsave) {
    unsigned lo, hi;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0)); /* XCR0: which states the OS saves */
    os_avx = (lo & 0x6) == 0x6;                      /* SSE and AVX state */
    os_avx512 = os_avx && (lo & 0xe0) == 0xe0;       /* opmask, ZMM_Hi256, Hi16_ZMM */
  }
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    if (os_avx && (b & (1u << 5)))
      add(&at, end, "avx2");
    if (os_avx512 && (b & (1u << 16)) && (b & (1u << 30)) && (b & (1u << 31)))
      add(&at, end, "avx512");
    if (b & (1u << 9))
      add(&at, end, "erms");
    if (d & (1u << 4))
      add(&at, end, "fsrm");
  }
}

const char *ax_arch_cpu_features(void) { return features; }
