/* SPDX-License-Identifier: MIT */
/* AArch64 CPU features, decoded in one place: cpu_aarch64.c reads the auxiliary vector
 * (AT_HWCAP, AT_HWCAP2) and DCZID_EL0 once into the struct below, and every user reads
 * that struct: the description and the atomics flag (ax_arch_cpu_detect, arch.h), memory
 * tagging (ax_arch_mte_enable) and the bulk kernels' detection (bulk_detect.c). */
#ifndef AX_AARCH64_ARCH_CPU_H
#define AX_AARCH64_ARCH_CPU_H

#include <stddef.h>

/* One flag per feature. */
#define AX_ARCH_CPU_FEATURES(X)                                                                    \
  X(asimd) /* AT_HWCAP & HWCAP_ASIMD */                                                            \
  X(lse)   /* AT_HWCAP & HWCAP_ATOMICS: the ARMv8.1 atomics */                                     \
  X(sve)   /* AT_HWCAP & HWCAP_SVE */                                                              \
  X(mte)   /* AT_HWCAP2 & HWCAP2_MTE */                                                            \
  X(dczva) /* DCZID_EL0.DZP clear and a block size of 16 B .. 2 KiB (the bulk kernel's range) */

typedef struct ax_arch_cpu {
#define AX_CPU_FLAG(f) unsigned char f;
  AX_ARCH_CPU_FEATURES(AX_CPU_FLAG)
#undef AX_CPU_FLAG
  size_t dczva_block; /* bytes one DC ZVA zeroes (4 << DCZID_EL0.BS), 0 when prohibited (DZP) */
} ax_arch_cpu_t;

/* The CPU's features, decoded on the first call; every later call returns the same struct.
 * pre: the first call runs before a second thread exists (process init; may be before
 * constructors). post: allocates nothing, no stdio, errno unchanged. */
__attribute__((visibility("hidden"))) const ax_arch_cpu_t *ax_arch_cpu(void);

#endif
