/* x86-64: the CPU features the bulk kernels need, and the measured dispatch plan.
 * Detection here is the bulk kernels' own (cpu_x86_64.c only builds a description). */
#include <cpuid.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arch_bulk.h"

ax_arch_bulk_cpu_t ax_arch_bulk_cpu; /* all zero: only the baseline until detection */

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

void ax_arch_bulk_detect(void) {
  ax_arch_bulk_cpu_t f = {0};
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
    f.avx2 = os_avx && ((b >> 5) & 1);
    f.avx512 = os_avx512 && ((b >> 16) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1);
    f.erms = (b >> 9) & 1;
    f.fsrm = (d >> 4) & 1;
  }
  f.zen4 = zen3_4 && f.avx512; /* Zen 3 is family 0x19 too, without AVX-512 */

  if (amd && max_ext >= 0x8000001D) {
    __cpuid(0x80000001, a, b, c, d);
    if ((c >> 22) & 1) { /* TOPOEXT: leaf 0x8000001D is there */
      f.l2 = cache_size(0x8000001D, 2);
      f.l3 = cache_size(0x8000001D, 3);
    }
  } else if (!amd && max_leaf >= 4) {
    f.l2 = cache_size(4, 2);
    f.l3 = cache_size(4, 3);
  }
  if (amd && !f.l2 && max_ext >= 0x80000006) { /* older AMD: L2 KiB, L3 in 512 KiB units */
    __cpuid(0x80000006, a, b, c, d);
    f.l2 = (size_t)(c >> 16) << 10;
    f.l3 = (size_t)(d >> 18) << 19;
  }
  ax_arch_bulk_cpu = f;
}

/* ---- the dispatch plan: from bench/bm_bulk, tables in docs/bulk.md ------------------- */

/* Measured on Zen 4 (EPYC 9xx4, family 0x19 model 0x11) against Debian 12's glibc 2.36
 * (__memset/__memmove_evex_unaligned_erms; its non-temporal threshold there is 240 MiB and
 * its memset never streams). Every range below beat glibc in every run, by the margins
 * given; everywhere else glibc was as fast or faster, so it keeps those sizes. Other CPUs
 * were not measured: they keep glibc everywhere. */
void ax_arch_bulk_plan(ax_bulk_step_t zero[AX_BULK_STEPS], ax_bulk_step_t copy[AX_BULK_STEPS]) {
  const ax_arch_bulk_cpu_t *c = &ax_arch_bulk_cpu;
  zero[0] = copy[0] = (ax_bulk_step_t){0, "libc"};
  if (!c->zen4)
    return;
  /* Margins: min..max (median) over 4 runs of bm_bulk -a 16, two code placements, buffer
   * offsets 0/16/32. 16..64 B: two or four 16-byte moves beat glibc's size dispatch, zero
   * +29..61% (+33%), copy +3..102% (+49%; a 16-byte memcpy takes glibc 2.7 ns, sse2 1.4).
   * 80..256 B: no kernel wins in every run. */
  zero[0] = copy[0] = (ax_bulk_step_t){0, "sse2"};
  zero[1] = copy[1] = (ax_bulk_step_t){80, "libc"};
  /* 272..400 B: past its 8-vector path glibc starts slowly; the 128-byte AVX2 loop wins,
   * zero +12..87% (+22%), copy +20..157% (+40%). From 416 B glibc is level again (-17..+22%). */
  zero[2] = copy[2] = (ax_bulk_step_t){272, "avx2"};
  zero[3] = copy[3] = (ax_bulk_step_t){416, "libc"};
  /* Streaming stores once the bytes touched (the destination, plus the source for a copy)
   * reach 9/8 of the L3: with the region read back after each call (bm_bulk -u, as a
   * program uses the block calloc or realloc gave it), avx2_nt beats glibc from 38 MiB for
   * zero (+2..15%; a tie at 32 MiB) and from 19 MiB for copy (+12..53%); below, ordinary
   * stores leave the block in cache and win by up to 3x. avx512_nt ties with avx2_nt: the
   * narrower one is taken. */
  if (c->l3) {
    zero[4] = (ax_bulk_step_t){c->l3 + c->l3 / 8, "avx2_nt"};
    copy[4] = (ax_bulk_step_t){(c->l3 + c->l3 / 8) / 2, "avx2_nt"};
  }
}
