/* SPDX-License-Identifier: MIT */
/* AArch64: the CPU features the bulk kernels' "supported" column reads, and the measured
 * dispatch plan. The features are cpu_aarch64.c's, decoded once (arch_cpu.h); this file
 * only takes its copy of them. */
#include <stddef.h>

#include "arch_bulk.h"

ax_arch_cpu_t ax_arch_bulk_cpu; /* all zero: only the baseline until detection */

void ax_arch_bulk_detect(void) {
  ax_arch_cpu_t f = *ax_arch_cpu();
  if (!f.dczva) /* prohibited, or a block size the kernel does not take: NEON only */
    f.dczva_block = 0;
  ax_arch_bulk_cpu = f;
  axi_bulk_dczva_block = f.dczva_block;
}

/* ---- the dispatch plan ----------------------------------------------------------------- */

/* No AArch64 hardware measured yet (qemu-user timings say nothing about a core): glibc's
 * memset/memcpy everywhere, until bench/bm_bulk on a real core shows a kernel winning
 * (docs/bulk.md). glibc's own AArch64 memset already zeroes large sizes with DC ZVA. */
void ax_arch_bulk_plan(ax_bulk_step_t zero[AX_BULK_STEPS], ax_bulk_step_t copy[AX_BULK_STEPS]) {
  zero[0] = (ax_bulk_step_t){0, "libc"};
  copy[0] = (ax_bulk_step_t){0, "libc"};
}
