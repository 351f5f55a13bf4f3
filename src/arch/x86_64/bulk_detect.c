/* SPDX-License-Identifier: MIT */
/* x86-64: the CPU features the bulk kernels' "supported" column reads, and the measured
 * dispatch plan. The features are cpu_x86_64.c's, decoded once (arch_cpu.h); this file
 * only takes its copy of them. */
#include <stddef.h>

#include "arch_bulk.h"

ax_arch_cpu_t ax_arch_bulk_cpu; /* all zero: only the baseline until detection */

void ax_arch_bulk_detect(void) { ax_arch_bulk_cpu = *ax_arch_cpu(); }

/* ---- the dispatch plan: from bench/bm_bulk, tables in docs/bulk.md ------------------- */

/* Measured on Zen 4 (EPYC 9xx4, family 0x19 model 0x11) against Debian 12's glibc 2.36
 * (__memset/__memmove_evex_unaligned_erms; its non-temporal threshold there is 240 MiB and
 * its memset never streams). Every range below beat glibc in every run, by the margins
 * given; everywhere else glibc was as fast or faster, so it keeps those sizes. Other CPUs
 * were not measured: they keep glibc everywhere. */
void ax_arch_bulk_plan(ax_bulk_step_t zero[AX_BULK_STEPS], ax_bulk_step_t copy[AX_BULK_STEPS]) {
  const ax_arch_cpu_t *c = &ax_arch_bulk_cpu;
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
