/* SPDX-License-Identifier: MIT */
/* The x86-64 bulk kernels: zero and copy of the allocator's own blocks (calloc, realloc).
 * The dispatcher (src/common/bulk.c), tests/platform/t_bulk.c and bench/bm_bulk.c all expand the
 * one list below, so a kernel is tested and benchmarked the moment it is listed.
 * Measurements behind the dispatch plan: docs/bulk.md. */
#ifndef AX_ARCH_BULK_X86_64_H
#define AX_ARCH_BULK_X86_64_H

#include <stddef.h>

/* ---- kernels ----------------------------------------------------------------------- */

/* Every kernel:
 * pre: p, dst, src 16-byte aligned; n a multiple of 16 (0 allowed); [dst, dst+n) and
 *      [src, src+n) do not overlap; the CPU has the kernel's ISA (its "supported" column).
 * post: [p, p+n) is zero, or [dst, dst+n) equals [src, src+n); no byte outside is written.
 *      Allocates nothing, leaves errno alone, any thread. The _nt kernels end with SFENCE,
 *      so a later release store publishes their data like any other store's. */
#ifndef AX_BULK_DECLARE /* shared with the other backend's arch_bulk.h (see t_bulk.c) */
#define AX_BULK_DECLARE(name, zero, copy, supported)                                               \
  __attribute__((visibility("hidden"))) void zero(void *p, size_t n);                              \
  __attribute__((visibility("hidden"))) void copy(void *dst, const void *src, size_t n);
#endif

/* name       zero                  copy                  supported (after ax_arch_bulk_detect)
 * sse2       16-byte MOVDQA, the x86-64 baseline (and the table's value before init)
 * avx2       32-byte VMOVDQA/VMOVDQU
 * avx2_nt    32-byte VMOVNTDQ streaming stores (bypass the caches) for the aligned body
 * avx512     64-byte VMOVDQA64 zmm (AVX-512 F/BW/VL)
 * avx512_nt  64-byte VMOVNTDQ zmm
 * erms       REP STOSB / REP MOVSB (ERMS; FSRM makes short REP MOVSB fast) */
#define AX_BULK_KERNELS_X86_64(X)                                                                  \
  X(sse2, axi_bulk_zero_sse2, axi_bulk_copy_sse2, 1)                                               \
  X(avx2, axi_bulk_zero_avx2, axi_bulk_copy_avx2, ax_arch_bulk_has_avx2())                         \
  X(avx2_nt, axi_bulk_zero_avx2_nt, axi_bulk_copy_avx2_nt, ax_arch_bulk_has_avx2())                \
  X(avx512, axi_bulk_zero_avx512, axi_bulk_copy_avx512, ax_arch_bulk_has_avx512())                 \
  X(avx512_nt, axi_bulk_zero_avx512_nt, axi_bulk_copy_avx512_nt, ax_arch_bulk_has_avx512())        \
  X(erms, axi_bulk_zero_erms, axi_bulk_copy_erms, ax_arch_bulk_has_erms())

AX_BULK_KERNELS_X86_64(AX_BULK_DECLARE)

/* tests/platform/t_bulk.c also includes the other backend's header to test that backend's kernels
 * built through SIMDe: then it defines AX_BULK_FOREIGN and wants the list above only. */
#ifndef AX_BULK_FOREIGN

#define AX_ARCH_BULK_KERNELS(X) AX_BULK_KERNELS_X86_64(X)

/* The kernel the dispatch table holds before ax_arch_bulk_detect ran: correct on every
 * x86-64 CPU. */
#define AX_ARCH_BULK_BASELINE sse2

/* ---- CPU features the kernels need (arch_cpu.h, decoded in cpu_x86_64.c) ------------ */

#include "arch_cpu.h"

/* The kernels' features are all of arch_cpu.h's list, one accessor each. They read
 * ax_arch_bulk_cpu, a copy of ax_arch_cpu() that is all zero until ax_arch_bulk_detect()
 * ran, so that only the baseline is "supported" before. */
#define AX_ARCH_BULK_FEATURES(X) AX_ARCH_CPU_FEATURES(X)

__attribute__((visibility("hidden"))) extern ax_arch_cpu_t ax_arch_bulk_cpu;

#define AX_BULK_HAS(f)                                                                             \
  static inline int ax_arch_bulk_has_##f(void) { return ax_arch_bulk_cpu.f; }
AX_ARCH_BULK_FEATURES(AX_BULK_HAS)
#undef AX_BULK_HAS

/* Fill ax_arch_bulk_cpu from ax_arch_cpu() (CPUID/XGETBV, decoded once).
 * pre: may run before constructors, any number of times; the first call before a second
 * thread exists (it may be the one that decodes, ax_arch_cpu). post: allocates nothing, no
 * stdio, errno unchanged. */
__attribute__((visibility("hidden"))) void ax_arch_bulk_detect(void);

#include "../generic/bulk_plan.h" /* the dispatch plan type, the same for every backend */

#endif /* AX_BULK_FOREIGN */
#endif
