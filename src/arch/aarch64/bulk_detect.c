/* AArch64: the CPU features the bulk kernels need, and the measured dispatch plan.
 * The DC ZVA block size comes from cpu_aarch64.c; the rest is the kernels' own. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/auxv.h>

#include "arch.h"
#include "arch_bulk.h"

#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif

ax_arch_bulk_cpu_t ax_arch_bulk_cpu; /* all zero: only the baseline until detection */

void ax_arch_bulk_detect(void) {
  ax_arch_bulk_cpu_t f = {0};
  int saved = errno; /* getauxval sets ENOENT for a missing entry */
  unsigned long hw = getauxval(AT_HWCAP);
  errno = saved;
  f.asimd = (hw & HWCAP_ASIMD) != 0;
  size_t block = ax_arch_dczva_size(); /* from DCZID_EL0, read by ax_arch_cpu_detect() */
  if (block >= 16 && block <= 2048) {
    f.dczva = 1;
    f.dczva_block = block;
  }
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
