/* SPDX-License-Identifier: MIT */
/* The AArch64 bulk kernels: zero and copy of the allocator's own blocks (calloc, realloc).
 * The dispatcher (src/common/bulk.c), tests/platform/t_bulk.c and bench/bm_bulk.c all expand the
 * one list below, so a kernel is tested and benchmarked the moment it is listed.
 * Measurements behind the dispatch plan: docs/bulk.md. */
#ifndef AX_ARCH_BULK_AARCH64_H
#define AX_ARCH_BULK_AARCH64_H

#include <stddef.h>

/* ---- kernels ----------------------------------------------------------------------- */

/* Every kernel:
 * pre: p, dst, src 16-byte aligned; n a multiple of 16 (0 allowed); [dst, dst+n) and
 *      [src, src+n) do not overlap; the CPU has the kernel's feature (its "supported"
 *      column).
 * post: [p, p+n) is zero, or [dst, dst+n) equals [src, src+n); no byte outside is written.
 *      Allocates nothing, leaves errno alone, any thread. */
#ifndef AX_BULK_DECLARE /* shared with the other backend's arch_bulk.h (see t_bulk.c) */
#define AX_BULK_DECLARE(name, zero, copy, supported)                                               \
  __attribute__((visibility("hidden"))) void zero(void *p, size_t n);                              \
  __attribute__((visibility("hidden"))) void copy(void *dst, const void *src, size_t n);
#endif

/* name   zero                    copy                    supported (after ax_arch_bulk_detect)
 * neon   STP/LDP of q registers, 64 bytes a step (the baseline: ASIMD is in every Linux
 *        AArch64 CPU, and the table's value before init)
 * dczva  DC ZVA for whole blocks of the DCZID_EL0 size, NEON for the head and tail; when
 *        DC ZVA is prohibited (DCZID_EL0.DZP) the kernel is unsupported. It copies like neon. */
#define AX_BULK_KERNELS_AARCH64(X)                                                                 \
  X(neon, axi_bulk_zero_neon, axi_bulk_copy_neon, ax_arch_bulk_has_asimd())                        \
  X(dczva, axi_bulk_zero_dczva, axi_bulk_copy_neon, ax_arch_bulk_has_dczva())

AX_BULK_KERNELS_AARCH64(AX_BULK_DECLARE) /* (copy_neon declared twice: allowed) */

/* Bytes one DC ZVA zeroes (4 << DCZID_EL0.BS), 0 while unknown or prohibited: the dczva
 * kernel then zeroes with NEON alone. Set by ax_arch_bulk_detect (tests set it to exercise
 * the kernel's head and tail logic with several block sizes). */
__attribute__((visibility("hidden"))) extern size_t axi_bulk_dczva_block;

/* tests/platform/t_bulk.c also includes the other backend's header to test that backend's kernels
 * built through SIMDe: then it defines AX_BULK_FOREIGN and wants the list above only. */
#ifndef AX_BULK_FOREIGN

#define AX_ARCH_BULK_KERNELS(X) AX_BULK_KERNELS_AARCH64(X)

/* The kernel the dispatch table holds before ax_arch_bulk_detect ran: correct on every
 * Linux AArch64 CPU. */
#define AX_ARCH_BULK_BASELINE neon

/* ---- CPU features the kernels need (arch_cpu.h, decoded in cpu_aarch64.c) ----------- */

#include "arch_cpu.h"

/* The kernels' features, from arch_cpu.h's list, one accessor each. They read
 * ax_arch_bulk_cpu, a copy of ax_arch_cpu() that is all zero until ax_arch_bulk_detect()
 * ran, so that only the baseline is "supported" before; its dczva_block is 0 unless the
 * dczva flag is set. */
#define AX_ARCH_BULK_FEATURES(X)                                                                   \
  X(asimd)                                                                                         \
  X(dczva)

__attribute__((visibility("hidden"))) extern ax_arch_cpu_t ax_arch_bulk_cpu;

#define AX_BULK_HAS(f)                                                                             \
  static inline int ax_arch_bulk_has_##f(void) { return ax_arch_bulk_cpu.f; }
AX_ARCH_BULK_FEATURES(AX_BULK_HAS)
#undef AX_BULK_HAS

/* Fill ax_arch_bulk_cpu and axi_bulk_dczva_block from ax_arch_cpu() (the auxiliary vector
 * and DCZID_EL0, decoded once).
 * pre: may run before constructors, any number of times; the first call before a second
 * thread exists (it may be the one that decodes, ax_arch_cpu). post: allocates nothing, no
 * stdio, errno unchanged. */
__attribute__((visibility("hidden"))) void ax_arch_bulk_detect(void);

#include "../generic/bulk_plan.h" /* the dispatch plan type, the same for every backend */

#endif /* AX_BULK_FOREIGN */
#endif
