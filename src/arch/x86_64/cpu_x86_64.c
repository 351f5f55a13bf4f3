/* SPDX-License-Identifier: MIT */
/* x86-64 CPU detection: the one decoder of CPUID and XGETBV (arch_cpu.h), with the
 * OSXSAVE/XGETBV check before trusting AVX, and the description built from what it found. */
#include <cpuid.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "arch.h"
#include "arch_cpu.h"

/* ---- the decoder ------------------------------------------------------------------- */

/* Size of the data/unified cache of `level` from a CPUID leaf in the format of leaf 4
 * (Intel "deterministic cache parameters"; AMD has the same at 0x8000001D). 0: none. */
static size_t cache_size(unsigned leaf, unsigned level) {
  for (unsigned i = 0; i < 16; i++) {
    unsigned a, b, c, d;
    __cpuid_count(leaf, i, a, b, c, d);
    unsigned type = a & 31; /* 0 none (end), 1 data, 2 instruction, 3 unified */
    if (type == 0)
      break;
    if (type == 2 || ((a >> 5) & 7) != level)
      continue;
    size_t ways = (b >> 22) + 1, parts = ((b >> 12) & 0x3ff) + 1, line = (b & 0xfff) + 1;
    return ways * parts * line * ((size_t)c + 1);
  }
  return 0;
}

static void decode(ax_arch_cpu_t *f) {
  unsigned a, b, c, d, max_leaf, max_ext;
  char vendor[13];
  __cpuid(0, max_leaf, b, c, d);
  memcpy(vendor, &b, 4);
  memcpy(vendor + 4, &d, 4);
  memcpy(vendor + 8, &c, 4);
  vendor[12] = 0;
  int amd = memcmp(vendor, "AuthenticAMD", 12) == 0 || memcmp(vendor, "HygonGenuine", 12) == 0;
  __cpuid(0x80000000, max_ext, b, c, d);

  __cpuid(1, a, b, c, d);
  unsigned family = (a >> 8) & 0xf;
  if (family == 0xf)
    family += (a >> 20) & 0xff;
  int zen3_4 = amd && family == 0x19;
  int os_avx = 0, os_avx512 = 0;
  if ((c >> 27) & 1) { /* OSXSAVE: XGETBV is allowed and tells which states the OS saves */
    unsigned lo, hi;
    /* XGETBV reads XCR[ECX] into EDX:EAX; no memory, no flags */
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    os_avx = (lo & 0x6) == 0x6;                /* XMM and YMM state */
    os_avx512 = os_avx && (lo & 0xe0) == 0xe0; /* opmask, ZMM_Hi256, Hi16_ZMM */
  }
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    f->avx2 = os_avx && ((b >> 5) & 1);
    f->avx512 = os_avx512 && ((b >> 16) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1);
    f->erms = (b >> 9) & 1;
    f->fsrm = (d >> 4) & 1;
  }
  f->zen4 = zen3_4 && f->avx512; /* Zen 3 is family 0x19 too, without AVX-512 */

  if (amd && max_ext >= 0x8000001D) {
    __cpuid(0x80000001, a, b, c, d);
    if ((c >> 22) & 1) { /* TOPOEXT: leaf 0x8000001D is there */
      f->l2 = cache_size(0x8000001D, 2);
      f->l3 = cache_size(0x8000001D, 3);
    }
  } else if (!amd && max_leaf >= 4) {
    f->l2 = cache_size(4, 2);
    f->l3 = cache_size(4, 3);
  }
  if (amd && !f->l2 && max_ext >= 0x80000006) { /* older AMD: L2 KiB, L3 in 512 KiB units */
    __cpuid(0x80000006, a, b, c, d);
    f->l2 = (size_t)(c >> 16) << 10;
    f->l3 = (size_t)(d >> 18) << 19;
  }
}

#include "../generic/cpu_once.h"

/* ---- the description --------------------------------------------------------------- */

static char features[96] = "baseline";

static void add(char **at, const char *end, const char *name) {
  if (*at != features)
    *(*at)++ = ' ';
  while (*name && *at < end - 1)
    *(*at)++ = *name++;
  **at = 0;
}

void ax_arch_cpu_detect(void) {
  const ax_arch_cpu_t *c = ax_arch_cpu();
  char *at = features, *end = features + sizeof features;
  add(&at, end, "sse2");
#define AX_CPU_ADD(f)                                                                              \
  if (c->f)                                                                                        \
    add(&at, end, #f);
  AX_ARCH_CPU_FEATURES(AX_CPU_ADD)
#undef AX_CPU_ADD
}

const char *ax_arch_cpu_features(void) { return features; }
